"""The worker pool (experiments.core.isolation): a task's death is seen, and nothing is left behind.

Each task below ends its process a different way; the pool must report it as
``crashed`` with how the process ended, or ``timed out``, replace the worker and
run the next task.  Workers are reused between tasks (same pid), a forked child
of a task gives no result, and a closed pool leaves no process, forked children
included.  Task functions live in ``isolation_tasks.py`` beside this file (a
worker imports them by name).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from crossdyn.experiments.core import isolation
from crossdyn.experiments.core.errors import ParameterError
from crossdyn.experiments.core.isolation import CRASHED, OK, RAISED, TIMED_OUT, Pool, WorkerStartError

sys.path.insert(0, str(Path(__file__).parent))
import isolation_tasks as tasks  # noqa: E402


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not alive
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except OSError:
        return True


def _gone(pids, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(_alive(pid) for pid in pids):
            return True
        time.sleep(0.1)
    return False


def _results(pool) -> dict:
    return {done.key: done for done in pool.as_completed()}


def test_each_way_out_is_reported_and_the_others_go_on():
    cases = {"exit": (tasks.os_exit, 0), "segfault": (tasks.segfault, 0), "abort": (tasks.abort, 0),
             "sys.exit": (tasks.sys_exit, 3), "interrupt": (tasks.raise_keyboard_interrupt, 0),
             "hang": (tasks.sleep, 600), "kill": (tasks.kill_self, signal.SIGKILL), "ok": (tasks.double, 21)}
    with Pool(2) as pool:
        for key, (fn, arg) in cases.items():
            pool.submit(fn, arg, key=key, timeout=5.0 if key == "hang" else None)
        done = _results(pool)
    assert (done["exit"].status, done["exit"].how) == (CRASHED, "exit status 0")
    assert (done["segfault"].status, done["segfault"].how) == (CRASHED, "signal SIGSEGV")
    assert (done["abort"].status, done["abort"].how) == (CRASHED, "signal SIGABRT")
    assert (done["kill"].status, done["kill"].how) == (CRASHED, "signal SIGKILL")
    assert done["sys.exit"].status == RAISED and isinstance(done["sys.exit"].error, SystemExit)
    assert done["sys.exit"].error.code == 3 and "sys_exit" in done["sys.exit"].traceback
    assert done["interrupt"].status == RAISED and isinstance(done["interrupt"].error, KeyboardInterrupt)
    assert (done["hang"].status, done["hang"].how) == (TIMED_OUT, "after 5 s")
    assert (done["ok"].status, done["ok"].value) == (OK, 42)


def test_workers_are_reused_and_a_crashed_one_replaced():
    with Pool(1) as pool:
        for key in ("a", "b"):
            pool.submit(os.getpid, key=key)
        first = _results(pool)
        assert first["a"].value == first["b"].value  # one worker ran both
        pool.submit(tasks.os_exit, 0, key="crash")
        pool.submit(os.getpid, key="after")
        second = _results(pool)
    assert second["crash"].status == CRASHED and second["after"].status == OK
    assert second["after"].value != first["a"].value  # a new worker took over


def test_a_forked_child_gives_no_result_and_is_killed_with_its_worker():
    with Pool(1) as pool:
        pool.submit(tasks.fork_and_return, key="returns")  # parent and child both return
        pool.submit(tasks.fork_and_sleep, key="sleeps")  # the child sleeps on
        done = _results(pool)
        assert done["returns"].status == OK and done["returns"].value["child"] > 0  # the worker's answer, once
        sleeper = done["sleeps"].value["child"]
        assert _alive(sleeper)
    assert _gone([sleeper])  # closing the pool killed the worker's process group


def test_chdir_and_threads_do_not_outlive_the_task(tmp_path):
    home = os.getcwd()
    with Pool(1) as pool:
        pool.submit(tasks.chdir, str(tmp_path), key="chdir")
        pool.submit(os.getcwd, key="cwd")
        pool.submit(tasks.start_thread, key="thread")
        pool.submit(os.getpid, key="pid")
        done = _results(pool)
    assert done["chdir"].value == str(tmp_path) and done["cwd"].value == home
    assert done["thread"].status == OK
    assert _gone([done["pid"].value], within=10.0)  # a non-daemon thread did not keep the worker alive


def test_unpicklable_results_and_exceptions_come_back_as_errors():
    with Pool(1) as pool:
        pool.submit(tasks.return_lambda, key="result")
        pool.submit(tasks.raise_unpicklable, key="exception")
        done = _results(pool)
    assert done["result"].status == RAISED and "could not be sent back" in str(done["result"].error)
    assert done["exception"].status == RAISED and isinstance(done["exception"].error, isolation.RemoteError)
    assert "Unpicklable" in str(done["exception"].error)


def test_an_initializer_that_raises_or_exits_is_a_start_error():
    pool = Pool(1, initializer=tasks.raise_parameter_error)
    with pytest.raises(ParameterError, match="bad input at start"):  # a CrossdynError comes back as itself
        pool.start()
    pool.terminate()
    pool = Pool(1, initializer=tasks.os_exit, initargs=(0,))
    with pytest.raises(WorkerStartError, match=r"ended \(exit status 0\)"):
        pool.start()
    pool.terminate()
    pool = Pool(1, initializer=tasks.sleep, initargs=(600,), start_timeout=3.0)
    with pytest.raises(WorkerStartError, match="did not start within 3 s"):
        pool.start()
    pool.terminate()


def test_call_runs_one_task_in_a_fresh_process():
    done = isolation.call(os.getpid)
    assert done.ok and done.value != os.getpid() and _gone([done.value])
    assert isolation.call(tasks.os_exit, 7).how == "exit status 7"


WHERE_WORKERS_COME_FROM = """
import json, os, sys, threading
sys.path.insert(0, sys.argv[1])
import isolation_tasks as tasks
from crossdyn.experiments.core.isolation import Pool

def where():
    with Pool(1) as pool:
        pool.submit(tasks.where_am_i)
        [done] = list(pool.as_completed())
    return done.value

assert threading.active_count() == 1
alone = where()[0] == os.getpid()  # one thread: a fork of this process
stop = threading.Event()
thread = threading.Thread(target=stop.wait, daemon=True)
thread.start()
where()  # the fork server is running from here on
os.environ["CROSSDYN_TEST_MARK"] = "set after the server started"
os.chdir(sys.argv[2])
parent, mark, folder = where()
stop.set()
thread.join()
print(json.dumps([alone, parent != os.getpid(), mark, folder]))
"""


def test_workers_are_forks_of_this_process_or_with_threads_of_the_fork_server(tmp_path):
    """Forking a process whose other threads may hold a lock can deadlock the child: with a second thread
    running, workers come from the fork server, yet see this process's environment and folder as it is now.

    Run in a fresh interpreter: this test's own process (an xdist worker after other tests) may have threads.
    """
    import json
    import subprocess

    out = subprocess.run([sys.executable, "-c", WHERE_WORKERS_COME_FROM, str(Path(__file__).parent), str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    alone, server_child, mark, folder = json.loads(out.stdout.strip().splitlines()[-1])
    assert alone  # one thread: the worker is a fork of the process itself
    assert server_child  # a second thread: the fork server's child
    assert (mark, folder) == ("set after the server started", str(tmp_path))


def test_a_sweep_run_that_ends_its_worker_is_a_row_or_else_a_one_line_error():
    from crossdyn.experiments.core.errors import CrossdynError
    from crossdyn.experiments.core.sweep import engine as engines

    jobs = [tasks.Job(0, 21), tasks.Job(1, -1), tasks.Job(2, 2)]
    failed = engines.Isolation(lambda job, done: {"sample": str(job.index), "double": done.how})
    with engines.engine(tasks.double_or_exit, 2, isolation=failed) as engine:
        rows = {row["sample"]: row["double"] for row, _, _ in engine.run(jobs)}
    assert rows == {"0": "42", "1": "exit status 3", "2": "4"}  # the others went on
    with pytest.raises(CrossdynError, match=r"^run 1 ended without its row \(crashed: exit status 3\)$"), \
            engines.engine(tasks.double_or_exit, 1) as engine:
        list(engine.run(jobs))


def test_how_it_ended():
    assert isolation.how_it_ended(0) == "exit status 0"
    assert isolation.how_it_ended(-signal.SIGSEGV) == "signal SIGSEGV"
    assert isolation.how_it_ended(None) == "still running"


def test_a_script_without_a_main_guard_runs_experiments_and_tunes(tmp_path):
    """A user's script calling crossdyn at its top level (no ``if __name__ == "__main__":``).

    ``spawn`` would import the script again in each worker, where the top-level call
    starts workers of its own and the worker dies: ``run`` and ``tune`` then failed
    with a traceback.  The workers are started with the script hidden.
    """
    import subprocess

    script = tmp_path / "my_script.py"
    script.write_text(
        "from crossdyn import run, tune\n"
        "(outcome,) = run('two-link-lagrange', out='results', short=True)\n"
        "print('run', outcome.name, outcome.passed)\n"
        "result = tune('cart-pole-lqr', 'results/tune', vary=['r=0.05:0.5'], samples=2, short=True)\n"
        "print('tune', len(result.rows), result.computed)\n"
        "import __main__\n"
        "print('main', __main__.__file__ == __file__)\n")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "MPLBACKEND": "Agg"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["run two-link-lagrange True", "tune 3 3", "main True"]
