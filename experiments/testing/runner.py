"""The plugin's only contact with crossdyn's experiment runner (:mod:`crossdyn.experiments.core.runner`),
so a change to how experiments run is taken up here and nowhere else in :mod:`crossdyn.testing`."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from crossdyn.experiments.core.files import write_json, write_text
from crossdyn.experiments.core.html_report import write_report
from crossdyn.experiments.core.registry import experiments, unloaded
from crossdyn.experiments.core.runner import (
    Outcome,
    pool_with_sources_imported,
    run_experiments,
    summary_table,
)

__all__ = ["Ran", "run_short", "write_summary", "experiments_from", "is_file"]


def is_file(source: str) -> bool:
    """Whether a ``--from`` source names a file (else a module), by the rule ``crossdyn run --from`` uses."""
    return source.endswith(".py") or "/" in source or "\\" in source


@dataclass
class Ran:
    """One experiment's run, as a pytest item judges it: its ``name`` and ``out_dir``, the ``expected`` outcome
    and ``measured`` figure, its ``metrics`` (``{}`` if none), the one-line ``error`` of a crash or a refused
    input (else None) and its summary ``row``."""

    name: str
    out_dir: Path
    expected: str
    measured: str
    metrics: dict
    error: str | None
    row: dict


def run_short(experiments: list, out: Path, *, seed: int, workers: int, sources: tuple[str, ...], command: str,
              timeout: float | None = None) -> dict[str, Ran]:
    """Run registered experiments (``Experiment`` objects) in short mode, as ``crossdyn run --short --out OUT``
    would, in ``workers`` processes, each into ``out/NAME/``; ``sources`` are the users' files and modules they
    come from, ``command`` what index.html shows, ``timeout`` each one's limit, s.  One :class:`Ran` per name."""
    outcomes = run_experiments(list(experiments), Path(out), short=True, seed=seed, workers=workers,
                               sources=tuple(sources), command=command, timeout=timeout)
    # Every experiment runs in a worker process (a crash or a time-out is its error, the others go on);
    # its metrics come back in memory, as crossdyn run's summary, baselines and report take them.
    return {o.name: Ran(o.name, Path(out) / o.name, o.expected, o.measured, o.metrics, o.error, o.row())
            for o in outcomes}


def write_summary(out: Path, rows: list[dict], *, seed: int, command: str, started: float | None = None) -> None:
    """Write ``out/summary.json``, ``summary.md`` and ``index.html`` for the experiments a session ran,
    ``rows`` being each one's :attr:`Ran.row`; ``seed``, ``command`` and ``started`` (time.time()) are shown."""
    outcomes = [Outcome(**{**row, "baseline": None}) for row in rows]
    write_json(Path(out) / "summary.json", [o.row() for o in outcomes])
    write_text(Path(out) / "summary.md", summary_table(outcomes, markdown=True))
    write_report(Path(out), outcomes, command=command, seed=seed, short=True, overrides={},
                 started=started if started is not None else time.time())


def experiments_from(sources: tuple[str, ...], timeout: float | None = None) -> list:
    """The experiments ``sources`` (absolute ``.py`` paths or module names) register, in registry order:
    those loading it registered or whose function is defined there.  A source not imported yet is
    imported in a worker first, so one that ends its process (or hangs past ``timeout``) is a
    CrossdynError, as is a missing source, one that fails to import or registers a taken name."""
    if fresh := unloaded(sources):
        pool_with_sources_imported(fresh, timeout=timeout, option="").terminate()
    before = set(experiments())
    after = experiments(sources)
    files = {str(Path(s).resolve()) for s in sources if is_file(s)}
    modules = {s for s in sources if not is_file(s)}

    def owned(exp) -> bool:
        run_fn = getattr(exp.run, "__wrapped__", exp.run)
        code = getattr(run_fn, "__code__", None)
        module = getattr(run_fn, "__module__", None) or ""
        return (exp.name not in before
                or code is not None and str(Path(code.co_filename).resolve()) in files
                or module in modules or any(module.startswith(m + ".") for m in modules))

    return [exp for exp in after.values() if owned(exp)]
