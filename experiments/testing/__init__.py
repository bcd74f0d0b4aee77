"""crossdyn inside your own test suite: assertion helpers and experiments as tests.

One assertion helper per check (:data:`HELPERS`): ``assert_derivation(fn, "my_arm.xml",
samples=200)`` raises ``AssertionError`` with the check's diagnosis when it fails and
returns the report when it passes, under any test runner.  With pytest, crossdyn's plugin
(:mod:`crossdyn.testing.plugin`) adds the ``crossdyn_baseline`` fixture and runs registered
experiments as test items.  Importing this package loads neither MuJoCo nor NumPy.
"""

from __future__ import annotations

from collections.abc import Callable

import crossdyn as _api

# crossdyn's machinery (crossdyn.experiments.core) is imported inside the functions that use it: the
# pytest plugin imports this package in every pytest run, and a suite that uses none of crossdyn
# must import none of it.

# helper name -> the front door's check it asserts (crossdyn.<check>).
HELPERS: dict[str, str] = {
    "assert_derivation": "check_derivation",
    "assert_kinematics": "check_kinematics",
    "assert_jacobian": "check_jacobian",
    "assert_mass_matrix": "check_mass_matrix",
    "assert_bias": "check_bias",
    "assert_energy": "check_energy",
    "assert_forward_dynamics": "check_forward_dynamics",
    "assert_linearization": "check_linearization",
    "assert_model_matches_log": "check_model",
}


def _available() -> list[str]:
    """The helpers whose check this crossdyn has (read from the short API's names; nothing is imported)."""
    return [helper for helper, check in HELPERS.items() if check in dir(_api)]


__all__ = ["HELPERS", "ExperimentTests", "experiment_tests", "failure_message", *_available()]


def failure_message(report) -> str:
    """What an assertion helper says when ``report`` did not pass: its ``diagnosis``, then its
    ``explanation`` (sentences, a list or one string) and, for ``check_derivation``'s, its ``parameters``."""
    lines = [str(report.diagnosis)]
    for name in ("explanation", "parameters"):
        sentences = getattr(report, name, None) or []
        lines += [sentences] if isinstance(sentences, str) else [str(line) for line in sentences]
    return "\n".join(lines)


def _passed(report, check: str) -> bool:
    """``report.passed`` as a bool, refusing anything else (a truthy string must never read as a pass)."""
    passed = getattr(report, "passed", None)
    if type(passed).__name__ not in ("bool", "bool_"):  # bool or numpy.bool_
        raise TypeError(f"{check} returned {type(report).__name__} whose .passed is {passed!r}; expected True or False")
    return bool(passed)


def _in_child(check: str, run: Callable, args: tuple, options: dict):
    """``run(*args, **options)`` in a forked child: its report, or its exception, comes back; a function that
    ends its process ends the child (a DerivationError), never the test run, which could read as passed."""
    from crossdyn.experiments.core import errors, isolation  # late: see the note under the imports

    done = isolation.forked(run, *args, **options)
    if done.status == isolation.CRASHED:
        raise errors.DerivationError(f"{check}: the process checking the function ended ({done.how}) before the check "
                              "finished: the function ends its process (os._exit, exit in C, a crash)")
    if done.status == isolation.RAISED:  # a result that cannot be sent back: a RemoteError that says so
        raise done.error  # type: ignore[misc]
    return done.value


def _helper(helper: str, check: str) -> Callable:
    """``helper(*args, **options)``: run ``crossdyn.<check>``; AssertionError unless it passed."""
    run = getattr(_api, check)

    def assert_check(*args, **options):
        __tracebackhide__ = True  # pytest shows the caller's line, not this frame
        from crossdyn.experiments.core.errors import CrossdynError  # late: see the note under the imports

        try:
            report = _in_child(check, run, args, options)
        except CrossdynError as exc:  # bad input: the same one-line error, raised from here (no inner frames)
            raise type(exc)(str(exc)) from None
        if not _passed(report, check):
            raise AssertionError(failure_message(report))
        return report

    assert_check.__name__ = assert_check.__qualname__ = helper
    assert_check.__doc__ = (f"Run ``crossdyn.{check}(*args, **options)`` and return its report.\n\n"
                            f"Raises:\n  AssertionError: the check did not pass; the message is its diagnosis and "
                            f"explanation.\n  CrossdynError: bad input (as {check} raises it).\n\n"
                            f"{check}'s own documentation:\n\n{run.__doc__ or ''}")
    return assert_check


def __getattr__(name: str):
    if name in HELPERS:
        check = HELPERS[name]
        if check not in dir(_api):
            raise AttributeError(f"crossdyn.testing.{name} needs crossdyn.{check}, "
                                 f"which this version of crossdyn does not have")
        value = _helper(name, check)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module 'crossdyn.testing' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class ExperimentTests:
    """Registered experiments to collect as test items of the test module that holds this object
    (:func:`experiment_tests`); ``sources``, ``seed`` and ``check`` as that function's."""

    def __init__(self, sources: tuple[str, ...], seed: int | None = None, check: Callable | None = None):
        self.sources = sources
        self.seed = seed
        self.check = check

    def __repr__(self) -> str:
        return f"experiment_tests({', '.join(map(repr, self.sources))}, seed={self.seed})"


def experiment_tests(*sources: str, seed: int | None = None, check: Callable | None = None) -> ExperimentTests:
    """Collect every experiment ``sources`` register as a test item of this test module.

    Assign the result to any name in a test module, ``experiments = experiment_tests("ci/experiments.py")``,
    and pytest collects ``tests/test_mine.py::experiments::pendulum-pd``, run in short mode.

    Args:
      sources: ``.py`` files (relative to pytest's rootdir) or module names, as ``crossdyn run --from`` takes them.
      seed: the experiments' seed, 0 to 2**32 - 1 (default: ``--crossdyn-seed``, else 0).
      check: optional ``check(name, metrics, out_dir)`` run after an experiment met its
        expected outcome (its metrics.json content, its folder); raise ``AssertionError`` to fail it.

    Raises:
      TypeError: no sources, or one that is not a non-empty string.
      ParameterError: a seed out of range, or not a whole number.
    """
    if not sources or not all(isinstance(s, str) and s for s in sources):
        raise TypeError(f"experiment_tests() takes one or more file paths or module names, got {sources!r}")
    if seed is not None:
        from crossdyn.experiments.core.validate import seed as validate_seed  # late: see the note under the imports

        seed = validate_seed(seed)
    return ExperimentTests(tuple(sources), seed=seed, check=check)
