"""crossdyn inside your own test suite: assertion helpers and experiments as tests.

Assertion helpers, one per check of the short API, each raising
``AssertionError`` with the check's diagnosis when it fails and returning the
report when it passes; they work under any test runner, or none::

    from crossdyn.testing import assert_derivation

    def test_my_arm_dynamics():
        assert_derivation(my_inverse_dynamics, "my_arm.xml", samples=200)

``assert_derivation(fn, model, **options)`` runs
:func:`crossdyn.experiments.check_derivation` with the same arguments; a
mismatch reads like the report's diagnosis and explanation::

    AssertionError: mass matrix off by up to 1.131e-03 on entry M[0,0] (q1, q1) (a constant offset); ...

A helper exists for every check this crossdyn has (``assert_jacobian`` when
``crossdyn.experiments.check_jacobian`` exists, and so on: see
:data:`HELPERS`); asking for one whose check is missing raises
``AttributeError`` naming the check.

With pytest, crossdyn's plugin (:mod:`crossdyn.testing.plugin`, registered on
install) adds the ``crossdyn_baseline`` fixture and runs registered
experiments as test items (``pytest --crossdyn-from FILE_OR_MODULE``, or
:func:`experiment_tests` in a test module).

Importing this package loads neither MuJoCo nor NumPy: the checks are imported
when a helper is first called.
"""

from __future__ import annotations

from collections.abc import Callable

import crossdyn.experiments as _api

# helper name -> the short-API check it asserts (crossdyn.experiments.<check>).
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
    """What an assertion helper says when ``report`` did not pass: its diagnosis, then what the error is.

    Args:
      report: a check's report: ``.diagnosis`` (one line: the term, joint or
        entry and by how much), ``.explanation`` (sentences, a list or one
        string; may be empty) and, for ``check_derivation``'s report,
        ``.parameters`` (the bodies' inertial parameters the error is a change of).
    """
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
    """``run(*args, **options)`` in a forked child process: its report, or its exception, comes back.

    The user's function runs there, so one that ends its process (``os._exit(0)``, a
    crash) ends the child, never the test run: with pytest, a suite whose process
    ended with exit status 0 would read as passed, hiding every earlier failure.
    Forking copies the function as it is (a lambda, a closure), nothing is pickled
    but the report (:func:`crossdyn.experiments.core.isolation.forked`).

    Raises:
      DerivationError: the child ended without a report (how it ended is named).
      Whatever the check raised in the child.
    """
    from crossdyn.experiments.core import isolation

    done = isolation.forked(run, *args, **options)
    if done.status == isolation.CRASHED:
        from crossdyn.experiments.core.errors import DerivationError

        raise DerivationError(f"{check}: the process checking the function ended ({done.how}) before the check "
                              "finished: the function ends its process (os._exit, exit in C, a crash)")
    if done.status == isolation.RAISED:  # a result that cannot be sent back: a RemoteError that says so
        raise done.error  # type: ignore[misc]
    return done.value


def _helper(helper: str, check: str) -> Callable:
    """``helper(*args, **options)``: run ``crossdyn.experiments.<check>``; AssertionError unless it passed."""
    run = getattr(_api, check)
    from crossdyn.experiments.core.errors import CrossdynError

    def assert_check(*args, **options):
        __tracebackhide__ = True  # pytest shows the caller's line, not this frame
        try:
            report = _in_child(check, run, args, options)
        except CrossdynError as exc:  # bad input: the same one-line error, raised from here (no inner frames)
            raise type(exc)(str(exc)) from None
        if not _passed(report, check):
            raise AssertionError(failure_message(report))
        return report

    assert_check.__name__ = assert_check.__qualname__ = helper
    assert_check.__doc__ = (f"Run ``crossdyn.experiments.{check}(*args, **options)`` and return its report.\n\n"
                            f"Raises:\n  AssertionError: the check did not pass; the message is its diagnosis and "
                            f"explanation.\n  CrossdynError: bad input (as {check} raises it).\n\n"
                            f"{check}'s own documentation:\n\n{run.__doc__ or ''}")
    return assert_check


def __getattr__(name: str):
    if name in HELPERS:
        check = HELPERS[name]
        if check not in dir(_api):
            raise AttributeError(f"crossdyn.testing.{name} needs crossdyn.experiments.{check}, "
                                 f"which this version of crossdyn does not have")
        value = _helper(name, check)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module 'crossdyn.testing' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class ExperimentTests:
    """Registered experiments to collect as test items of the test module that holds this object.

    Made by :func:`experiment_tests`; crossdyn's pytest plugin turns it into one
    item per experiment.

    Attributes:
      sources: files (``.py``) or module names whose experiments to collect.
      seed: the seed every experiment gets (None: the session's ``--crossdyn-seed``, default 0).
      check: ``check(name, metrics, out_dir)``, called after an experiment met
        its expected outcome; it raises ``AssertionError`` to fail the item.
    """

    def __init__(self, sources: tuple[str, ...], seed: int | None = None, check: Callable | None = None):
        self.sources = sources
        self.seed = seed
        self.check = check

    def __repr__(self) -> str:
        return f"experiment_tests({', '.join(map(repr, self.sources))}, seed={self.seed})"


def experiment_tests(*sources: str, seed: int | None = None, check: Callable | None = None) -> ExperimentTests:
    """Collect every experiment ``sources`` register as a test item of this test module.

    Assign the result to any name in a test module::

        experiments = experiment_tests("ci/experiments.py")

    and pytest collects ``tests/test_mine.py::experiments::pendulum-pd`` (``-k
    pendulum`` selects it), run in short mode (``ctx.short`` is True) as
    ``pytest --crossdyn-from ci/experiments.py`` would.  A relative file path
    starts from pytest's rootdir (the folder of pytest.ini or pyproject.toml).

    Args:
      sources: ``.py`` files or importable module names, as ``crossdyn run --from`` takes them.
      seed: the seed of every experiment's random draws, 0 to 2**32 - 1 (default:
        ``--crossdyn-seed``, else 0).

    Raises:
      TypeError: no sources, or one that is not a non-empty string.
      ParameterError: a seed out of range, or not a whole number.
      check: optional ``check(name, metrics, out_dir)`` run after an experiment
        met its expected outcome (``metrics``: its metrics.json content,
        ``out_dir``: its folder of plots); raise ``AssertionError`` to fail it.
    """
    if not sources or not all(isinstance(s, str) and s for s in sources):
        raise TypeError(f"experiment_tests() takes one or more file paths or module names, got {sources!r}")
    if seed is not None:
        from crossdyn.experiments.core.validate import seed as validate_seed

        seed = validate_seed(seed)
    return ExperimentTests(tuple(sources), seed=seed, check=check)
