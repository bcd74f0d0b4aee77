"""Where a sweep's runs execute: the isolated worker pool, or a Dask cluster.

An *evaluation* ``evaluate(job) -> row`` (text; a failing run is a row) is a module-level
function, a *job* anything picklable with an ``index``; a local run that crashes, exits or
hangs becomes a row of its own.  Evaluations run with BLAS single-threaded: a sweep's
parallelism is its processes.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

__all__ = ["Engine", "engine", "in_this_process", "Isolation", "Divisible", "timed", "IN_FLIGHT", "CONNECT_TIMEOUT"]

IN_FLIGHT = 2  # jobs submitted ahead per local worker: keeps every worker busy, bounds memory
CONNECT_TIMEOUT = "5s"  # an unreachable or silent address fails fast instead of hanging

Evaluate = Callable[[Any], dict]


def timed(evaluate: Evaluate, job) -> tuple[dict, float, str]:
    """``evaluate(job)`` with its wall time and where it ran (for ``timings.csv`` only), BLAS on one thread."""
    from threadpoolctl import threadpool_limits

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
def engine(evaluate: Evaluate, workers: int = 1, scheduler: str | None = None, *,
           warm: Callable[[], None] | None = None, preload: Sequence[str] = (), isolation: Isolation | None = None):
    """An open :class:`Engine` for several batches of jobs (the pool or client starts once), closed on exit.

    ``evaluate`` runs on ``workers`` local processes (each first imports ``preload`` and runs
    ``warm()``), or on the Dask ``scheduler``; ``isolation`` says what a local run that crashes,
    hangs or exits becomes (None: a one-line error that stops the sweep).

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
            from crossdyn.experiments.core import dask_client

            dask_client.close(client)
        return
    from crossdyn.experiments.core import isolation as isolated

    isolation = isolation or Isolation()
    pool = isolated.Pool(workers, initializer=_start_worker,
                         initargs=(tuple(preload), isolation.initializer, isolation.initargs, warm))
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


def _start_worker(preload: Sequence[str], initializer, initargs: tuple, warm) -> None:
    """A local worker's start: import ``preload``, then ``initializer(*initargs)``, then ``warm()``."""
    import importlib

    for module in preload:
        importlib.import_module(module)
    if initializer is not None:
        initializer(*initargs)
    if warm is not None:
        warm()


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
            from crossdyn.experiments.core.errors import CrossdynError

            why = done.how or f"{type(done.error).__name__}: {done.error}"
            raise CrossdynError(f"run {done.key.index} ended without its row ({done.status}: {why})")


def connect(scheduler: str):
    """A Dask client of the scheduler at ``scheduler`` (``tcp://HOST:PORT``), with a worker.

    Raises:
      CrossdynError: Dask is not installed, the address is malformed, nothing answers
        within :data:`CONNECT_TIMEOUT`, or no worker joins.
    """
    from crossdyn.experiments.core import dask_client

    return dask_client.connect(scheduler, timeout=float(CONNECT_TIMEOUT.removesuffix("s")))


def _dask(client, run_one, jobs: list):
    """``run_one`` results as they finish on Dask; a scheduler or worker lost mid-run is one line."""
    from crossdyn.experiments.core import dask_client

    yield from dask_client.results(client, run_one, jobs)
