"""Where a sweep's runs execute: the isolated worker pool, or a Dask cluster; a tune's choice of them in one
object (:class:`TuneEngine`).

An *evaluation* ``evaluate(job) -> row`` (text; a failing run is a row) is a module-level
function, a *job* anything picklable with an ``index``; a local run that crashes, exits or
hangs becomes a row of its own.  Evaluations run with BLAS single-threaded: a sweep's
parallelism is its processes.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

from threadpoolctl import threadpool_limits

from .. import dask_client
from .. import isolation as isolated
from ..errors import CrossdynError, ParameterError

__all__ = ["TuneEngine", "Engine", "engine", "in_this_process", "Isolation", "Divisible", "timed", "IN_FLIGHT",
           "CONNECT_TIMEOUT"]

IN_FLIGHT = 2  # jobs submitted ahead per local worker: keeps every worker busy, bounds memory
CONNECT_TIMEOUT = "5s"  # an unreachable or silent address fails fast instead of hanging

Evaluate = Callable[[Any], dict]


@dataclass(frozen=True)
class TuneEngine:
    """Where and how a tune's runs execute (``crossdyn tune``'s ``--workers``, ``--scheduler``, ``--timeout``).

    Attributes:
      workers: local worker processes (a Dask cluster's size is its own).
      scheduler: a Dask scheduler's address (``tcp://HOST:PORT``) to run on instead, or None.
      timeout: each run's time limit, s, or None: a run over it is stopped and recorded ``timed out``.
      batch: runs of an experiment with a batched form go to the workers a batch at a time (never with a
        ``timeout``: a limit is a run's own).
      progress: a progress bar on stderr (True), a function given a line per finished batch of runs, or
        nothing (False).

    A rerun into the same folder always resumes: only the runs its table lacks run.
    """

    workers: int = 1
    scheduler: str | None = None
    timeout: float | None = None
    batch: bool = True
    progress: bool | Callable[[str], None] = False

    def __post_init__(self):
        if isinstance(self.workers, bool) or not isinstance(self.workers, int) or self.workers < 1:
            raise ParameterError(f"workers must be a whole number >= 1, got {self.workers!r}")
        if self.timeout is not None and not (isinstance(self.timeout, (int, float)) and 0 < self.timeout < math.inf):
            raise ParameterError(f"timeout must be a positive number of seconds (or None), got {self.timeout!r}")

    def batches(self, batched: bool) -> bool:
        """Whether runs go a batch at a time, for an experiment that has (``batched``) a batched form or not."""
        return batched and self.batch and self.timeout is None


def timed(evaluate: Evaluate, job) -> tuple[dict, float, str]:
    """``evaluate(job)`` with its wall time and where it ran (for ``timings.csv`` only), BLAS on one thread."""
    start = time.perf_counter()
    with threadpool_limits(1, user_api="blas"):
        row = evaluate(job)
    return row, time.perf_counter() - start, f"{socket.gethostname()}:{os.getpid()}"


class Engine(NamedTuple):
    """An open engine: ``run(jobs)`` yields ``(row, seconds, where)`` as runs finish; ``size`` run at once."""

    run: Callable[[list], Iterator]
    size: int


@runtime_checkable
class Divisible(Protocol):
    """A job of several runs (a batch): when its worker dies, its ``halves()`` are run again apart, down to the
    run that took it down (``()`` for a job of one run)."""
    def halves(self) -> tuple: ...


@dataclass(frozen=True)
class Isolation:
    """What becomes of a local run whose worker process died (``failed(job, done) -> row``, or None: an
    error), each run's ``timeout`` (s, or None), and what each worker runs first (``initializer(*initargs)``)."""

    failed: Callable[[Any, Any], dict] | None = None
    timeout: float | None = None
    initializer: Callable | None = None
    initargs: tuple = ()


@contextlib.contextmanager
def engine(evaluate: Evaluate, workers: int = 1, scheduler: str | None = None, *, isolation: Isolation | None = None):
    """An open :class:`Engine` for several batches of jobs (the pool or client starts once), closed on exit.

    ``evaluate`` runs on ``workers`` local processes, or on the Dask ``scheduler``; ``isolation`` says
    what each worker runs first and what a local run that crashes, hangs or exits becomes (None: a
    one-line error that stops the sweep).

    Raises:
      CrossdynError: the Dask scheduler cannot be reached; a worker cannot start; with
        no ``isolation``, a run that ended without its row.
    """
    run_one = functools.partial(timed, evaluate)
    if scheduler:
        client = connect(scheduler)
        try:
            yield Engine(lambda jobs: _dask(client, run_one, jobs), max(1, sum(client.nthreads().values())))
        finally:
            dask_client.close(client)
        return
    isolation = isolation or Isolation()
    pool = isolated.Pool(workers, initializer=isolation.initializer, initargs=isolation.initargs)
    try:
        pool.start(workers, wait=False)  # now, while this process has one thread: forked (see isolation)
        yield Engine(lambda jobs: _isolated(pool, run_one, jobs, workers, isolation), workers)
    except BaseException:
        pool.terminate()
        raise
    pool.close()


def in_this_process(evaluate: Evaluate) -> Engine:
    """An :class:`Engine` running each job here, in order: for an evaluation a worker process cannot load."""
    return Engine(lambda jobs: (timed(evaluate, job) for job in jobs), 1)


def _isolated(pool, run_one, jobs: list, workers: int, isolation: Isolation):
    """``run_one`` results from the pool as they finish, at most IN_FLIGHT per worker queued;
    a run that ended without a result is ``isolation.failed``'s row.  A :class:`Divisible` job (a
    batch) that ended without its rows is split in halves, each run again, so a crash costs the
    run that crashed only and every other run of its batch gets its own row."""
    pending = iter(jobs)
    for job in itertools.islice(pending, IN_FLIGHT * workers):
        pool.submit(run_one, job, timeout=isolation.timeout, key=job)
    for done in pool.as_completed():
        job = next(pending, None)
        if job is not None:
            pool.submit(run_one, job, timeout=isolation.timeout, key=job)
        parts = done.key.halves() if not done.ok and isinstance(done.key, Divisible) else ()
        if parts:
            for part in parts:
                pool.submit(run_one, part, timeout=isolation.timeout, key=part)
            continue
        if done.ok:
            yield done.value
        elif isolation.failed is not None:
            yield isolation.failed(done.key, done), done.seconds, "isolated worker"
        else:
            why = done.how or f"{type(done.error).__name__}: {done.error}"
            raise CrossdynError(f"run {done.key.index} ended without its row ({done.status}: {why})")


def connect(scheduler: str):
    """A Dask client of the scheduler at ``scheduler`` (``tcp://HOST:PORT``), with a worker.

    Raises:
      CrossdynError: Dask is not installed, the address is malformed, nothing answers
        within :data:`CONNECT_TIMEOUT`, or no worker joins.
    """
    return dask_client.connect(scheduler, timeout=float(CONNECT_TIMEOUT.removesuffix("s")))


def _dask(client, run_one, jobs: list):
    """``run_one`` results as they finish on Dask; a scheduler or worker lost mid-run is one line."""
    yield from dask_client.results(client, run_one, jobs)
