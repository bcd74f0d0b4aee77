"""crossdyn tune: deterministic, resumable sweeps, locally or on a Dask cluster.

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

from crossdyn.experiments.biped import tune
from crossdyn.experiments.core.cli import main
from crossdyn.experiments.core.errors import ParameterError
from crossdyn.experiments.core.sweep import engine as engines
from crossdyn.experiments.core.sweep.run import Batch

SWEEP = dict(samples=3, seed=5, duration=1.0)  # 4 runs of 1 s: fast, and enough to reorder across workers


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The sweep on one worker process: the CSV every other engine must reproduce."""
    out = tmp_path_factory.mktemp("reference")
    result = tune.sweep(out, workers=1, plots_=False, **SWEEP)
    return out / "samples.csv", result


def test_reference_sweep_rows(reference):
    path, result = reference
    rows = _rows(path)
    assert [r["sample"] for r in rows] == ["0", "1", "2", "3"]
    assert rows[0]["kind"] == "default" and [float(rows[0][w]) for w in tune.WEIGHTS] == [20.0, 10.0, 100.0, 1.0, 1.0]
    assert all(r["outcome"] for r in rows) and all(r["k_theta"] for r in rows)
    assert result.computed == 4 and result.resumed == 0
    header = path.read_text().splitlines()[0]
    assert "wall" not in header and "time_s" not in header.replace("settling_time_s", "")  # no timings in the CSV
    assert len(_rows(path.parent / "timings.csv")) == 4


def test_same_seed_same_csv_with_two_workers(reference, tmp_path, capsys):
    path, _ = reference
    argv = ["tune", "balance", "--samples", "3", "--seed", "5", "--duration", "1.0", "--workers", "2",
            "--no-progress", "--out", str(tmp_path)]
    assert main(argv) in (0, 1)  # 1: no sample settled in 1 s, so nothing to recommend
    assert (tmp_path / "samples.csv").read_bytes() == path.read_bytes()
    assert len({r["where"] for r in _rows(tmp_path / "timings.csv")}) == 2  # both workers took samples
    assert "tune balance: 4 samples" in capsys.readouterr().out
    for png in ("pareto.png", "weights.png"):
        assert (tmp_path / png).stat().st_size > 0
    # ... and the seed matters: another seed draws other weights.
    other = tune.plan_sweep(3, None, seed=6, duration=1.0)
    assert [s.key() for s in other[1:]] != [s.key() for s in tune.plan_sweep(**SWEEP)[1:]]


def test_dask_local_cluster_gives_the_same_csv(reference, tmp_path):
    distributed = pytest.importorskip("distributed")
    path, _ = reference
    # Loopback TCP, workers as threads in this process: the real client/scheduler
    # path without paying for worker processes.
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        result = tune.sweep(tmp_path, scheduler=cluster.scheduler_address, plots_=False, **SWEEP)
    assert result.computed == 4
    assert (tmp_path / "samples.csv").read_bytes() == path.read_bytes()


def test_resume_runs_only_the_missing_samples(reference, tmp_path):
    path, _ = reference
    lines = path.read_text().splitlines(keepends=True)
    # As if killed halfway: two rows finished (out of order), a third torn mid-write.
    (tmp_path / "samples.csv").write_text(lines[0] + lines[3] + lines[1] + lines[4][:30])
    result = tune.sweep(tmp_path, workers=1, plots_=False, **SWEEP)
    assert (result.resumed, result.computed) == (2, 2)
    assert sorted(r["sample"] for r in _rows(tmp_path / "timings.csv")) == ["1", "3"]
    assert (tmp_path / "samples.csv").read_bytes() == path.read_bytes()
    again = tune.sweep(tmp_path, workers=1, plots_=False, **SWEEP)
    assert (again.resumed, again.computed) == (4, 0)


def test_resume_refuses_a_csv_from_other_arguments(reference, tmp_path):
    path, _ = reference
    shutil.copy(path, tmp_path / "samples.csv")
    with pytest.raises(ParameterError, match="other arguments"):
        tune.sweep(tmp_path, workers=1, plots_=False, **{**SWEEP, "seed": 6})


def _sample(weights=None, **perturbation):
    return tune.Sample(0, "map", {**tune.DEFAULT_WEIGHTS, **(weights or {})}, {**tune.NOMINAL, **perturbation},
                       duration=1.0)


def test_failures_are_outcomes_not_crashes(monkeypatch):
    # No stabilizing LQR without any state weight.
    invalid = tune.evaluate(_sample({"q_x": 0.0, "q_xd": 0.0, "q_theta": 0.0, "q_thetad": 0.0}))
    assert invalid["outcome"] == "invalid" and "LQR" in invalid["detail"]
    # A 60 N s shove (three times push-recovery's limit): it falls.
    fell = tune.evaluate(_sample(initial_tilt_deg=0.0, push_impulse_Ns=60.0))
    assert fell["outcome"] == "fell" and math.isinf(float(fell["settling_time_s"]))

    # Balance held (3 s is past the defaults' 2.3 s settling), but the extra push run falls.
    pushed = tune.evaluate(tune.Sample(0, "grid", dict(tune.DEFAULT_WEIGHTS), dict(tune.NOMINAL), duration=3.0,
                                       push_check=60.0))
    assert pushed["outcome"] == "push-failed" and pushed["push_recovered"] == "false"
    assert float(pushed["settling_time_s"]) < 3.0

    def boom(*args, **kwargs):
        raise RuntimeError("simulated crash")

    monkeypatch.setattr(tune, "simulate", boom)
    crashed = tune.evaluate(_sample())
    assert crashed["outcome"] == "error" and "simulated crash" in crashed["detail"]


def test_a_batch_gives_each_sample_its_own_row(monkeypatch):
    """Samples stepped together on MuJoCo's batch give the rows they give alone: two robots (CoM offsets),
    gyro noise, a push in the run and a push check after it; nothing falls back to running alone."""
    weights = [dict(tune.DEFAULT_WEIGHTS), {**tune.DEFAULT_WEIGHTS, "q_theta": 300.0}]
    cells = [{"com_offset_x": 0.02, "gyro_noise": 0.01}, {"initial_tilt_deg": 0.0, "push_impulse_Ns": 10.0},
             {"initial_tilt_deg": 0.0}]
    plan = [tune.Sample(i, "grid", w, {**tune.NOMINAL, **cell}, duration=1.0, push_check=5.0 if len(cell) == 1 else 0.0,
                        seed=3)
            for i, (w, cell) in enumerate((w, c) for w in weights for c in cells)]
    alone = [tune.evaluate(s) for s in plan]
    assert {r["push_recovered"] for r in alone} == {"", "true"}  # the push checks ran
    ran_alone = []
    monkeypatch.setattr(tune, "evaluate", lambda s: ran_alone.append(s) or {})
    assert tune.evaluate_batch(Batch(tuple(plan))) == alone
    assert ran_alone == []  # the batch ran, it did not fall back
    assert tune.evaluate_batch(Batch(tuple(plan[:1]))) != alone[1:2]  # the comparison can fail


def test_best_sample_rule():
    def row(i, outcome, settle, effort):
        return {"sample": str(i), "kind": "default" if i == 0 else "lhs", "outcome": outcome,
                "settling_time_s": repr(settle), "effort_N2m2s": repr(effort)}

    rows = [row(0, "ok", 2.3, 0.23), row(1, "ok", 1.2, 0.70), row(2, "ok", 1.5, 0.22), row(3, "fell", 0.1, 0.01),
            row(4, "saturated", 1.0, 0.1), row(5, "ok", 1.5, 0.20)]
    assert tune.best_sample(rows)["sample"] == "5"  # fastest with effort <= the defaults', tie to lower effort
    assert tune.best_sample([row(0, "ok", 2.3, 0.1), row(1, "ok", 1.2, 0.7)])["sample"] == "0"  # none thriftier
    assert tune.best_sample([row(0, "fell", math.inf, 0.1), row(1, "ok", 1.2, 0.7)])["sample"] == "1"
    assert tune.best_sample([row(0, "fell", math.inf, 0.1)]) is None


def test_robustness_map(tmp_path, capsys):
    argv = ["tune", "robustness", "--weight", "r=2", "--axis", "body_mass_scale=1,2", "--axis", "initial_tilt_deg=5",
            "--duration", "1.0", "--workers", "1", "--no-progress", "--out", str(tmp_path)]
    assert main(argv) == 0
    rows = _rows(tmp_path / "robustness.csv")
    assert [(r["body_mass_scale"], r["initial_tilt_deg"], r["r"]) for r in rows] == [("1.0", "5.0", "2.0"),
                                                                                      ("2.0", "5.0", "2.0")]
    assert (tmp_path / "robustness.png").stat().st_size > 0
    assert "holds in" in capsys.readouterr().out


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    "args,message",
    [
        (["balance", "--grid", "q_z=1,2"], "unknown LQR weight 'q_z'"),
        (["balance", "--grid", "q_theta=10,-5"], "out of range"),
        (["balance", "--grid", "r="], "empty"),
        (["balance", "--range", "q_x=0:10"], "0 < low"),
        (["robustness", "--axis", "body_mass_scale=1,2"], "exactly two"),
        (["robustness", "--axis", "gravity=1", "--axis", "initial_tilt_deg=5"], "unknown perturbation"),
        (["balance", "--samples", "2", "--scheduler", "localhost"], "expected tcp://HOST:PORT"),
        (["balance", "--samples", "2", "--scheduler", "tcp://127.0.0.1:{port}"], "cannot reach the Dask scheduler"),
    ],
)
def test_bad_input_one_line_exit_2(tmp_path, capsys, monkeypatch, args, message):
    pytest.importorskip("distributed")
    monkeypatch.setattr(engines, "CONNECT_TIMEOUT", "1s")  # nothing listens there; no need to wait long
    args = [a.format(port=_closed_port()) for a in args]
    assert main(["tune", *args, "--no-progress", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    assert not (tmp_path / "out").exists()  # nothing written, nothing run


def test_huge_sweeps_are_refused_before_anything_is_allocated():
    """Issue 15 #2: 1e8 samples (19 GB before one ran) is refused at once, by the API as by the CLI."""
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ParameterError, match="100,000"):
        tune.plan_sweep(100_000_000, None, seed=0)
    with pytest.raises(ParameterError, match="combinations"):
        tune.plan_sweep(None, tune.parse_values([("q_x", "1:2:1000"), ("q_xd", "1:2:1000")]))
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000  # kB: nothing big was built
    assert len(tune.plan_sweep(tune.SAMPLES_MAX, None, seed=0)) == tune.SAMPLES_MAX + 1  # the cap itself plans


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
    """Issue 15 #5: workers of a killed sweep are gone within a few seconds."""
    proc = subprocess.Popen([sys.executable, "-m", "crossdyn.experiments", "tune", "balance", "--samples", "40",
                             "--duration", "2", "--workers", "2", "--no-progress", "--out", str(tmp_path)],
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
    from crossdyn.experiments.core import isolation
    from crossdyn.experiments.core.sweep import run as sweep_run

    plan = tune.plan_sweep(**SWEEP)
    from crossdyn.experiments.core.registry import tunings

    balance = tunings()[tune.BALANCE].tuning
    crashed = isolation.Done(None, isolation.CRASHED, how="signal SIGSEGV")
    rows = balance.ended(sweep_run.Batch(tuple(plan[:3])), crashed)
    assert [row["sample"] for row in rows] == ["0", "1", "2"]
    assert all(row["outcome"] == "crashed" and "signal SIGSEGV" in row["detail"] for row in rows)
