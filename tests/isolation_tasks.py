"""Tasks for tests/test_isolation.py: each ends, or abuses, its worker process one way.

A module of its own so that a worker process can import the functions by name.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
from dataclasses import dataclass

from crossdyn.experiments.core.errors import ParameterError


def double(x):
    return 2 * x


def os_exit(code):
    os._exit(code)


def segfault(_):
    ctypes.string_at(0)  # reads address 0: SIGSEGV


def abort(_):
    os.abort()


def kill_self(signum):
    os.kill(os.getpid(), signum)
    time.sleep(60)


def sys_exit(code):
    sys.exit(code)


def raise_keyboard_interrupt(_):
    raise KeyboardInterrupt


def sleep(seconds):
    time.sleep(seconds)


def fork_and_return():
    child = os.fork()
    return {"child": child}  # the child returns here too, with 0


def fork_and_sleep():
    child = os.fork()
    if child == 0:
        time.sleep(600)
        os._exit(0)
    return {"child": child}


def chdir(path):
    os.chdir(path)
    return os.getcwd()


def start_thread():
    threading.Thread(target=time.sleep, args=(600,), daemon=False).start()


def return_lambda():
    return lambda: None


class Unpicklable(Exception):
    def __init__(self, a, b):  # unpickling calls __init__ with one argument: it fails
        super().__init__(f"{a} {b}")
        # and pickling fails on a lambda even where tblib (imported with Dask) pickles exceptions its own way
        self.callback = lambda: None


def raise_unpicklable():
    raise Unpicklable(1, 2)


def raise_parameter_error():
    raise ParameterError("bad input at start")



def where_am_i():
    """The worker's parent process, its CROSSDYN_TEST_MARK variable and working folder."""
    return os.getppid(), os.environ.get("CROSSDYN_TEST_MARK"), os.getcwd()


@dataclass(frozen=True)
class Job:
    """A sweep's job: its index and a value."""

    index: int
    value: int


def double_or_exit(job: Job) -> dict:
    """A sweep evaluation: the job's row, or (a negative value) the end of its process."""
    if job.value < 0:
        os._exit(3)
    return {"sample": str(job.index), "double": str(2 * job.value)}
