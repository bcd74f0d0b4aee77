"""crossdyn's pytest plugin, registered on install (entry point ``pytest11``, name ``crossdyn``).

It adds the ``crossdyn_baseline`` fixture and collects registered experiments as test
items (``--crossdyn-from``, or :func:`crossdyn.testing.experiment_tests`).  A suite that
uses none of this sees no difference: nothing is imported and no collection hook added
until asked for.  ``-p no:crossdyn`` disables it.
"""

from __future__ import annotations

import os
import re
import shlex
import time
from pathlib import Path

import pytest

from . import ExperimentTests

# crossdyn's machinery (crossdyn.experiments.core; crossdyn.testing's runner, items and
# baseline_fixture: NumPy, matplotlib, the registry, about half a second) is imported where
# it is first used, so a suite that uses none of it imports none of it.

__all__ = ["State", "state", "crossdyn_baseline"]

_STATE = pytest.StashKey["State"]()
# Per test: the baseline files --crossdyn-regen wrote ("path (what changed)").
WRITTEN = pytest.StashKey[list]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("crossdyn", "crossdyn: experiments as tests, metric baselines")
    group.addoption("--crossdyn-from", action="append", default=[], metavar="FILE_OR_MODULE",
                    help="collect every experiment this .py file or module registers as a test item named after "
                         "it (repeatable); it passes or fails by the experiment's verdict (short mode)")
    group.addoption("--crossdyn-out", default=None, metavar="DIR",
                    help="write the experiments' metrics and plots to DIR/NAME/, with DIR/summary.md and "
                         "DIR/index.html (default: pytest's temporary folder)")
    group.addoption("--crossdyn-workers", type=int, default=1, metavar="K",
                    help="run the collected experiments in K processes (default 1; under pytest-xdist its "
                         "workers do this instead)")
    group.addoption("--crossdyn-seed", type=int, default=0, metavar="S",
                    help="seed of the experiments' random draws (default 0)")
    group.addoption("--crossdyn-timeout", type=float, default=None, metavar="SECONDS",
                    help="each experiment's time limit: one that runs longer is stopped and its item errors as "
                         "'timed out' (default: none)")
    group.addoption("--crossdyn-regen", action="store_true", default=False,
                    help="write (or rewrite) the crossdyn_baseline files instead of comparing with them")


class State:
    """The session's options and the experiments already run (by name and seed)."""

    def __init__(self, config: pytest.Config):
        self.config = config
        out = config.getoption("crossdyn_out")
        self.out = (Path(config.invocation_params.dir) / Path(out).expanduser()) if out else None
        self.workers = config.getoption("crossdyn_workers")
        self.seed = config.getoption("crossdyn_seed")
        self.timeout = config.getoption("crossdyn_timeout")
        self.regen = config.getoption("crossdyn_regen")
        self.worker = hasattr(config, "workerinput")  # a pytest-xdist worker process
        self.command = shlex.join(["pytest", *config.invocation_params.args])
        self.started = time.time()
        self.done: dict[tuple[str, int], object] = {}  # (name, seed) -> runner.Ran
        self.failed: dict[tuple[str, int], str] = {}  # (name, seed) -> why its batch could not run
        self.rows: dict[str, dict] = {}  # experiment name -> summary row, for --crossdyn-out's summary
        self.written: list[str] = []
        self.summary_error: str | None = None

    def seed_of(self, item) -> int:
        return item.source.seed if item.source.seed is not None else self.seed

    def result(self, item):
        """The :class:`~crossdyn.testing.runner.Ran` of an experiment item, running it (or its batch) first."""
        __tracebackhide__ = True
        from crossdyn.experiments.core.errors import CrossdynError  # late: see the note under the imports

        from . import items, runner  # late: as above

        seed = self.seed_of(item)
        key = (item.name, seed)
        if key not in self.done and key not in self.failed:
            if self.workers > 1 and not self.worker:  # the first item runs every selected one not yet run
                batch = {}
                for other in item.session.items:
                    other_key = (other.name, seed) if isinstance(other, items.ExperimentItem) else None
                    if (other_key and self.seed_of(other) == seed and other_key not in self.done
                            and other_key not in self.failed):
                        batch.setdefault(other.name, other)
                batch.setdefault(item.name, item)
                out = self.out or item.funcargs["tmp_path_factory"].mktemp("crossdyn")
            else:
                batch = {item.name: item}
                out = self.out or item.funcargs["tmp_path_factory"].mktemp(_folder_name(item.name))
            sources = tuple(dict.fromkeys(s for i in batch.values() for s in i.source.sources))
            try:
                ran = runner.run_short([i.experiment for i in batch.values()], out, seed=seed,
                                       workers=min(self.workers, len(batch)), sources=sources, command=self.command,
                                       timeout=self.timeout)
            except CrossdynError as exc:
                self.failed.update({(name, seed): str(exc) for name in batch})
            else:
                self.done.update({(name, seed): r for name, r in ran.items()})
        if key in self.failed:
            raise items.ExperimentError(f"experiment {item.name!r} could not be run: {self.failed[key]}", pytrace=False)
        return self.done[key]


def state(config: pytest.Config) -> State:
    """The session's :class:`State`."""
    return config.stash[_STATE]


def _folder_name(name: str) -> str:
    """A temporary folder name for an experiment (as pytest's tmp_path shortens test names)."""
    return re.sub(r"[\W]", "_", name)[:30] or "experiment"


def pytest_configure(config: pytest.Config) -> None:
    workers = config.getoption("crossdyn_workers")
    if workers < 1:
        raise pytest.UsageError(f"--crossdyn-workers {workers}: expected 1 or more")
    seed = config.getoption("crossdyn_seed")
    if seed != 0:  # the default needs no check (a suite not using crossdyn imports none of it)
        from crossdyn.experiments.core.errors import ParameterError  # late: see the note under the imports
        from crossdyn.experiments.core.validate import seed as validate_seed  # late: as above

        try:
            validate_seed(seed, "--crossdyn-seed")
        except ParameterError as exc:
            raise pytest.UsageError(str(exc)) from None
    timeout = config.getoption("crossdyn_timeout")
    if timeout is not None and not 0 < timeout < float("inf"):
        raise pytest.UsageError(f"--crossdyn-timeout {timeout}: expected a positive number of seconds")
    config.stash[_STATE] = st = State(config)
    config.pluginmanager.register(_Reports(st), "crossdyn-reports")
    if st.out is not None and not st.worker:
        try:
            st.out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise pytest.UsageError(f"--crossdyn-out {config.getoption('crossdyn_out')}: cannot create it: "
                                    f"{exc.strerror or exc}") from None
    if workers > 1 and getattr(config.option, "numprocesses", None) and not st.worker:
        config.issue_config_time_warning(pytest.PytestConfigWarning(
            "--crossdyn-workers is ignored under pytest-xdist (-n): its workers run the experiments in parallel"),
            stacklevel=2)
    sources = list(dict.fromkeys(config.getoption("crossdyn_from")))
    if sources:
        from . import runner  # late: see the note under the imports

        base = Path(config.invocation_params.dir)
        for source in sources:
            if runner.is_file(source) and not (base / Path(source).expanduser()).is_file():
                raise pytest.UsageError(f"--crossdyn-from {source}: no such file (give a .py file or an importable "
                                        f"module name)")
        config.pluginmanager.register(_FromOption(sources, base), "crossdyn-from")


class _FromOption:
    """Adds one collector per ``--crossdyn-from`` source to the session's (registered only with the option)."""

    def __init__(self, sources: list[str], base: Path):
        self.sources = sources
        self.base = base

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector):
        report = yield
        if isinstance(collector, pytest.Session) and report.passed:
            report.result.extend(self._collectors(collector))
        return report

    def _collectors(self, session: pytest.Session) -> list:
        from . import items, runner  # late: see the note under the imports

        collectors = []
        for source in self.sources:
            kw = {}
            if runner.is_file(source):
                path = (self.base / Path(source).expanduser()).resolve()
                try:
                    nodeid = Path(os.path.relpath(path, session.config.rootpath)).as_posix()
                except ValueError:  # another drive
                    nodeid = path.as_posix()
                kw["path"] = path
            else:
                nodeid = source
            collectors.append(items.ExperimentSource.from_parent(
                session, name=nodeid, nodeid=nodeid, sources=(source,), runs=state(session.config), base=self.base,
                seed=None, **kw))
        return collectors


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector, name, obj):
    """``NAME = experiment_tests(...)`` in a test module: its experiments, as items under ``NAME``."""
    if isinstance(obj, ExperimentTests):
        from . import items  # late: see the note under the imports

        return items.ExperimentSource.from_parent(collector, name=name, sources=obj.sources,
                                                  base=collector.config.rootpath, runs=state(collector.config),
                                                  seed=obj.seed, check=obj.check)
    return None


@pytest.fixture
def crossdyn_baseline(request: pytest.FixtureRequest):
    """Compare this test's metrics with ``tests/test_x/test_name.json``: ``crossdyn_baseline.check(metrics)``.

    A missing file fails the test and says how to write it (``pytest --crossdyn-regen``);
    so does a number beyond its tolerance, a changed boolean or string, a new or a
    missing metric, each named with the stored and new value.
    """
    from .baseline_fixture import Baseline  # late: see the note under the imports

    return Baseline(request.node, regen=request.config.getoption("crossdyn_regen"), root=request.config.rootpath,
                    written=request.node.stash.setdefault(WRITTEN, []))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Carry what the controller reports (summary rows, baselines written) on the test report, for pytest-xdist."""
    report = yield
    ran = getattr(item, "ran", None)
    if call.when == "setup" and ran is not None and hasattr(ran, "row"):
        report.crossdyn_row = ran.row
    if call.when == "call" and item.stash.get(WRITTEN, None):
        report.crossdyn_written = list(item.stash[WRITTEN])
    return report


class _Reports:
    """The controller's side: summary rows and baselines written, from every test report (xdist workers' too)."""

    def __init__(self, st: State):
        self.st = st

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        row = getattr(report, "crossdyn_row", None)
        if row is not None:
            self.st.rows[row["name"]] = row
        self.st.written += getattr(report, "crossdyn_written", None) or []

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        st = self.st
        if st.worker or st.out is None or not st.rows:
            return
        from . import runner  # late: see the note under the imports

        try:
            runner.write_summary(st.out, list(st.rows.values()), seed=st.seed, command=st.command, started=st.started)
        except Exception as exc:  # a summary that cannot be written must not hide the tests' own results
            st.summary_error = f"{type(exc).__name__}: {exc}"

    def pytest_terminal_summary(self, terminalreporter) -> None:
        st = self.st
        if not (st.written or st.summary_error):
            return
        terminalreporter.section("crossdyn")
        for line in st.written:
            terminalreporter.write_line(f"wrote baseline {line}")
        if st.summary_error:
            terminalreporter.write_line(f"could not write the summary in {st.out}: {st.summary_error}", red=True)
