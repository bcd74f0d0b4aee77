"""No false pass, nothing lost: experiments and derivations that end, hang, fork or return junk.

Each case is a user's experiment (or derivation) written as a careless or hostile
user would, run through the real command in a fresh interpreter (``python -m
crossdyn.experiments``), as CI runs it.  Required of every run that can go on:
the failing experiment is named in the table, on stderr, in summary.json, JUnit
and index.html; the others' results are written; the exit status is 1, never 0;
and no process is left behind (everything the run started shares its session).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

HEADER = """\
import atexit, ctypes, os, sys, threading, time
from pathlib import Path
from crossdyn import experiment
"""

# name -> (body of run(ctx), measured, phrase of its one-line error or None when it passes)
FAULTS = {
    "calls-exit": ("sys.exit(0)", "crashed", "called sys.exit(0)"),
    "os-exit": ("os._exit(0)", "crashed", "its process ended (exit status 0)"),
    "segfault": ("ctypes.string_at(0)", "crashed", "its process ended (signal SIGSEGV)"),
    "aborts": ("os.abort()", "crashed", "its process ended (signal SIGABRT)"),
    "raises-interrupt": ("raise KeyboardInterrupt", "crashed", "raised KeyboardInterrupt itself"),
    "raises-base": ("raise BaseException('not an Exception')", "crashed", "BaseException: not an Exception"),
    "atexit-exit-0": ("atexit.register(os._exit, 0)\n    return {'passed': False, 'measured': 'missed'}",
                      "missed", None),
    "passed-text": ("return {'passed': 'False', 'measured': 'x'}", "error", "'passed': 'False' (a str)"),
    "passed-nan": ("return {'passed': float('nan'), 'measured': 'x'}", "error", "'passed': nan (a float)"),
    "passed-none": ("return {'passed': None, 'measured': 'x'}", "error", "'passed': None"),
    "passed-one": ("return {'passed': 1, 'measured': 'x'}", "error", "only True or False is a verdict"),
    "returns-list": ("return [True]", "error", "returned a list"),
    "no-measured": ("return {'passed': True}", "error", "returned no 'measured'"),
    "measured-number": ("return {'passed': True, 'measured': 3.5}", "error", "'measured': a float"),
    "unstorable": ("return {'passed': True, 'measured': 'x', 'thing': object()}", "error", "JSON cannot store"),
    "too-deep": ("d = {}\n    for _ in range(100_000):\n        d = {'a': d}\n"
                 "    return {'passed': True, 'measured': 'x', 'deep': d}", "error", "nested too deep"),
    "collides": ("return {'passed': True, 'measured': 'x', 'a': {'b': 1.0}, 'a.b': 2.0}", "error",
                 "metric 'a.b' is given twice"),
    "forks": ("os.fork()\n    return {'passed': True, 'measured': 'forked'}", "forked", None),
    "forks-and-sleeps": ("if os.fork() == 0:\n        time.sleep(600)\n        os._exit(0)\n"
                         "    return {'passed': True, 'measured': 'forked'}", "forked", None),
    "changes-folder": ("os.chdir(Path(ctx.out_dir).parents[2])\n    return {'passed': True, 'measured': 'moved'}",
                       "moved", None),
    "leaves-a-thread": ("threading.Thread(target=time.sleep, args=(600,)).start()\n"
                        "    return {'passed': True, 'measured': 'thread left'}", "thread left", None),
    "fine": ("return {'passed': True, 'measured': 'fine', 'value': 1.0}", "fine", None),
}


def experiments_file(cases: dict[str, tuple]) -> str:
    parts = [HEADER]
    for i, (name, (body, _, _)) in enumerate(cases.items()):
        parts.append(f"\n@experiment({name!r}, summary='-', expected='-')\ndef case_{i}(ctx):\n    {body}\n")
    return "".join(parts)


def crossdyn(args, cwd, timeout=600) -> subprocess.CompletedProcess:
    """``crossdyn ARGS`` in a fresh interpreter and its own session; fails if any process of it is left."""
    proc = subprocess.Popen([sys.executable, "-m", "crossdyn.experiments", *args], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            env={**os.environ, "MPLBACKEND": "Agg"})
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        left = _session(proc.pid)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
    assert not left, f"processes left behind: {left}\n{err}"
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _session(sid: int, settle: float = 5.0) -> list[int]:
    """Live processes in session ``sid`` after up to ``settle`` s (workers leave within a poll of 1 s)."""
    deadline = time.monotonic() + settle
    while True:
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(") ", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[0] != "Z" and int(fields[3]) == sid:  # state, ppid, pgrp, session
                found.append(int(stat.parent.name))
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_every_fault_is_named_and_nothing_is_lost(tmp_path, workers):
    (tmp_path / "faults.py").write_text(experiments_file(FAULTS))
    run = crossdyn(["run", "--from", "faults.py", *FAULTS, "--workers", workers, "--out", "out", "--junit",
                    "out/junit.xml"], tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.count("as expected; results in") == 1  # one summary: no forked child printed its own
    rows = {row["name"]: row for row in json.loads((tmp_path / "out" / "summary.json").read_text())}
    assert list(rows) == list(FAULTS)  # every experiment has its row, in run order
    errors = dict(line.split(": ", 1) for line in run.stderr.strip().splitlines())
    for name, (_, measured, phrase) in FAULTS.items():
        row = rows[name]
        metrics = json.loads((tmp_path / "out" / name / "metrics.json").read_text())
        assert row["measured"] == metrics["measured"] == measured, (name, row)
        if phrase is None:
            assert row["error"] is None and name not in errors, (name, row)
            assert row["passed"] is (name != "atexit-exit-0"), name
        else:
            assert row["passed"] is False and phrase in row["error"] and phrase in errors[name], (name, row)
        table_row = next(line for line in run.stdout.splitlines() if line.startswith(name + " "))
        assert table_row.split()[-1] == ("pass" if row["passed"] else "FAIL")
    assert not list(tmp_path.glob("core*")) and not list((tmp_path / "out").rglob("core*"))  # no core dumps
    suite = ET.parse(tmp_path / "out" / "junit.xml").getroot().find("testsuite")
    crashed = sum(measured in ("crashed", "error") for _, measured, _ in FAULTS.values())
    assert int(suite.get("errors")) == crashed and int(suite.get("tests")) == len(FAULTS)
    page = (tmp_path / "out" / "index.html").read_text()
    assert f"crossdyn run: {sum(r['passed'] for r in rows.values())}/{len(FAULTS)} as expected" in page
    assert (tmp_path / "out" / "fine" / "metrics.json").is_file()


HANG_EXIT_FINE = {
    "hangs": ("time.sleep(600)", "timed out", "timed out after 5 s"),
    "exits": ("os._exit(0)", "crashed", "its process ended (exit status 0)"),
    "fine": FAULTS["fine"],
}


@pytest.mark.parametrize("workers", ["1", "2"])
def test_one_hangs_one_exits_the_third_is_written(tmp_path, workers):
    """The issue's run: exit 1, the third's result written, both failures named, no process left."""
    (tmp_path / "three.py").write_text(experiments_file(HANG_EXIT_FINE))
    run = crossdyn(["run", "--from", "three.py", "hangs", "exits", "fine", "--timeout", "5", "--workers", workers,
                    "--out", "out"], tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1/3 as expected" in run.stdout
    assert run.stderr.splitlines() == ["hangs: timed out after 5 s (--timeout); its process was stopped",
                                       "exits: crashed: its process ended (exit status 0) without returning a result"]
    assert json.loads((tmp_path / "out" / "fine" / "metrics.json").read_text())["value"] == 1.0
    rows = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert [(r["name"], r["measured"]) for r in rows] == [("hangs", "timed out"), ("exits", "crashed"),
                                                         ("fine", "fine")]
    assert (tmp_path / "out" / "summary.md").is_file() and (tmp_path / "out" / "index.html").is_file()


def test_a_real_ctrl_c_stops_a_serial_run_and_its_worker(tmp_path):
    marker = tmp_path / "running"
    cases = {"waits": (f"Path({str(marker)!r}).touch()\n    time.sleep(600)", "-", None)}
    (tmp_path / "wait.py").write_text(experiments_file(cases))
    proc = subprocess.Popen([sys.executable, "-m", "crossdyn.experiments", "run", "--from", "wait.py", "waits",
                             "--out", "out"], cwd=tmp_path, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, env={**os.environ, "MPLBACKEND": "Agg"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: to the foreground process group
        _, err = proc.communicate(timeout=60)
    finally:
        left = _session(proc.pid)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 130 and err.splitlines() == [
        "crossdyn: interrupted; finished experiments' results are kept"], err
    assert not left and not (tmp_path / "out" / "summary.md").exists()


HOSTILE_TEXT = "bad \ud800 \x1b[31mred\x1b[0m\r\nsecond line\t" + "x" * 200_000


def test_hostile_text_is_kept_in_files_and_tamed_on_the_terminal(tmp_path):
    cases = {"says-too-much": (f"return {{'passed': False, 'measured': {HOSTILE_TEXT!r}}}", None, None),
             "raises-too-much": (f"raise RuntimeError({HOSTILE_TEXT!r})", "crashed", None)}
    (tmp_path / "text.py").write_text(experiments_file(cases), errors="surrogatepass")
    run = crossdyn(["run", "--from", "text.py", *cases, "--out", "out", "--junit", "out/junit.xml"], tmp_path)
    assert run.returncode == 1, run.stderr[:2000]
    for stream in (run.stdout, run.stderr):
        assert "\x1b" not in stream and "\r" not in stream and "\ud800" not in stream
        assert max(len(line) for line in stream.splitlines()) < 2_000
        stream.encode("utf-8")  # what the terminal got is valid text
    assert "\\x1b[31mred" in run.stdout and "more characters]" in run.stdout
    assert len(run.stderr.splitlines()) == 1 and "raises-too-much: RuntimeError: bad \\ud800" in run.stderr
    # The files keep every character: metrics.json round-trips the text exactly.
    metrics = json.loads((tmp_path / "out" / "says-too-much" / "metrics.json").read_text())
    assert metrics["measured"] == HOSTILE_TEXT
    error = json.loads((tmp_path / "out" / "raises-too-much" / "metrics.json").read_text())["error"]
    assert len(error) > 200_000
    for name in ("summary.md", "index.html", "junit.xml", "raises-too-much/error.txt"):
        text = (tmp_path / "out" / name).read_bytes().decode("utf-8")  # valid UTF-8, every file written
        assert "x" * 200_000 in text, name
    ET.parse(tmp_path / "out" / "junit.xml")
    assert "\x1b" not in (tmp_path / "out" / "summary.md").read_text()


DERIVATIONS = {
    "exit-in-function": ("import os\ndef tau(q, qd, qdd):\n    os._exit(0)\n", 2, "ended (exit status 0)"),
    "segfault": ("import ctypes\ndef tau(q, qd, qdd):\n    ctypes.string_at(0)\n", 2, "ended (signal SIGSEGV)"),
    "abort": ("import os\ndef tau(q, qd, qdd):\n    os.abort()\n", 2, "ended (signal SIGABRT)"),
    "exit-at-import": ("import os\nos._exit(0)\n", 2, "ended (exit status 0)"),
    # A wrong derivation whose atexit handler would turn the mismatch into exit 0.
    "atexit-exit-0": ("import atexit, os\nimport numpy as np\natexit.register(os._exit, 0)\n"
                      "def tau(q, qd, qdd):\n    return np.zeros(np.shape(q))\n", 1, None),
}


@pytest.mark.parametrize("case", list(DERIVATIONS))
def test_a_derivation_that_ends_its_process_is_never_a_pass(case, tmp_path):
    text, code, phrase = DERIVATIONS[case]
    (tmp_path / "user.py").write_text(text)
    run = crossdyn(["check", "derivation", "user.py:tau", "--mjcf", "two_link_arm", "--samples", "5", "--out",
                    "out"], tmp_path)
    assert run.returncode == code, (run.returncode, run.stdout, run.stderr)
    if phrase is None:
        assert run.stdout.startswith("MISMATCH"), run.stdout
    else:
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and phrase in lines[0] and "Traceback" not in run.stderr, run.stderr
        assert run.stdout == ""


def test_a_from_file_whose_import_hook_exits_0_cannot_pass_the_run(tmp_path):
    """atexit.register(os._exit, 0) and a non-daemon thread at import: the failed run still exits 1, and exits."""
    (tmp_path / "hooks.py").write_text(
        "import atexit, os, threading, time\nfrom crossdyn import experiment\n"
        "atexit.register(os._exit, 0)\nthreading.Thread(target=time.sleep, args=(600,)).start()\n\n"
        "@experiment('misses', summary='-', expected='-')\ndef misses(ctx):\n"
        "    return {'passed': False, 'measured': 'missed'}\n")
    run = crossdyn(["run", "--from", "hooks.py", "misses", "--out", "out"], tmp_path, timeout=300)
    assert run.returncode == 1 and "0/1 as expected" in run.stdout, run.stdout + run.stderr


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_dask_scheduler_killed_mid_sweep_is_one_line_and_rows_are_kept(tmp_path):
    """Kill the scheduler once a few rows are in: one line, exit 2, soon; the rows stay and the sweep resumes."""
    pytest.importorskip("distributed")
    dask = Path(sys.executable).parent / "dask"
    if not dask.exists():
        pytest.skip("the dask command is not installed beside this Python")
    address = f"tcp://127.0.0.1:{_free_port()}"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    scheduler = subprocess.Popen([str(dask), "scheduler", "--port", address.rsplit(":", 1)[1], "--no-dashboard",
                                  "--host", "127.0.0.1"], **quiet)
    worker = subprocess.Popen([str(dask), "worker", address, "--nworkers", "1", "--nthreads", "1",
                               "--no-dashboard"], **quiet)
    table = tmp_path / "sweep" / "samples.csv"
    sweep = subprocess.Popen([sys.executable, "-m", "crossdyn.experiments", "tune", "biped-balance-tune", "--samples",
                              "60", "--set", "duration_s=3", "--no-progress", "--scheduler", address, "--out", "sweep"],
                             cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env={**os.environ, "MPLBACKEND": "Agg"})
    try:
        deadline = time.monotonic() + 240
        while sweep.poll() is None and time.monotonic() < deadline:
            if table.exists() and len(table.read_text().splitlines()) >= 3:  # a header and two rows
                break
            time.sleep(0.2)
        kept = len(table.read_text().splitlines()) - 1
        scheduler.kill()
        killed = time.monotonic()
        _, err = sweep.communicate(timeout=120)
        took = time.monotonic() - killed
    finally:
        for proc in (sweep, worker, scheduler):
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    lines = err.strip().splitlines()
    assert sweep.returncode == 2 and len(lines) == 1, err[-3000:]
    assert "lost the Dask scheduler at" in lines[0] and "rows finished so far are kept" in lines[0], lines[0]
    assert took < 60, took  # seconds, not a hang
    assert kept >= 2 and len(table.read_text().splitlines()) - 1 >= kept  # what finished is still there


def test_a_from_file_that_hangs_at_import_is_stopped_with_timeout(tmp_path, monkeypatch, capsys):
    """With --timeout, a file of experiments still importing after it (plus a worker's start-up) is one line, exit 2.

    The file is imported in a worker first, so the hang is there: the worker is
    killed and this process never imports the file.
    """
    import multiprocessing

    from crossdyn.experiments.core import runner
    from crossdyn.experiments.core.cli import main

    monkeypatch.setattr(runner, "START_ALLOWANCE", 5.0)  # the real 60 s covers a loaded machine's start-up
    (tmp_path / "hangs.py").write_text("import time\ntime.sleep(600)\n")
    start = time.monotonic()
    code = main(["run", "--from", str(tmp_path / "hangs.py"), "--timeout", "1", "--out", str(tmp_path / "out")])
    took = time.monotonic() - start
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "hangs.py: still importing after 6 s (the time limit 1 s plus 5 s for a worker to start)" in err[0], err
    assert took < 60, took  # stopped at its deadline, not at the file's 600 s
    assert not [p for p in multiprocessing.active_children() if p.name == "crossdyn-worker"]
