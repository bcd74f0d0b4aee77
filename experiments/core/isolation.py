"""Run code where its death is seen: a pool of long-lived worker processes.

Code crossdyn did not write (a user's experiment, a derivation being checked, one
run of a sweep) can end its process (``os._exit(0)``, a segfault, ``abort()``) or
hang; in crossdyn's own process that would read as a pass or lose every other
result.  In a worker, a death without a result is reported as ``crashed`` with how
it ended (``signal SIGSEGV``), a task over its time limit is killed and reported
as ``timed out``, and a new worker takes the tasks still queued.

Usage::

    with Pool(2, initializer=load_registry, initargs=(sources,)) as pool:
        for name in names:
            pool.submit(run_one, name, timeout=60.0, key=name)
        for done in pool.as_completed():
            done.key, done.status, done.value, done.how   # status: ok / raised / crashed / timed out

Each worker is started as tasks need it and:

- is a copy of a process that has crossdyn imported, so it starts at once:
  forked from this process while it has one thread, else from a fork server
  (forking a process whose other threads may hold a lock can deadlock the
  child); only a forked worker sees later changes to this process's modules;
- leads its own process group, so whatever it forks dies with it;
- ignores Ctrl-C, and kills itself and its group when the parent dies (polled
  every :data:`PARENT_POLL_S`); writes no core file;
- gives no result from a task's forked child, goes back to its working folder
  after each task, and leaves with ``os._exit`` (a task's thread cannot keep it).

A task's exception (``SystemExit`` included) comes back as status ``raised``;
one that cannot be pickled as a :class:`RemoteError`.
"""

from __future__ import annotations

import atexit
import contextlib
import faulthandler
import itertools
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
import traceback
import warnings
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

from tqdm import tqdm

from .errors import CrossdynError

__all__ = ["Pool", "Done", "RemoteError", "WorkerStartError", "how_it_ended", "call", "forked", "OK", "RAISED",
           "CRASHED", "TIMED_OUT", "PARENT_POLL_S"]

OK, RAISED, CRASHED, TIMED_OUT = "ok", "raised", "crashed", "timed out"

# How often a worker checks that its parent is alive, s.
PARENT_POLL_S = 1.0
# How often the parent looks at its workers when no message arrives, s: a worker
# whose forked child still holds its pipe shows its death only to this poll.
_LOOK_S = 0.25
# How long close() lets a worker leave on its own before killing its group, s.
_STOP_GRACE_S = 5.0


class RemoteError(Exception):
    """An exception raised in a worker that could not be sent back as itself.

    Attributes:
      type_name: the exception's class name, message: its text.
    """

    def __init__(self, type_name: str, message: str):
        super().__init__(f"{type_name}: {message}" if message else type_name)
        self.type_name, self.message = type_name, message

    def __reduce__(self):
        return RemoteError, (self.type_name, self.message)


class WorkerStartError(CrossdynError):
    """A worker process could not start: its initializer raised, or the process ended or hung while starting.

    Attributes:
      hung: True when it was stopped for taking longer than the pool's ``start_timeout``.
    """

    def __init__(self, message: str, *, hung: bool = False):
        super().__init__(message)
        self.hung = hung


@dataclass
class Done:
    """One finished task.

    Attributes:
      key: what :meth:`Pool.submit` was given as ``key`` (default: a counter).
      status: :data:`OK`, :data:`RAISED`, :data:`CRASHED` or :data:`TIMED_OUT`.
      value: the function's return value (status ok).
      error: the exception it raised (status raised), or a :class:`RemoteError`.
      traceback: that exception's traceback, as text.
      how: how a crashed worker ended (``"signal SIGSEGV"``) or the limit a
        timed-out task exceeded (``"after 5 s"``).
      seconds: wall time from the task's start in a worker to its end, s.
    """

    key: Any
    status: str
    value: Any = None
    error: BaseException | None = None
    traceback: str = ""
    how: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == OK


def how_it_ended(exitcode: int | None) -> str:
    """A process's exit in words: ``"exit status 3"``, ``"signal SIGSEGV"``."""
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        try:
            return f"signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"signal {-exitcode}"
    return f"exit status {exitcode}"


_WORKER_PID: int | None = None  # set in a worker: a forked child of a task sees another pid


def _watch_parent(parent: int) -> None:
    started_by = os.getppid()  # the parent, or the fork server (which ends when the parent does)
    while True:
        time.sleep(PARENT_POLL_S)
        if os.getppid() != started_by or _gone(parent):  # re-parented: the parent was killed
            _kill_my_group()


def _gone(pid: int) -> bool:
    """Whether process ``pid`` no longer exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _kill_my_group() -> None:
    try:
        os.killpg(0, signal.SIGKILL)
    finally:
        os._exit(1)


def _picklable(exc: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RemoteError(type(exc).__name__, str(exc))


def _leave(code: int = 0) -> None:
    """End the worker now: no atexit handler, no wait for a thread a task left running."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _no_tqdm_semaphore() -> None:
    """Keep tqdm from making a multiprocessing lock here: a worker's ``os._exit`` skips the finalizer that
    unregisters its semaphore, and the resource tracker then warns of a leaked semaphore."""
    tqdm.set_lock(threading.RLock())  # before any bar: get_lock() then never makes its default lock


def _forget_parents_pools() -> None:
    """In a forked worker: close the parent's pipes to other workers (held open, they hide a sibling's death)."""
    for pool in list(_POOLS):
        for w in pool._live:
            with contextlib.suppress(OSError):
                w.conn.close()
        pool._live, pool._closed = [], True


def _worker_main(conn, parent: int, environ: dict, initializer, initargs) -> None:
    global _WORKER_PID
    _WORKER_PID = os.getpid()
    _forget_parents_pools()
    if os.environ != environ:  # started by the fork server: its environment is the parent's of earlier
        os.environ.clear()
        os.environ.update(environ)
    with contextlib.suppress(OSError):
        os.setpgrp()  # its own group: what a task forks dies with the worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent takes Ctrl-C and stops the pool
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's handler, if forked from it
    faulthandler.disable()  # nor the parent's crash traceback: the parent says how the worker ended
    try:  # a task that aborts or segfaults is reported by the parent; no core file is left in the folder
        import resource  # late: Unix only (the ImportError below)

        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    except (ImportError, ValueError, OSError):
        pass
    _no_tqdm_semaphore()
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="watch-parent").start()
    home = os.getcwd()
    if initializer is not None:
        try:
            initializer(*initargs)
        except BaseException as exc:  # a user's module that raises or exits while loading
            if os.getpid() != _WORKER_PID:
                os._exit(0)
            conn.send(("init-failed", _picklable(exc), traceback.format_exc()))
            _leave(0)
        if os.getpid() != _WORKER_PID:
            os._exit(0)
    conn.send(("ready", os.getpid()))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            break
        if message is None:
            break
        task, fn, args = message
        try:
            reply: tuple[Any, ...] = ("ok", task, fn(*args))
        except BaseException as exc:  # the task's own ending, SystemExit and KeyboardInterrupt included
            if os.getpid() != _WORKER_PID:
                os._exit(0)
            reply = ("raised", task, _picklable(exc), traceback.format_exc())
        if os.getpid() != _WORKER_PID:  # a forked child of the task returned: it has no result to give
            os._exit(0)
        with contextlib.suppress(OSError):
            os.chdir(home)
        try:
            conn.send(reply)
        except Exception as exc:  # the result could not be pickled
            conn.send(("raised", task, RemoteError(type(exc).__name__, f"its result could not be sent back: {exc}"),
                       ""))
    _leave(0)


@dataclass
class _Task:
    id: int
    key: Any
    fn: Callable
    args: tuple
    timeout: float | None
    started: float = 0.0


_MAIN_LOCK = threading.Lock()
_MISSING = object()


@contextlib.contextmanager
def _main_script_hidden() -> Iterator[None]:
    """Start a process (not a fork of this one) without running the parent's main script again in it.

    ``spawn`` and the fork server import the parent's ``__main__`` in the child; a
    user's script that calls crossdyn at its top level without a ``__main__`` guard
    would run again in every worker.  A worker only runs functions of importable
    modules, so ``__main__``'s ``__file__`` and ``__spec__`` are hidden while the
    process starts.
    """
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    with _MAIN_LOCK:
        saved = {name: main.__dict__.get(name, _MISSING) for name in ("__file__", "__spec__")}
        main.__dict__.pop("__file__", None)
        main.__dict__["__spec__"] = None
        try:
            yield
        finally:
            for name, value in saved.items():
                if value is _MISSING:
                    main.__dict__.pop(name, None)
                else:
                    main.__dict__[name] = value


class _Worker:
    def __init__(self, context, initializer, initargs, start_timeout):
        self.conn, child = context.Pipe(duplex=True)
        self.process = context.Process(target=_worker_main,
                                       args=(child, os.getpid(), dict(os.environ), initializer, initargs),
                                       daemon=False, name="crossdyn-worker")
        with _main_script_hidden() if context.get_start_method() != "fork" else contextlib.nullcontext():
            self.process.start()
        child.close()
        self.ready = False
        self.task: _Task | None = None
        self.since = time.monotonic()
        self.start_deadline = None if start_timeout is None else self.since + start_timeout

    def exited(self) -> bool:
        """Has the process ended?  (Not reaped, so its pid, and its group id, stay taken.)"""
        if hasattr(os, "waitid"):
            try:
                info = os.waitid(os.P_PID, self.process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:  # reaped, or a fork server's child: its server says
                return not self.process.is_alive()
            return info is not None
        return not self.process.is_alive()

    def kill(self) -> None:
        """Kill the worker and everything in its process group, and reap it."""
        for target in (lambda: os.killpg(self.process.pid, signal.SIGKILL), self.process.kill):
            with contextlib.suppress(OSError):  # gone already (ProcessLookupError) or not ours
                target()
        self.process.join()
        self.conn.close()


class Pool:
    """Up to ``workers`` long-lived worker processes running submitted calls; see the module docstring.

    Args:
      workers: the most processes at once (started as tasks need them).
      initializer, initargs: ``initializer(*initargs)`` runs once in each new
        worker (a module-level function and plain data).
      start_timeout: seconds a worker may take to start; None for no limit.

    A task's function must be a module-level one a fresh interpreter can import.
    """

    def __init__(self, workers: int, *, initializer: Callable | None = None, initargs: tuple = (),
                 start_timeout: float | None = None):
        if workers < 1:
            raise ValueError(f"a pool needs at least one worker, got {workers}")
        self.workers = workers
        self._initializer, self._initargs = initializer, tuple(initargs)
        self._start_timeout = start_timeout
        self._live: list[_Worker] = []
        self._queue: deque[_Task] = deque()
        self._ids = itertools.count()
        self._closed = False
        self._finished: list[Done] = []  # tasks that finished while start() waited
        _POOLS.add(self)

    def start(self, count: int = 1, *, wait: bool = True) -> None:
        """Start ``count`` workers now and, with ``wait``, wait until they are ready.

        Without ``wait`` they start in the background; a failure then shows in :meth:`as_completed`.

        Raises:
          WorkerStartError: a worker's initializer raised (a :class:`CrossdynError`
            as itself), or the worker ended or hung while starting.
        """
        count = min(count, self.workers)
        while len(self._live) < count:
            self._spawn()
        while wait and not all(w.ready for w in self._live):
            self._finished.extend(self._step())

    def submit(self, fn: Callable, *args, timeout: float | None = None, key: Any = None) -> Any:
        """Queue ``fn(*args)``; returns its key (``key``, or a counter when None).

        Args:
          timeout: seconds the call may run in its worker before the worker is
            killed and the task reported :data:`TIMED_OUT`; None for no limit.
        """
        if self._closed:
            raise RuntimeError("the pool is closed")
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        task_id = next(self._ids)
        self._queue.append(_Task(task_id, task_id if key is None else key, fn, tuple(args), timeout))
        return self._queue[-1].key

    @property
    def pending(self) -> int:
        """Tasks queued or running."""
        return len(self._queue) + sum(w.task is not None for w in self._live) + len(self._finished)

    def as_completed(self) -> Iterator[Done]:
        """Each task's :class:`Done` as it finishes, until none is queued or running.

        Raises:
          WorkerStartError: a new worker could not start (see :meth:`start`).
        """
        while self._finished:
            yield self._finished.pop(0)
        while self.pending:
            yield from self._step()

    def close(self) -> None:
        """Let idle workers leave, kill what is left (running tasks are lost), and reap everything."""
        self._closed = True
        self._queue.clear()
        for w in self._live:
            if w.ready and w.task is None:
                with contextlib.suppress(OSError):
                    w.conn.send(None)
        deadline = time.monotonic() + _STOP_GRACE_S
        for w in self._live:
            if w.ready and w.task is None:
                while not w.exited() and time.monotonic() < deadline:
                    wait([w.process.sentinel], timeout=_LOOK_S)
        self.terminate()

    def terminate(self) -> None:
        """Kill every worker and its process group now."""
        self._closed = True
        self._queue.clear()
        while self._live:
            self._live.pop().kill()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, kind, value, tb) -> None:
        if kind is None:
            self.close()
        else:
            self.terminate()

    def _spawn(self) -> _Worker:
        worker = _Worker(_start_method(), self._initializer, self._initargs, self._start_timeout)
        self._live.append(worker)
        return worker

    def _dispatch(self) -> None:
        """Give queued tasks to idle workers; start workers while tasks wait and room is left."""
        for w in self._live:
            if self._queue and w.ready and w.task is None:
                task = self._queue.popleft()
                task.started = time.monotonic()
                w.task = task
                try:
                    w.conn.send((task.id, task.fn, task.args))
                except Exception as exc:  # an argument that cannot be pickled: the caller's mistake
                    w.task = None
                    raise TypeError(f"cannot send {getattr(task.fn, '__qualname__', task.fn)!r} to a worker "
                                    f"process: {exc}") from None
        starting = sum(not w.ready for w in self._live)
        while len(self._queue) > starting and len(self._live) < self.workers:
            self._spawn()
            starting += 1

    def _step(self) -> Iterator[Done]:
        self._dispatch()
        now = time.monotonic()
        deadlines = [w.task.started + w.task.timeout for w in self._live if w.task and w.task.timeout]
        deadlines += [w.start_deadline for w in self._live if not w.ready and w.start_deadline]
        timeout = min([_LOOK_S, *(d - now for d in deadlines)])
        objects = [w.conn for w in self._live] + [w.process.sentinel for w in self._live]
        wait(objects, timeout=max(timeout, 0.0))
        for w in list(self._live):
            yield from self._service(w)
        yield from self._expire()

    def _service(self, w: _Worker) -> Iterator[Done]:
        """Read what ``w`` sent; then, if it has ended, report its task as crashed."""
        while True:
            try:
                if not w.conn.poll():
                    break
                message = w.conn.recv()
            except (EOFError, OSError):
                break
            yield from self._handle(w, message)
            if w not in self._live:
                return
        if w.exited():
            self._live.remove(w)
            w.kill()
            how = how_it_ended(w.process.exitcode)
            if not w.ready:
                raise WorkerStartError(f"the worker process ended ({how})")
            if w.task is not None:
                task, w.task = w.task, None
                yield Done(task.key, CRASHED, how=how, seconds=time.monotonic() - task.started)

    def _handle(self, w: _Worker, message) -> Iterator[Done]:
        kind = message[0]
        if kind == "ready":
            w.ready = True
            return
        if kind == "init-failed":
            _, error, text = message
            self._live.remove(w)
            w.kill()
            if isinstance(error, CrossdynError):
                raise error
            raise WorkerStartError(f"the worker process could not start: {type(error).__name__}: {error}")
        task, w.task = w.task, None
        if task is None or task.id != message[1]:  # pragma: no cover - a protocol error, not the user's
            raise RuntimeError(f"worker {w.process.pid} answered a task it was not running: {message[:2]}")
        seconds = time.monotonic() - task.started
        if kind == "ok":
            yield Done(task.key, OK, value=message[2], seconds=seconds)
        else:
            yield Done(task.key, RAISED, error=message[2], traceback=message[3], seconds=seconds)

    def _expire(self) -> Iterator[Done]:
        now = time.monotonic()
        for w in list(self._live):
            if w.task is not None and w.task.timeout is not None and now >= w.task.started + w.task.timeout:
                task, w.task = w.task, None
                self._live.remove(w)
                w.kill()
                yield Done(task.key, TIMED_OUT, how=f"after {task.timeout:g} s", seconds=now - task.started)
            elif not w.ready and w.start_deadline is not None and now >= w.start_deadline:
                self._live.remove(w)
                w.kill()
                raise WorkerStartError(f"the worker process did not start within {self._start_timeout:g} s",
                                       hung=True)


def _start_method():
    """How a new worker starts (see the module docstring): forked from this process while it has one thread,
    else from the fork server, which imports the crossdyn modules this process has when it starts."""
    methods = multiprocessing.get_all_start_methods()
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" not in methods:  # pragma: no cover - Windows
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(sorted(name for name in sys.modules  # only read when the server starts
                                          if name.split(".")[0] == "crossdyn" and not name.endswith("__main__")))
    return context


# Pools not yet closed: killed at exit, before multiprocessing would wait for their (non-daemon) workers.
_POOLS: weakref.WeakSet[Pool] = weakref.WeakSet()


@atexit.register
def _terminate_all() -> None:
    for pool in list(_POOLS):
        pool.terminate()


def call(fn: Callable, *args, timeout: float | None = None, initializer: Callable | None = None,
         initargs: tuple = ()) -> Done:
    """``fn(*args)`` in one fresh worker process; its :class:`Done` (the worker is gone afterwards)."""
    with Pool(1, initializer=initializer, initargs=initargs) as pool:
        pool.submit(fn, *args, timeout=timeout)
        [done] = list(pool.as_completed())
    return done


def forked(fn: Callable, *args, **kwargs) -> Done:
    """``fn(*args, **kwargs)`` in a child forked from this process, once; its :class:`Done`.

    For what a worker cannot be sent (a lambda, a closure): nothing is pickled but
    the outcome.  Where there is no ``fork`` (Windows) ``fn`` runs here.
    """
    if "fork" not in multiprocessing.get_all_start_methods():  # pragma: no cover - Windows
        try:
            return Done(None, OK, value=fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed back as the call's outcome
            return Done(None, RAISED, error=exc, traceback=traceback.format_exc())
    context = multiprocessing.get_context("fork")
    conn, child = context.Pipe(duplex=False)
    process = context.Process(target=_run_forked, args=(child, fn, args, kwargs), name="crossdyn-forked")
    start = time.monotonic()
    with warnings.catch_warnings():  # Python 3.12 warns of fork with threads (pytest-xdist's); the child only runs fn
        warnings.filterwarnings("ignore", message=r".*use of fork\(\) may lead to deadlocks")
        process.start()
    child.close()
    try:
        outcome = conn.recv()
    except EOFError:  # the child ended without an outcome
        outcome = None
    process.join()
    conn.close()
    seconds = time.monotonic() - start
    if outcome is None:
        return Done(None, CRASHED, how=how_it_ended(process.exitcode), seconds=seconds)
    status, value, text = outcome
    return Done(None, status, value=value if status == OK else None, error=None if status == OK else value,
                traceback=text, seconds=seconds)


def _run_forked(conn, fn: Callable, args: tuple, kwargs: dict) -> None:
    """In a :func:`forked` child: send ``fn``'s outcome, then leave without the parent's exit handlers."""
    faulthandler.disable()  # the parent says how the child ended
    try:
        outcome: tuple = (OK, fn(*args, **kwargs), "")
    except BaseException as exc:  # noqa: BLE001 - SystemExit too: it is sent back
        outcome = (RAISED, _picklable(exc), traceback.format_exc())
    try:
        conn.send(outcome)
    except Exception as exc:  # noqa: BLE001 - the result could not be pickled
        conn.send((RAISED, RemoteError(type(exc).__name__, f"its result could not be sent back: {exc}"), ""))
    _leave(0)
