"""Experiments in parallel processes (``crossdyn run --workers K``).

Each worker is a fresh interpreter (the ``spawn`` start method): it shares no
threads, locks or GL state with the parent, and an experiment that starts a pool
of its own starts it as it would in a serial run.  A worker loads the registry
itself, built-in experiments, installed entry points and the users' ``--from``
sources, then runs the experiments it is sent by name with the same
``_run_one`` a serial run uses, so metrics are byte-identical to a serial run's.

Experiments are sent longest first, by the wall time each took last time in this
output folder (``NAME/timing.json``), so that one long experiment does not start
last and leave the other workers idle; ones never run before keep run order.
The caller puts the outcomes back in run order.

Workers ignore Ctrl-C (the parent stops them), and exit on their own when the
parent dies, so an interrupted or killed run leaves no process behind.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

__all__ = ["run_parallel", "longest_first"]

# How often a worker checks that its parent is alive, s.
PARENT_POLL_S = 1.0


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(PARENT_POLL_S)
        if os.getppid() != parent:  # re-parented: the run was killed
            os._exit(1)


def _init_worker(parent: int, sources: tuple[str, ...]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    from crossdyn.experiments.core.registry import experiments

    experiments(sources)


def _run_named(name: str, out: Path, short: bool, seed: int, overrides: dict, video: bool):
    from crossdyn.experiments.core.registry import experiments
    from crossdyn.experiments.core.results import _run_one

    return _run_one(experiments()[name], out, short, seed, overrides, video)


def longest_first(names: list[str], out: Path) -> list[str]:
    """``names`` by last recorded wall time in ``out``, longest first; unknown times keep their order first."""

    def last_time(name: str) -> float:
        try:
            return float(json.loads((out / name / "timing.json").read_text())["wall_time_s"])
        except (OSError, ValueError, KeyError, TypeError):
            return float("inf")  # never timed: could be long, start it early

    return sorted(names, key=last_time, reverse=True)


def run_parallel(jobs, out: Path, *, short: bool, seed: int, video: bool, workers: int,
                 sources: tuple[str, ...] | list[str] = ()):
    """Outcomes of ``jobs`` (``(experiment, overrides)`` pairs) as they finish, from ``workers`` processes.

    Raises:
      ParameterError: an experiment is not in the registry (made on the fly in
        Python), so a worker process could not find it by name.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from crossdyn.experiments.core.errors import ParameterError
    from crossdyn.experiments.core.registry import experiments

    registry = experiments(sources)
    for exp, _ in jobs:
        if registry.get(exp.name) is not exp:
            raise ParameterError(f"experiment {exp.name!r} is not registered, so a worker process cannot load it; "
                                 f"register it with @experiment in a file or module given to --from, or use 1 worker")
    mine = {exp.name: overrides for exp, overrides in jobs}
    pool = ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=multiprocessing.get_context("spawn"),
                               initializer=_init_worker, initargs=(os.getpid(), tuple(sources)))
    futures = [pool.submit(_run_named, name, out, short, seed, mine[name], video)
               for name in longest_first(list(mine), out)]
    return _as_finished(pool, futures)


def _as_finished(pool, futures):
    from concurrent.futures import as_completed

    try:
        for future in as_completed(futures):
            yield future.result()
    except BaseException:  # Ctrl-C or a worker lost: stop the others now
        # No public way to stop a running task; take the processes before shutdown() forgets them.
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
