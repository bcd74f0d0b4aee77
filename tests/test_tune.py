"""crossdyn tune of the biped's balance and robustness maps: deterministic, resumable sweeps, locally or on Dask.

The sweeps here are tiny (a few 1 s balance runs, which do not settle: the
outcomes are still recorded) so the file stays within its time budget; the
64-sample sweep that picks real gains is run from the CLI, not here.
"""

from __future__ import annotations

import csv
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crossdyn.experiments.biped import tune as biped
from crossdyn.experiments.biped.scenarios import WEIGHTS
from crossdyn.experiments.core import isolation
from crossdyn.experiments.core.cli import main
from crossdyn.experiments.core.errors import ParameterError
from crossdyn.experiments.core.registry import experiments
from crossdyn.experiments.core.runner import Context
from crossdyn.experiments.core.sweep import engine as engines
from crossdyn.experiments.core.sweep import space
from crossdyn.experiments.core.sweep.engine import TuneEngine
from crossdyn.experiments.core.sweep.experiment import Job, JobBatch, evaluate, failed_row, tune

SWEEP = dict(samples=3, seed=5, fixed={"duration_s": "1.0"}, plots=False)  # 4 runs of 1 s: fast, and enough to
# reorder across workers


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The sweep on one worker process: the CSV every other engine must reproduce."""
    out = tmp_path_factory.mktemp("reference")
    result = tune(biped.BALANCE, out, **SWEEP)
    return out / "samples.csv", result


def test_reference_sweep_rows(reference):
    path, result = reference
    rows = _rows(path)
    assert [r["sample"] for r in rows] == ["0", "1", "2", "3"] and {r["kind"] for r in rows[1:]} == {"lhs"}
    assert [v.name for v in result.space] == list(WEIGHTS)  # the declared tune: every weight in its range
    assert rows[0]["kind"] == "default" and [float(rows[0][w]) for w in WEIGHTS] == [20.0, 10.0, 100.0, 1.0, 1.0]
    assert all(biped.RANGES[w][0] <= float(r[w]) <= biped.RANGES[w][1] for r in rows[1:] for w in WEIGHTS)
    assert all(r["outcome"] for r in rows) and all(r["k_theta"] for r in rows)
    assert result.computed == 4 and result.resumed == 0
    header = path.read_text().splitlines()[0]
    assert "wall" not in header and "time_s" not in header.replace("settling_time_s", "")  # no timings in the CSV
    assert len(_rows(path.parent / "timings.csv")) == 4


def test_same_seed_same_csv_with_two_workers(reference, tmp_path, capsys):
    path, _ = reference
    argv = ["tune", biped.BALANCE, "--samples", "3", "--seed", "5", "--set", "duration_s=1.0", "--workers", "2",
            "--no-progress", "--out", str(tmp_path)]
    assert main(argv) in (0, 1)  # 1: no sample settled in 1 s, so nothing to recommend
    assert (tmp_path / "samples.csv").read_bytes() == path.read_bytes()
    assert len({r["where"] for r in _rows(tmp_path / "timings.csv")}) == 2  # both workers took samples
    assert "tune biped-balance-tune: 4 runs (3 Latin-hypercube over q_x" in capsys.readouterr().out
    for png in ("objective.png", "pareto.png"):
        assert (tmp_path / png).stat().st_size > 0
    # ... and the seed matters: another seed draws other weights.
    exp = experiments()[biped.BALANCE]
    ranges = space.parse_vary(exp.default_tune["vary"], exp.params, exp.name)
    assert space.plan(ranges, "lhs", 3, seed=6) != space.plan(ranges, "lhs", 3, seed=5)
    assert [values[w] for _, values in space.plan(ranges, "lhs", 3, seed=5) for w in WEIGHTS] == \
        [float(r[w]) for r in _rows(path)[1:] for w in WEIGHTS]  # the plan is the table's


def test_dask_local_cluster_gives_the_same_csv(reference, tmp_path):
    distributed = pytest.importorskip("distributed")
    path, _ = reference
    # Loopback TCP, workers as threads in this process: the real client/scheduler
    # path without paying for worker processes.
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        result = tune(biped.BALANCE, tmp_path, engine=TuneEngine(scheduler=cluster.scheduler_address), **SWEEP)
    assert result.computed == 4
    assert (tmp_path / "samples.csv").read_bytes() == path.read_bytes()


def test_resume_runs_only_the_missing_samples(reference, tmp_path):
    path, _ = reference
    lines = path.read_text().splitlines(keepends=True)
    # As if killed halfway: two rows finished (out of order), a third torn mid-write.
    (tmp_path / "samples.csv").write_text(lines[0] + lines[3] + lines[1] + lines[4][:30])
    result = tune(biped.BALANCE, tmp_path, **SWEEP)
    assert (result.resumed, result.computed) == (2, 2)
    assert sorted(r["sample"] for r in _rows(tmp_path / "timings.csv")) == ["1", "3"]
    assert (tmp_path / "samples.csv").read_bytes() == path.read_bytes()
    again = tune(biped.BALANCE, tmp_path, **SWEEP)
    assert (again.resumed, again.computed) == (4, 0)
    shutil.copy(path, tmp_path / "samples.csv")
    with pytest.raises(ParameterError, match="other arguments"):  # another seed draws other weights
        tune(biped.BALANCE, tmp_path, **{**SWEEP, "seed": 6})


def _context(name=biped.BALANCE, seed=0, **values):
    exp = experiments()[name]
    params = {k: p.default for k, p in exp.params.items()} | {"duration_s": 1.0} | values
    return exp, Context(name, Path("unused"), seed=seed, params=params, plots=False)


def test_failures_are_outcomes_not_crashes(monkeypatch):
    exp, ctx = _context(q_x=0.0, q_xd=0.0, q_theta=0.0, q_thetad=0.0)
    with pytest.raises(ParameterError, match="LQR"):  # no stabilizing design: the run's error, its row says it
        exp.run(ctx)
    exp, ctx = _context(initial_tilt_deg=0.0, push_impulse_Ns=60.0)  # three times push-recovery's limit
    fell = exp.run(ctx)
    assert fell["measured"].startswith("fell,") and math.isinf(fell["settling_time_s"]) and not fell["passed"]
    # Balance held (3 s is past the defaults' 2.3 s settling), but the extra push run falls.
    exp, ctx = _context(duration_s=3.0, push_check_Ns=60.0)
    pushed = exp.run(ctx)
    assert pushed["measured"].startswith("push-failed,") and pushed["push_recovered"] is False
    assert pushed["settling_time_s"] < 3.0 and not pushed["passed"]

    def boom(*args, **kwargs):
        raise RuntimeError("simulated crash")

    monkeypatch.setattr(biped, "simulate", boom)
    job = Job(1, "grid", biped.BALANCE, (), (("duration_s", 1.0),), ())
    crashed = evaluate(job)
    assert crashed["outcome"] == "error" and "simulated crash" in crashed["detail"]


def test_a_batch_gives_each_run_what_it_gives_alone(monkeypatch):
    """Runs stepped together on MuJoCo's batch give what they give alone: two robots (CoM offsets), gyro noise,
    a push in the run and a push check after it, an invalid design among them; none is run alone."""
    cells = [{"com_offset_x": 0.02, "gyro_noise": 0.01, "push_check_Ns": 5.0},
             {"initial_tilt_deg": 0.0, "push_impulse_Ns": 10.0}, {"initial_tilt_deg": 0.0, "push_check_Ns": 5.0},
             {"q_x": 0.0, "q_xd": 0.0, "q_theta": 0.0, "q_thetad": 0.0}]
    exp = experiments()[biped.BALANCE]
    contexts = [_context(seed=3, **{**w, **cell})[1] for w in ({}, {"q_theta": 300.0}) for cell in cells]

    def alone(ctx):
        try:
            return exp.run(ctx)
        except ParameterError as exc:
            return exc

    each = [alone(ctx) for ctx in contexts]
    assert {r.get("push_recovered") for r in each if isinstance(r, dict)} == {None, True}  # the push checks ran
    monkeypatch.setattr(biped, "simulate", lambda *a, **k: pytest.fail("a batch ran a run alone"))
    together = exp.batch(contexts)
    assert [str(r) if isinstance(r, Exception) else r for r in together] == \
        [str(r) if isinstance(r, Exception) else r for r in each]
    assert isinstance(together[3], ParameterError) and together[:1] != together[1:2]  # the comparison can fail


def test_robustness_map(tmp_path, capsys):
    argv = ["tune", biped.ROBUSTNESS, "--set", "r=2", "--vary", "body_mass_scale=1,2", "--vary", "initial_tilt_deg=5",
            "--search", "grid", "--set", "duration_s=1.0", "--workers", "1", "--no-progress", "--out", str(tmp_path)]
    assert main(argv) == 0
    rows = _rows(tmp_path / "samples.csv")
    assert [(r["body_mass_scale"], r["initial_tilt_deg"]) for r in rows[1:]] == [("1.0", "5.0"), ("2.0", "5.0")]
    assert (tmp_path / "map.png").stat().st_size > 0
    assert "body_mass_scale=1: passes for initial_tilt_deg" in capsys.readouterr().out
    # A passing cell holds without settling in 1 s: the map judges holding, not balance's settling.
    held = [r for r in rows if r["passed"] == "true"]
    assert held and all(math.isinf(float(r["settling_time_s"])) for r in held)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    "args,message",
    [
        (["--vary", "q_z=1,2"], "has no parameter 'q_z' to vary"),
        (["--vary", "q_theta=10,-5", "--search", "grid"], "out of range"),
        (["--vary", "r="], "a list of values"),
        (["--vary", "q_x=0:10:log"], "a log range needs LO > 0"),
        (["--vary", "q_x=1,2"], "a list of values is an axis of a grid"),
        (["--set", "r=2"], "r is both --set and --vary"),
        (["--samples", "2", "--scheduler", "localhost"], "expected tcp://HOST:PORT"),
        (["--samples", "2", "--scheduler", "tcp://127.0.0.1:{port}"], "cannot reach the Dask scheduler"),
    ],
)
def test_bad_input_one_line_exit_2(tmp_path, capsys, monkeypatch, args, message):
    pytest.importorskip("distributed")
    monkeypatch.setattr(engines, "CONNECT_TIMEOUT", "1s")  # nothing listens there; no need to wait long
    args = [a.format(port=_closed_port()) for a in args]
    if args[:2] == ["--set", "r=2"]:  # --set of a declared range leaves it out, but not of one given to --vary
        args += ["--vary", "r=0.5:2"]
    assert main(["tune", biped.BALANCE, *args, "--no-progress", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    assert not (tmp_path / "out").exists()  # nothing written, nothing run


def _children(pid: int) -> set[int]:
    """Live processes whose parent is ``pid`` (from /proc)."""
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.add(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_killing_the_sweep_leaves_no_worker_alive(tmp_path, sig):
    """Workers of a killed sweep are gone within a few seconds."""
    proc = subprocess.Popen([sys.executable, "-m", "crossdyn.experiments", "tune", biped.BALANCE, "--samples", "40",
                             "--set", "duration_s=2", "--workers", "2", "--no-progress", "--out", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "MPLBACKEND": "Agg"})
    try:
        deadline = time.monotonic() + 60
        while len(workers := _children(proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(workers) >= 2, "the sweep never started its workers"
        time.sleep(1.0)  # let them take samples
        proc.send_signal(sig)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 5
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(w) for w in workers), f"workers {workers} outlived the parent"
        if sig == signal.SIGTERM:  # handled as an interruption: one line, finished samples kept
            err = proc.stderr.read().decode()
            assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    finally:
        proc.kill()
        proc.wait()


def test_a_batch_whose_worker_ended_is_a_row_per_run():
    jobs = tuple(Job(i, "lhs", biped.BALANCE, (), (("q_x", float(i + 1)),), ("q_x",)) for i in range(3))
    crashed = isolation.Done(None, isolation.CRASHED, how="signal SIGSEGV")
    rows = failed_row(JobBatch(jobs), crashed)
    assert [row["sample"] for row in rows] == ["0", "1", "2"] and [row["q_x"] for row in rows] == ["1.0", "2.0", "3.0"]
    assert all(row["outcome"] == "crashed" and "signal SIGSEGV" in row["detail"] for row in rows)
