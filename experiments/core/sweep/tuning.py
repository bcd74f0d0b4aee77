"""Experiments tuned with a table, plans and a summary of their own (``crossdyn tune COMMAND``).

An experiment may declare a :class:`Tuning` (``@experiment(..., tuning=Tuning(...))``): it parses
its own options and plans its runs, which run here on the same engines as any tune, into its
table, then its summary.  ``crossdyn run`` leaves such an experiment out.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crossdyn.experiments.core.sweep import engine as engines
from crossdyn.experiments.core.sweep import run as sweep_run
from crossdyn.experiments.core.sweep import table

__all__ = ["Tuning", "run_plan"]


@dataclass(frozen=True)
class Tuning:
    """An experiment's own tune.

    Attributes:
      command: the word after ``crossdyn tune``.
      configure: ``configure(parser)`` adds the command's options and sets ``func(args) -> exit code``.
      table, columns: the table's file name and columns (a job's ``key()`` names the first ones;
        ``outcome`` and ``detail`` are among them).
      evaluate: ``evaluate(job) -> row`` (text by column; a :class:`~.run.Batch` of jobs -> their rows).
      failed: ``failed(row)``: the run did not succeed.
      summary: ``summary(out, result, **options)`` writes a finished tune's summary files and plots.
      warm, preload: a worker's warm-up (or None); the modules a worker imports first.
    """

    command: str
    configure: Callable
    table: str
    columns: tuple[str, ...]
    evaluate: Callable
    failed: Callable[[dict], bool]
    summary: Callable
    warm: Callable | None = None
    preload: tuple[str, ...] = ()

    def engine(self, workers: int = 1, scheduler: str | None = None, timeout: float | None = None,
               sources: tuple[str, ...] = ()):
        """An open engine of :attr:`evaluate` runs in isolated workers: a run that crashes or times out is a row."""
        return engines.engine(self.evaluate, workers, scheduler, warm=self.warm, preload=self.preload,
                              isolation=engines.Isolation(self.ended, timeout, _load_experiments, (sources,)))

    def ended(self, job, done) -> dict[str, str]:
        """The row of a run that ended without one (crashed, timed out or raised out); a batch's, one per run."""
        if isinstance(job, sweep_run.Batch):
            return [self.ended(one, done) for one in job.jobs]  # type: ignore[return-value]
        outcome, detail = sweep_run.ended(done)
        return {**job.key(), **{k: "" for k in self.columns if k not in job.key()}, "outcome": outcome,
                "detail": detail}


def _load_experiments(sources: tuple[str, ...]) -> None:
    """A worker's start: the users' files of experiments registered (a fork server's worker has not got them)."""
    from crossdyn.experiments.core.registry import experiments

    experiments(sources)


def run_plan(tuning: Tuning, out: Path, plan: list | Callable, *, workers: int = 1, scheduler: str | None = None,
             progress: sweep_run.Progress = False, timeout: float | None = None, batch: bool = True,
             desc: str = "tune", options: dict[str, Any] | None = None,
             sources: tuple[str, ...] = ()) -> sweep_run.SweepResult:
    """Run ``plan`` into ``out``'s table (``out`` held meanwhile), then write the tuning's summary.

    Args:
      tuning: the experiment's :class:`Tuning`.
      plan: the jobs (each with ``index`` and ``key()``), run where the table lacks them; or a
        search, ``plan(engine, csv_path, progress) -> (rows, computed)``.
      workers, scheduler, timeout, batch: the engine's (a timeout is each run's limit, s;
        ``batch``: jobs go a batch at a time, never with ``timeout``).
      progress: a progress bar (True), or a function given a line per finished batch of runs.
      desc: the progress bar's label; options: passed on to :attr:`Tuning.summary`.
      sources: the users' files or modules the tuning's experiment came from.

    Raises:
      ParameterError: the table was made with other arguments; ``out`` is in use by another tune.
      CrossdynError: the Dask scheduler cannot be reached.
    """
    out = Path(out)
    start = time.perf_counter()
    with table.locked(out):  # a second tune into this folder is refused, not mixed into its rows
        csv_path = out / tuning.table
        with tuning.engine(workers, scheduler, timeout, sources) as engine:
            if callable(plan):
                rows, computed = plan(engine, csv_path, progress)
            else:
                runs = sweep_run.in_batches(engine) if batch and timeout is None else engine
                done = sweep_run.run_samples(tuning.evaluate, plan, {j.index: j.key() for j in plan}, csv_path,
                                             tuning.columns, progress=progress, desc=desc, failed=tuning.failed,
                                             engine=runs)
                rows, computed = done.rows, done.computed
        result = sweep_run.SweepResult(rows, computed, len(rows) - computed, time.perf_counter() - start, csv_path)
        tuning.summary(out, result, **(options or {}))
    return result
