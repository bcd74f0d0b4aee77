"""Run a planned sweep with resume: the table, the engine and the progress bar together; a sweep whose
runs can be evaluated many at once (on ``mujoco.batch``) runs them a :class:`Batch` at a time."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from .. import isolation
from . import engine as engines
from . import table

__all__ = ["SweepResult", "run_samples", "Batch", "in_batches", "Meter", "Progress", "BATCH_RUNS", "ended"]

# Runs per batch at most: enough for the batch to amortize its per-step work over, few enough that
# every worker gets batches and a table grows while the sweep runs.
BATCH_RUNS = 128


@dataclass(frozen=True)
class Batch:
    """Runs of a sweep evaluated together (``index``: the first run's)."""

    jobs: tuple

    @property
    def index(self) -> int:
        return self.jobs[0].index

    def halves(self) -> tuple[Batch, ...]:
        """The batch's two halves, or ``()`` for a batch of one run (an :class:`~.engine.Divisible` job)."""
        middle = len(self.jobs) // 2
        return (Batch(self.jobs[:middle]), Batch(self.jobs[middle:])) if middle else ()


def in_batches(engine: engines.Engine) -> engines.Engine:
    """``engine`` running jobs a :class:`Batch` at a time, yielding ``(rows, seconds, where)`` per batch.

    Each worker gets batches of about half its share of the jobs (at most :data:`BATCH_RUNS`),
    so the workers stay busy to the end (:func:`run_samples` takes the rows, sharing a batch's
    wall time evenly).
    """

    def run(jobs: list):
        size = max(1, min(BATCH_RUNS, math.ceil(len(jobs) / (2 * engine.size))))
        return engine.run([Batch(tuple(jobs[i:i + size])) for i in range(0, len(jobs), size)])

    return engines.Engine(run, engine.size)


Progress = bool | Callable[[str], None]


class Meter:
    """How far a sweep got: a progress bar on stderr (``progress`` True), a line per finished batch of runs
    given to ``progress`` (a function: ``tune x: 64/513 runs, 2 failed``), or nothing (False)."""

    def __init__(self, progress: Progress, total: int, done: int, failed: int, desc: str, unit: str):
        self.lines = progress if callable(progress) else None
        self.total, self.done, self.failed, self.desc, self.unit = total, done, failed, desc, unit
        self.bar = None
        if progress is True:
            self.bar = tqdm(total=total, initial=done, desc=desc, unit=unit, dynamic_ncols=True)
            self.bar.set_postfix(failed=failed)

    def update(self, runs: int, failed: int) -> None:
        """``runs`` more finished, ``failed`` of them failed."""
        self.done, self.failed = self.done + runs, self.failed + failed
        if self.bar is not None:
            self.bar.update(runs)
            self.bar.set_postfix(failed=self.failed)
        if self.lines is not None:
            self.lines(f"{self.desc}: {self.done}/{self.total} {self.unit}s, {self.failed} failed")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


@dataclass
class SweepResult:
    """What a sweep produced: every run's ``rows`` in sample order, the runs ``computed`` by this call and
    ``resumed`` from the table, its wall time ``seconds``, the table's path ``csv``, the ``best`` row (or
    None) and its ``summary`` (``best.json``, a map's JSON, or None)."""

    rows: list[dict]
    computed: int
    resumed: int
    seconds: float
    csv: Path
    best: dict | None = None
    summary: dict | None = None

    def counts(self, key: str = "outcome") -> dict[str, int]:
        """How many rows have each value of ``key``."""
        out: dict[str, int] = {}
        for row in self.rows:
            out[row[key]] = out.get(row[key], 0) + 1
        return out


def run_samples(plan: list, csv_path: Path, columns: Sequence[str], engine: engines.Engine, *,
                progress: Progress = False, desc: str = "tune", failed: Callable[[dict], bool] = lambda row: False,
                texts: Mapping[str, Collection[str] | None] | None = None) -> SweepResult:
    """Run the jobs of ``plan`` not yet in ``csv_path`` on the open ``engine``; return all rows in sample order.

    Args:
      plan: the jobs (each with an ``index`` and ``key()``, the columns compared on resume).
      csv_path, columns: the table and the key columns its header starts with (the others follow the rows).
      engine: an open engine; its results are a row or a batch's list of rows each.
      progress, desc, failed: a progress bar on stderr, or a line per finished batch of runs given to
        ``progress`` (:class:`Meter`), counting ``failed`` rows.
      texts: the table's text columns and their values, to validate resumed rows.

    Raises:
      ParameterError: ``csv_path`` was made with other arguments, or holds a damaged row.
      CrossdynError: the Dask scheduler cannot be reached.
    """
    start = time.perf_counter()
    csv_path = Path(csv_path)
    done = table.read_done(csv_path, {job.index: job.key() for job in plan}, columns, texts=texts)
    todo = [job for job in plan if job.index not in done]
    meter = Meter(progress, len(plan), len(done), sum(failed(row) for row in done.values()), desc, "run")
    try:
        with table.appending(csv_path, [done[i] for i in sorted(done)], columns) as record:
            for value, seconds, where in engine.run(todo):
                rows = value if isinstance(value, list) else [value]  # a batch's rows share its wall time
                for row in rows:
                    record(row, seconds / len(rows), where)
                    done[int(row["sample"])] = row
                meter.update(len(rows), sum(failed(row) for row in rows))
    finally:
        meter.close()
    rows = [done[job.index] for job in plan]
    table.write(csv_path, rows, table.columns_of(rows, columns))
    return SweepResult(rows, len(todo), len(plan) - len(todo), time.perf_counter() - start, csv_path)


def ended(done) -> tuple[str, str]:
    """``(outcome, detail)`` of a run that ended without a row in an isolated worker: ``timed out``,
    ``crashed``, or ``error`` (it raised out of the evaluation)."""
    if done.status == isolation.TIMED_OUT:
        return "timed out", f"timed out {done.how} (--timeout); its process was stopped"
    if done.status == isolation.CRASHED:
        return "crashed", f"its process ended ({done.how}) without a result"
    return "error", f"{type(done.error).__name__}: {' '.join(str(done.error).split())}"
