"""Where a sweep's runs execute: in this process, a local pool of worker processes, or a Dask cluster.

An *evaluation* is a module-level function ``evaluate(job) -> row`` (a dict of
text, one table row; it must record a failing run as a row, never raise); a
*job* is anything picklable with an ``index``.  :func:`engine` opens an
:class:`Engine` whose ``run(jobs)`` yields ``(row, seconds, where)`` as runs finish:

- one worker: inline, in order;
- local workers: processes started once and fed at most :data:`IN_FLIGHT` jobs
  each ahead, forked from this process when it has no other thread (instant: the
  modules are already imported), else started from a fresh preloaded fork server
  (forking a process whose other threads may hold locks can deadlock the child).
  Each worker dies with its parent (Linux's parent-death signal) and may warm up
  once (``warm()``, e.g. compile a model) before its first job;
- Dask: ``--scheduler tcp://HOST:PORT``, every job its own task;
- isolated workers (:class:`Isolation`: users' code, ``--timeout``): processes of
  :mod:`crossdyn.experiments.core.isolation`, where a run that crashes, exits or
  hangs past its limit becomes a row of its own and the others go on.

Each evaluation runs with BLAS single-threaded: a sweep's parallelism is its
processes, and OpenBLAS's own threads on small solves cost several times more on
a loaded machine (a gain design took 0.67 s instead of 0.09 s, measured).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from concurrent.futures import Future
    from multiprocessing.context import BaseContext

__all__ = ["Engine", "engine", "Isolation", "timed", "IN_FLIGHT", "CONNECT_TIMEOUT"]

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


@dataclass(frozen=True)
class Isolation:
    """Runs in worker processes where their death is seen (:mod:`crossdyn.experiments.core.isolation`).

    Attributes:
      failed: ``failed(job, done) -> row``: the table row of a run that crashed,
        timed out or raised out of the evaluation (``done`` its
        :class:`~crossdyn.experiments.core.isolation.Done`).
      timeout: each run's time limit, s (None: none).
      initializer, initargs: run once in each worker (e.g. load users' experiments).
    """

    failed: Callable[[Any, Any], dict]
    timeout: float | None = None
    initializer: Callable | None = None
    initargs: tuple = ()


@contextlib.contextmanager
def engine(evaluate: Evaluate, workers: int = 1, scheduler: str | None = None, *,
           warm: Callable[[], None] | None = None, preload: Sequence[str] = (), isolation: Isolation | None = None):
    """An open :class:`Engine` for several batches of jobs, closed on exit.

    The local pool or the Dask client starts once and serves every batch (a
    search asks for its trials a batch at a time).

    Args:
      evaluate: the module-level evaluation function.
      workers: local processes (1: inline).
      scheduler: a Dask scheduler's address instead.
      warm: run once in each local worker before its first job.
      preload: modules a fork server imports before forking workers.
      isolation: run locally in isolated workers instead (even one): a run that
        crashes, hangs past the time limit or exits is a row, not the sweep's end.

    Raises:
      CrossdynError: the Dask scheduler cannot be reached; an isolated worker
        cannot start (a user's file that ends the process while being imported).
    """
    run_one = functools.partial(timed, evaluate)
    if isolation is not None and not scheduler:
        from crossdyn.experiments.core import isolation as isolated

        pool = isolated.Pool(workers, initializer=isolation.initializer, initargs=isolation.initargs)
        try:
            yield Engine(lambda jobs: _isolated(pool, run_one, jobs, workers, isolation), workers)
        except BaseException:
            pool.terminate()
            raise
        pool.close()
    elif scheduler:
        client = connect(scheduler)
        try:
            yield Engine(lambda jobs: _dask(client, run_one, jobs), max(1, sum(client.nthreads().values())))
        finally:
            from crossdyn.experiments.core import dask_client

            dask_client.close(client)
    elif workers <= 1:
        yield Engine(lambda jobs: (run_one(j) for j in jobs), 1)
    else:
        pool = _open_pool(workers, warm, preload)
        running: set[Future] = set()
        try:
            yield Engine(lambda jobs: _bounded(pool, run_one, jobs, workers, running), workers)
        finally:
            pool.shutdown(wait=not running, cancel_futures=True)


def run_all(evaluate: Evaluate, jobs: list, workers: int = 1, scheduler: str | None = None, *,
            warm: Callable[[], None] | None = None, preload: Sequence[str] = ()) -> Iterator:
    """``(row, seconds, where)`` of every job as it finishes, on an engine opened for them alone.

    The engine starts here, before the caller's progress bar starts a thread (a
    local pool forks from a process with one thread when it can).
    """
    if not jobs:
        return iter(())
    if scheduler:  # connect now: an unreachable scheduler is refused before anything is written
        client = connect(scheduler)
        return _closing(client, _dask(client, functools.partial(timed, evaluate), jobs))
    if workers <= 1 or len(jobs) <= 1:
        run_one = functools.partial(timed, evaluate)
        return (run_one(j) for j in jobs)
    workers = min(workers, len(jobs))
    pool = _open_pool(workers, warm, preload)
    run_one = functools.partial(timed, evaluate)

    def results():
        running: set = set()
        try:
            yield from _bounded(pool, run_one, jobs, workers, running)
        finally:
            pool.shutdown(wait=not running, cancel_futures=True)

    return results()


def _isolated(pool, run_one, jobs: list, workers: int, isolation: Isolation):
    """``run_one`` results from an isolated pool as they finish, at most IN_FLIGHT per worker queued;
    a run that ended without a result is ``isolation.failed``'s row."""
    pending = iter(jobs)
    for job in itertools.islice(pending, IN_FLIGHT * workers):
        pool.submit(run_one, job, timeout=isolation.timeout, key=job)
    for done in pool.as_completed():
        job = next(pending, None)
        if job is not None:
            pool.submit(run_one, job, timeout=isolation.timeout, key=job)
        yield done.value if done.ok else (isolation.failed(done.key, done), done.seconds, "isolated worker")


def _closing(client, results):
    from crossdyn.experiments.core import dask_client

    try:
        yield from results
    finally:
        dask_client.close(client)


def _open_pool(workers: int, warm, preload: Sequence[str]):
    """A process pool of ``workers`` sweep workers (see the module docstring for the start method)."""
    import multiprocessing
    import threading
    from concurrent.futures import ProcessPoolExecutor

    context: BaseContext
    if threading.active_count() == 1:
        context = multiprocessing.get_context("fork")
    else:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["crossdyn.experiments.core.sweep.engine", *preload])
    return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_worker_init,
                               initargs=(os.getpid(), warm))


def _bounded(pool, run_one, jobs: list, workers: int, running: set):
    """``run_one`` results from ``pool`` as they finish, with at most IN_FLIGHT per worker submitted.

    ``running`` holds the submitted, unfinished futures (the caller sees them if it stops early).
    """
    from concurrent.futures import FIRST_COMPLETED, wait

    pending = iter(jobs)
    running.update(pool.submit(run_one, j) for j in itertools.islice(pending, IN_FLIGHT * workers))
    while running:
        done, _ = wait(running, return_when=FIRST_COMPLETED)
        for fut in done:
            running.discard(fut)
            running.update(pool.submit(run_one, j) for j in itertools.islice(pending, 1))
            yield fut.result()


def _worker_init(parent: int, warm) -> None:
    """Start a local sweep worker: die with the parent, then warm up.

    On Linux the kernel sends the worker SIGKILL when its parent dies, however the
    parent dies (SIGTERM, SIGKILL, a crash), so no worker outlives a sweep.  If the
    parent is already gone by now, exit at once.
    """
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent and _gone(parent):
        os._exit(1)
    if warm is not None:
        warm()


def _gone(parent: int) -> bool:
    """Whether process ``parent`` no longer exists (a forkserver child's own parent is the server)."""
    try:
        os.kill(parent, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def connect(scheduler: str):
    """A Dask client of the scheduler at ``scheduler`` (``tcp://HOST:PORT``), with a worker
    (:func:`crossdyn.experiments.core.dask_client.connect`: bounded waits, one-line failures).

    Raises:
      CrossdynError: Dask is not installed, the address is malformed or not tcp://,
        nothing answers as a Dask scheduler within :data:`CONNECT_TIMEOUT`, or no worker joins.
    """
    from crossdyn.experiments.core import dask_client

    return dask_client.connect(scheduler, timeout=float(CONNECT_TIMEOUT.removesuffix("s")))


def _dask(client, run_one, jobs: list):
    """Yield ``run_one`` results as they finish on a Dask distributed cluster; a scheduler or worker lost
    mid-run is one line (:class:`crossdyn.experiments.core.dask_client.DaskError`), the rows so far kept."""
    from crossdyn.experiments.core import dask_client

    yield from dask_client.results(client, run_one, jobs)
