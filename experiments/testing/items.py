"""Registered experiments as pytest items: one collector per source, one item per experiment.

An item runs its experiment (short mode) while it is set up, so a crash, a refused input
or a malformed return is an *error* of the test, never a pass; the test then passes or
fails by the experiment's verdict.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from crossdyn.experiments.core.errors import CrossdynError, ParameterError

from . import runner

# The collector and item classes are the plugin's plumbing (pytest documents their interface); users meet
# the two outcome exceptions.
__all__ = ["ExperimentError", "ExperimentFailed"]

# pytest's public name for its failure exception is an attribute of pytest.fail, which a type checker cannot
# take as a base class; it is the class _pytest.outcomes.Failed (pytest declares it so), named for the checker only.
if TYPE_CHECKING:
    from _pytest.outcomes import Failed as _Failed
else:
    _Failed = pytest.fail.Exception


class ExperimentError(_Failed):
    """The experiment crashed, refused its input or returned something that is not metrics (raised at set-up,
    so pytest reports an error, without a traceback into crossdyn)."""


# As pytest does for its own outcome exceptions: summaries read "ExperimentError: ...", not the module path.
ExperimentError.__module__ = "builtins"


class ExperimentFailed(AssertionError):
    """The experiment ran and missed its expected outcome."""


def crossdyn_experiment(tmp_path_factory):
    """An experiment item's test function: it names the fixtures the item uses (the item does the work)."""


class ExperimentSource(pytest.Collector):
    """The experiments one file or module registers (``--crossdyn-from``) or a test module declares.

    ``sources``, ``seed`` and ``check`` as :func:`crossdyn.testing.experiment_tests`'s; ``base``:
    the folder relative paths start from; ``runs``: the session's :class:`~crossdyn.testing.plugin.State`,
    which runs the experiments.
    """

    def __init__(self, *, sources: tuple[str, ...], base: Path, runs: Any, seed: int | None = None,
                 check: Callable | None = None, **kw):
        super().__init__(**kw)
        self.runs = runs
        self.given = tuple(sources)
        self.base = Path(base)
        self.sources: tuple[str, ...] = ()
        self.seed = seed
        self.check = check

    def collect(self):
        # Resolved now, not when the collector was made: test modules collected before it may have imported a file.
        self.sources = tuple(resolve(source, self.base) for source in self.given)
        for given, source in zip(self.given, self.sources, strict=False):
            if runner.is_file(source) and not Path(source).is_file():
                raise ParameterError(f"no experiment file {given} (looked for {source}; give a .py file or an "
                                     f"importable module name)")
        for exp in runner.experiments_from(self.sources, timeout=self.config.getoption("crossdyn_timeout")):
            yield ExperimentItem.from_parent(self, name=exp.name, callobj=crossdyn_experiment, experiment=exp)

    def repr_failure(self, excinfo):
        """A refused file or module as one line (no traceback into crossdyn); anything else as pytest shows it."""
        if isinstance(excinfo.value, CrossdynError):  # a user's file or module: one line, no traceback into crossdyn
            return f"crossdyn: {excinfo.value}"
        return super().repr_failure(excinfo)


class ExperimentItem(pytest.Function):
    """One registered experiment as a test: its registry ``experiment``, and once set up ``ran``
    (:class:`~crossdyn.testing.runner.Ran`)."""

    def __init__(self, *, experiment, **kw):
        super().__init__(**kw)
        self.experiment = experiment
        self.ran: runner.Ran | None = None

    @property
    def source(self) -> ExperimentSource:
        source = self.getparent(ExperimentSource)
        if source is None:  # items are made only by ExperimentSource.collect
            raise RuntimeError(f"experiment item {self.name!r} has no ExperimentSource parent")
        return source

    def setup(self) -> None:
        super().setup()
        self.ran = self.source.runs.result(self)
        problem = self.ran.error or _malformed(self.ran.metrics)
        if problem and not self.ran.error:  # the runner took it for metrics: the summary must not show a pass
            self.ran.row = {**self.ran.row, "passed": False, "error": problem}
        if problem:
            traceback = self.ran.out_dir / "error.txt"
            where = f"\n  traceback: {traceback}" if traceback.is_file() else ""
            named = f"experiment {self.name!r}"
            named = problem if problem.startswith(named) else f"{named}: {problem}"
            raise ExperimentError(f"{named}{where}\n  output: {self.ran.out_dir}", pytrace=False)

    def runtest(self) -> None:
        ran = self.ran
        if ran is None:  # pytest sets an item up before it runs it
            raise RuntimeError(f"experiment item {self.name!r} run before it was set up")
        if ran.metrics["passed"] is not True:
            raise ExperimentFailed(f"experiment {self.name!r} missed its expected outcome\n"
                                   f"  expected: {ran.expected}\n  measured: {ran.measured}\n"
                                   f"  output:   {ran.out_dir}")
        if self.source.check is not None:
            self.source.check(self.name, ran.metrics, ran.out_dir)

    def repr_failure(self, excinfo, style=None):
        """A missed expectation as its expected and measured lines; a crash as pytest shows it."""
        if isinstance(excinfo.value, ExperimentFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        """Where the experiment's function is defined (failure headers name the experiment)."""
        fn = inspect.unwrap(self.experiment.run)
        try:
            path, line = inspect.getsourcefile(fn), fn.__code__.co_firstlineno - 1
        except (TypeError, AttributeError):
            path, line = None, None
        return (Path(path) if path else self.path), line, f"experiment {self.name}"


def _malformed(metrics: dict) -> str | None:
    """What is wrong with an experiment's returned metrics, or None (the runner already required both keys)."""
    passed, measured = metrics.get("passed"), metrics.get("measured")
    if type(passed) is not bool:
        return f"returned passed={passed!r} ({type(passed).__name__}); expected True or False"
    if not isinstance(measured, str) or not measured.strip():
        return f"returned measured={measured!r}; expected the headline figure as a non-empty string"
    return None


def resolve(source: str, base: Path) -> str:
    """A source as the registry gets it: a file as an absolute path (from ``base``), a module name as is;
    a file some module already imported by that module's name, so its experiments register once."""
    if not runner.is_file(source):
        return source
    path = Path(source).expanduser()
    path = (path if path.is_absolute() else base / path).resolve()

    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and name != "__main__" and os.path.realpath(file) == str(path):
            return name
    return str(path)
