"""What ``crossdyn run`` leaves in its output folder: parallel runs, summaries, atomic writes.

- ``--workers 2`` and a serial run write byte-identical metrics and the same
  summary, in run order.
- summary.md's cells escape ``|``; the "expected" column honours ``--set``.
- An interrupted run leaves no previous summary beside its new metrics.
- ``write_json`` from two processes at once: a reader only ever sees whole JSON.
- Ctrl-C stops a parallel run and its workers; a killed parent leaves no worker.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from crossdyn.experiments.core.cli import main
from crossdyn.experiments.core.files import write_json
from crossdyn.experiments.core.registry import Experiment, get
from crossdyn.experiments.core.runner import Outcome, run_experiments, summary_table

# Short experiments of different lengths, so that parallel ones finish out of run order.
PARALLEL = ["two-link-scope", "two-link-lagrange", "rnea-two-link-arm", "five-bar"]


def test_workers_match_a_serial_run(tmp_path, capsys):
    tables = {}
    for workers in ("1", "2"):
        assert main(["run", *PARALLEL, "--short", "--workers", workers, "--out", str(tmp_path / workers)]) == 0
        printed = capsys.readouterr().out.replace(str(tmp_path / workers), "OUT")
        tables[workers] = re.sub(r"^\[\d+/\d+\] .*\n", "", printed, flags=re.M)  # progress, in finishing order
    for name in PARALLEL:
        serial, parallel = ((tmp_path / run / name / "metrics.json").read_bytes() for run in ("1", "2"))
        assert serial == parallel, name
    assert (tmp_path / "1" / "summary.md").read_text() == (tmp_path / "2" / "summary.md").read_text()
    rows = json.loads((tmp_path / "2" / "summary.json").read_text())
    assert [row["name"] for row in rows] == PARALLEL  # run order, whatever order they finished in
    assert tables["1"] == tables["2"]  # the printed summary reads the same


def test_workers_refuse_an_unregistered_experiment(tmp_path):
    loose = Experiment("loose", "not registered", "nothing", lambda ctx: {"passed": True, "measured": "-"})
    with pytest.raises(Exception, match="not registered"):
        run_experiments([loose, get("two-link-lagrange")], tmp_path, workers=2)


def test_markdown_summary_escapes_pipes():
    table = summary_table([Outcome("a", "|x| < 1", "max |error| 2e-16", True, 0.1)], markdown=True)
    header, rule, row = table.splitlines()
    unescaped = lambda line: line.replace("\\|", "").count("|")  # noqa: E731
    assert unescaped(row) == unescaped(header) == 5
    assert "max \\|error\\| 2e-16" in row


def test_expected_column_honours_set(tmp_path):
    """The registered turn experiment's expected text follows turn_deg (no simulation needed)."""
    turn = get("turn")
    assert turn.expected_for(turn.resolve_params({"turn_deg": "170"})).startswith("170 deg")
    assert turn.expected_for(turn.resolve_params({})).startswith("90 deg")
    exp = Experiment("reach", "reach a target", "reach {target:g} m", lambda ctx: {"passed": True, "measured": "ok"},
                     {"target": get("velocity-tracking").params["speed"]})
    [outcome] = run_experiments([exp], tmp_path, overrides={"target": "1.5"})
    assert outcome.expected == "reach 1.5 m"
    assert json.loads((tmp_path / "reach" / "metrics.json").read_text())["expected"] == "reach 1.5 m"
    assert "reach 1.5 m" in (tmp_path / "summary.md").read_text()


def test_expected_text_naming_an_unknown_parameter_is_refused():
    from crossdyn.experiments.core.errors import ParameterError
    from crossdyn.experiments.core.registry import experiment

    with pytest.raises(ParameterError, match="names {speed}"):
        experiment("typo-in-expected", summary="-", expected="reach {speed} m/s")


def test_an_interrupted_run_leaves_no_old_summary(tmp_path):
    out = tmp_path / "out"
    run_experiments([get("two-link-lagrange")], out, short=True)
    assert (out / "summary.md").is_file() and (out / "index.html").is_file()

    def interrupted(ctx):  # a real Ctrl-C (a raised KeyboardInterrupt is the experiment's own error)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(30)

    stop = Experiment("stop", "Ctrl-C here", "-", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_experiments([get("two-link-lagrange"), stop], out, short=True)
    assert not (out / "summary.md").exists() and not (out / "index.html").exists()
    rows = json.loads((out / "summary.json").read_text())
    assert [row["name"] for row in rows] == ["two-link-lagrange"]  # what finished, and only that


def _hammer(path: str, tag: int, count: int) -> None:
    for i in range(count):
        write_json(path, {"writer": tag, "i": i, "payload": list(range(200))})


def test_write_json_from_two_processes_never_shows_a_partial_file(tmp_path):
    path = tmp_path / "metrics.json"
    write_json(path, {"writer": -1, "i": 0, "payload": []})
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_hammer, args=(str(path), tag, 400)) for tag in (0, 1)]
    for w in writers:
        w.start()
    reads, seen = 0, set()
    deadline = time.monotonic() + 120
    while any(w.is_alive() for w in writers) and time.monotonic() < deadline:
        record = json.loads(path.read_text())  # raises on a partial or missing file
        seen.add(record["writer"])
        reads += 1
    for w in writers:
        w.join(timeout=60)
        assert w.exitcode == 0  # no FileNotFoundError on a shared temp name
    assert json.loads(path.read_text())["i"] == 399
    assert reads > 10 and seen & {0, 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.json"]  # no temp file left behind


def _start_parallel_run(out) -> tuple[subprocess.Popen, list[int]]:
    """A ``--workers 2`` run in its own process group, once its workers are busy: (process, worker pids)."""
    run = subprocess.Popen([sys.executable, "-m", "crossdyn.experiments", "run", *SLOW, "--short", "--workers", "2",
                            "--out", str(out)], start_new_session=True, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env={**os.environ, "MPLBACKEND": "Agg"},
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as in a terminal
    deadline = time.monotonic() + 300
    while not (out / "summary.json").exists() and time.monotonic() < deadline:  # a first experiment finished
        time.sleep(0.2)
    children = subprocess.run(["pgrep", "-P", str(run.pid)], capture_output=True,  # its workers: forks of it
                              text=True).stdout.split()
    assert len(children) == 2, children
    return run, [int(pid) for pid in children]


def _gone(pids: list[int], within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = []
        for pid in pids:
            try:
                os.kill(pid, 0)
                alive.append(pid)
            except ProcessLookupError:
                pass
        if not alive:
            return True
        time.sleep(0.2)
    return False


# Several seconds each in short mode, so that workers are mid-experiment when the signal comes.
SLOW = ["box-pulled", "box-ground-contact", "box-free-rotation", "robustness", "push-recovery", "lqr-cost"]


@pytest.mark.skipif(shutil.which("pgrep") is None, reason="needs pgrep (procps)")
def test_ctrl_c_stops_a_parallel_run_and_its_workers(tmp_path):
    run, workers = _start_parallel_run(tmp_path / "out")
    try:
        os.killpg(run.pid, signal.SIGINT)
        _, err = run.communicate(timeout=60)
    finally:  # a failing run must not outlive the test
        for pid in workers + [run.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert run.returncode == 130 and err.strip().splitlines() == [
        "crossdyn: interrupted; finished experiments' results are kept"], err
    assert _gone(workers, within=10.0)
    assert not (tmp_path / "out" / "summary.md").exists()


@pytest.mark.skipif(shutil.which("pgrep") is None, reason="needs pgrep (procps)")
def test_killed_parent_leaves_no_worker(tmp_path):
    run, workers = _start_parallel_run(tmp_path / "out")
    run.kill()  # SIGKILL: no handler runs in the parent; the workers notice on their own
    run.communicate(timeout=60)
    assert _gone(workers, within=10.0)  # each polls its parent every PARENT_POLL_S = 1 s


def test_results_flow_one_way(tmp_path, monkeypatch, capsys):
    """A run reads back no file it wrote and compares no modification time (issue 27).

    Summary, baseline comparison, --save-baseline, JUnit and index.html come from
    the outcomes in memory: here every read of a file under the run's output
    folders fails, and so does asking a file there for its mtime.
    """
    import builtins
    import pathlib

    from crossdyn.experiments.core.registry import experiments

    experiments()  # imports done before the traps are set
    out, saved, junit = tmp_path / "out", tmp_path / "saved", tmp_path / "junit.xml"
    base = tmp_path / "base"  # an input: reading it is allowed
    assert main(["run", "two-link-lagrange", "--short", "--out", str(tmp_path / "first"), "--save-baseline",
                 str(base)]) == 0
    guarded = [str(p) for p in (out, saved, junit)]

    def is_guarded(path) -> bool:
        return any(os.path.abspath(os.fspath(path)).startswith(g) for g in guarded)

    real_open, real_stat = builtins.open, os.stat

    def open_(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and is_guarded(file) and not set(mode) & set("wxa"):
            raise AssertionError(f"the run read back {file}")
        return real_open(file, mode, *args, **kwargs)

    class NoTimes:
        def __init__(self, result):
            self._result = result

        def __getattr__(self, name):
            if "time" in name:
                raise AssertionError(f"the run asked for {name} of a file it wrote")
            return getattr(self._result, name)

    def stat(path, *args, **kwargs):
        result = real_stat(path, *args, **kwargs)
        return NoTimes(result) if isinstance(path, (str, os.PathLike)) and is_guarded(path) else result

    monkeypatch.setattr(builtins, "open", open_)
    monkeypatch.setattr(pathlib.Path, "read_text", lambda self, *a, **k: open_(self).read())
    monkeypatch.setattr(pathlib.Path, "read_bytes", lambda self: open_(self, "rb").read())
    monkeypatch.setattr(os, "stat", stat)
    code = main(["run", "two-link-lagrange", "rnea-two-link-arm", "--short", "--out", str(out), "--baseline",
                 str(base), "--allow-new", "--save-baseline", str(saved), "--junit", str(junit)])
    monkeypatch.undo()
    assert code == 0, capsys.readouterr()
    record = json.loads((saved / "rnea-two-link-arm.json").read_text())
    metrics = json.loads((out / "rnea-two-link-arm" / "metrics.json").read_text())
    assert record["seed"] == metrics["seed"] and record["metrics"]["max_abs_error"] == metrics["max_abs_error"]
    assert "term_errors.png" in (out / "index.html").read_text() and junit.is_file()
    rows = json.loads((out / "summary.json").read_text())
    assert rows[0]["files"] == ["two-link-lagrange/term_errors.png"]
    assert rows[0]["baseline"]["headline"] == "no drift"


def test_a_line_per_finished_experiment_off_a_terminal_and_a_bar_on_one(tmp_path, capsys, monkeypatch):
    """Printing to a CI log, ``crossdyn run`` says each experiment as it finishes; on a terminal, a bar instead."""
    names = ["two-link-lagrange", "rnea-two-link-arm"]
    assert main(["run", *names, "--short", "--out", str(tmp_path / "log")]) == 0
    printed = capsys.readouterr().out.splitlines()
    lines = [re.sub(r"\(\d+\.\d s\)$", "(T)", line) for line in printed if line.startswith("[")]
    assert lines == ["[1/2] two-link-lagrange: pass (T)", "[2/2] rnea-two-link-arm: pass (T)"], printed
    assert printed.index(next(p for p in printed if p.startswith("[2/2]"))) < printed.index(
        next(p for p in printed if p.startswith("experiment ")))  # as they finish, before the summary
    for stream in (sys.stdout, sys.stderr):
        monkeypatch.setattr(stream, "isatty", lambda: True)
    assert main(["run", *names, "--short", "--out", str(tmp_path / "terminal")]) == 0
    shown = capsys.readouterr()
    assert not [line for line in shown.out.splitlines() if line.startswith("[")] and "experiments" in shown.err
