"""crossdyn tune EXPERIMENT: a user's own experiment (its own MJCF and controller) swept, searched and mapped."""

from __future__ import annotations

import csv
import json
import re
import textwrap

import pytest

from crossdyn.experiments.core.cli import main
from crossdyn.experiments.core.sweep.choice import best_row
from crossdyn.experiments.core.sweep.engine import TuneEngine
from crossdyn.experiments.core.sweep.experiment import tune

# A pendulum on a motor, swung to a target by the user's PD controller; its defaults are sluggish.
USER_FILE = textwrap.dedent('''
    import numpy as np
    from crossdyn import Param, experiment, simulate

    ARM = """
    <mujoco><option timestep="0.002"/>
      <worldbody><body name="link"><joint name="hinge" axis="0 -1 0" damping="0.05"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.02" mass="1"/></body></worldbody>
      <actuator><motor name="motor" joint="hinge" ctrlrange="-15 15" ctrllimited="true"/></actuator>
      <sensor><jointpos name="angle" joint="hinge"/><jointvel name="rate" joint="hinge"/></sensor>
    </mujoco>
    """


    @experiment("swing-pd", summary="PD swings a pendulum to a target", expected="within 1 deg in 2 s",
                params={"kp": Param(10.0, "proportional gain, N m/rad", 0.0, 500.0),
                        "kd": Param(3.0, "derivative gain, N m s/rad", 0.0, 50.0),
                        "target_deg": Param(40.0, "target, deg", -90.0, 90.0)})
    def swing_pd(ctx):
        import mujoco
        model = mujoco.MjModel.from_xml_string(ARM)
        target, kp, kd = np.radians(ctx.params["target_deg"]), ctx.params["kp"], ctx.params["kd"]

        def pd(t, obs):
            hold = obs.data.qfrc_bias[0]  # gravity compensation, as MuJoCo computes it
            return np.array([kp * (target - obs.sensor("angle")[0]) - kd * obs.sensor("rate")[0] + hold])

        trace = simulate(model, pd, 2.0, control_dt=0.004)
        error = np.abs(trace.qpos[:, 0] - target)
        outside = np.flatnonzero(error > np.radians(1.0))
        settle = float(trace.t[outside[-1]] + 0.004) if outside.size else 0.0
        return {"passed": bool(settle < 2.0 - 1e-9), "measured": f"settled in {settle:.3f} s",
                "settle_s": settle if settle < 2.0 - 1e-9 else float("inf"),
                "peak_torque": float(np.abs(trace.command).max())}  # asked: trace.ctrl is clamped to 15
''')


@pytest.fixture(scope="module")
def user_file(tmp_path_factory):
    """One file for the module: a second file registering 'swing-pd' in this process would be refused."""
    path = tmp_path_factory.mktemp("user") / "my_experiments.py"
    path.write_text(USER_FILE)
    return str(path)


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_a_search_finds_better_than_the_defaults_and_a_rerun_runs_nothing(user_file, tmp_path, capsys):
    out = tmp_path / "search"
    args = ["tune", "swing-pd", "--from", user_file, "--vary", "kp=1:300:log", "--vary", "kd=0.05:20:log",
            "--minimize", "settle_s", "--constraint", "peak_torque<=15", "--search", "optuna", "--samples", "24",
            "--workers", "1", "--seed", "0", "--out", str(out), "--no-progress"]
    assert main(args) == 0
    first = capsys.readouterr().out
    best = json.loads((out / "best.json").read_text())
    assert best["defaults"]["sample"] == 0 and best["best"]["sample"] > 0
    # The defaults settle in 1.05 s; seed 0 finds 0.42 s within the torque bound (LHS and TPE do about as well).
    assert best["best"]["settle_s"] < 0.5 * best["defaults"]["settle_s"]
    assert best["best"]["peak_torque"] <= 15
    # best.json carries every metric of the best run, and no parameter among them.
    assert set(best["best"]["metrics"]) == set(best["defaults"]["metrics"]) == {"settle_s", "peak_torque"}
    assert best["best"]["metrics"]["settle_s"] == best["best"]["settle_s"]
    rows = _rows(out / "samples.csv")
    assert len(rows) == 25 and rows[0]["kind"] == "default" and {r["kind"] for r in rows[1:]} == {"optuna"}
    assert {"kp", "kd", "passed", "outcome", "settle_s", "peak_torque"} <= rows[0].keys()
    # The same command again: every trial is read back, none run.
    assert main(args) == 0
    again = capsys.readouterr().out
    assert " 0 run in" in again and "25 resumed" in again  # the defaults' row too
    assert "25 run in" in first and "0 resumed" in first
    assert _rows(out / "samples.csv") == rows
    for name in ("objective.png", "progress.png", "timings.csv"):
        assert (out / name).is_file()


def test_the_same_seed_gives_the_same_table_whatever_the_worker_count(user_file, tmp_path):
    tables = []
    for workers in (1, 2):
        out = tmp_path / f"lhs{workers}"
        tune("swing-pd", out, vary=["kp=1:300:log", "kd=0.05:20:log"], minimize="settle_s", samples=6, seed=5,
             sources=(user_file,), engine=TuneEngine(workers=workers))
        tables.append((out / "samples.csv").read_text())
    assert tables[0] == tables[1]


def test_a_grid_of_two_parameters_is_a_map(user_file, tmp_path):
    result = tune("swing-pd", tmp_path / "map", vary=["kp=2:200:log", "kd=0.05:20:log"], search="grid",
                  samples=16, sources=(user_file,))
    assert len(result.rows) == 17 and result.files == ["map.png", "map.json"]
    assert (result.computed, result.resumed) == (17, 0)
    summary = json.loads((tmp_path / "map" / "map.json").read_text())
    assert summary["axes"]["kp"][0] == pytest.approx(2.0) and len(summary["axes"]["kd"]) == 4
    held = {(round(a, 6), round(b, 6)) for a, b in summary["holding_region"]["held_cells"]}
    passed = {(round(float(r["kp"]), 6), round(float(r["kd"]), 6)) for r in result.rows[1:] if r["outcome"] == "pass"}
    assert held == passed and 0 < len(held) < 16  # some gains settle within 2 s, some do not


def test_best_row_needs_a_pass_and_the_constraints():
    rows = [{"sample": "0", "outcome": "pass", "m": "3", "c": "1"},
            {"sample": "1", "outcome": "fail", "m": "1", "c": "1"},
            {"sample": "2", "outcome": "pass", "m": "2", "c": "5"},
            {"sample": "3", "outcome": "pass", "m": "2.5", "c": "2"},
            {"sample": "4", "outcome": "error", "m": "", "c": ""}]
    assert best_row(rows, "m", [])["sample"] == "2"
    assert best_row(rows, "m", [("c", "<=", 2.0)])["sample"] == "3"
    assert best_row(rows, "m", [("c", ">=", 9.0)]) is None


@pytest.mark.parametrize("extra, message", [
    (["--vary", "kq=1:2"], "has no parameter 'kq' to vary"),
    (["--vary", "kp=1:900"], r"outside the parameter's range \[0, 500\]"),
    (["--vary", "kp=0:9:log"], "a log range needs LO > 0"),
    (["--vary", "kp=5:1"], "need finite LO <= HI"),
    (["--vary", "kp=1-2"], "expected LO:HI or LO:HI:log"),
    (["--vary", "kp=1:2", "--minimize", "settle"], "has no numeric metric 'settle'"),
    (["--vary", "kp=1:2", "--constraint", "peak_torque<15"], "expected METRIC<=VALUE"),
    (["--vary", "kp=1:2", "--search", "grid", "--samples", "1"], "needs --samples >= 2"),
    (["--vary", "kp=1:2", "--sampler", "gp"], "--sampler is for --search optuna"),
    (["--vary", "kp=1:2", "--search", "optuna"], "--search optuna needs --minimize"),
    (["--vary", "kp=1:2", "--set", "kp=3"], "kp is both --set and --vary"),
    (["--vary", "kp=1:2", "--set", "target_deg=900"], "out of range"),
])
def test_bad_tune_input_is_one_line_exit_2(user_file, tmp_path, capsys, extra, message):
    args = ["tune", "swing-pd", "--from", user_file, "--samples", "2", "--out", str(tmp_path / "o"), *extra]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert message in err or __import__("re").search(message, err), err


FAULTY = textwrap.dedent('''
    import os, time
    from crossdyn import Param, experiment

    @experiment("faulty", summary="crashes above 2, hangs above 3", expected="-",
                params={"x": Param(1.0, "-", 0.0, 10.0), "z": Param(0.0, "-", 0.0, 1.0)})
    def faulty(ctx):
        x = ctx.params["x"]
        if x > 3:
            time.sleep(600)
        if x > 2:
            os._exit(0)
        return {"passed": True, "measured": f"x {x}", "y": x * x}
''')


@pytest.fixture(scope="module")
def faulty_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("faulty") / "faulty_experiments.py"
    path.write_text(FAULTY)
    return path


def test_a_run_that_crashes_or_hangs_is_a_row_and_the_tune_goes_on(faulty_file, tmp_path):
    """Each run is isolated: os._exit(0) is 'crashed', a hang past --timeout is 'timed out', the rest are kept."""
    path = faulty_file
    out = tmp_path / "t"
    args = ["tune", "faulty", "--from", str(path), "--vary", "x=0:4", "--search", "grid", "--samples", "5",
            "--minimize", "y", "--timeout", "5", "--workers", "2", "--out", str(out), "--no-progress"]
    assert main(args) == 0
    rows = {float(r["x"]): r for r in _rows(out / "samples.csv") if r["kind"] == "grid"}
    assert {x: r["outcome"] for x, r in rows.items()} == {0.0: "pass", 1.0: "pass", 2.0: "pass", 3.0: "crashed",
                                                         4.0: "timed out"}
    assert "exit status 0" in rows[3.0]["detail"] and "timed out after 5 s" in rows[4.0]["detail"]
    assert json.loads((out / "best.json").read_text())["best"]["params"] == {"x": 0.0}


def test_a_defaults_run_that_crashes_is_refused_in_one_line(faulty_file, tmp_path, capsys):
    path = faulty_file
    assert main(["tune", "faulty", "--from", str(path), "--vary", "z=0:1", "--set", "x=2.5", "--samples", "1",
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the defaults run of 'faulty' failed: its process ended (exit status 0)" in err
    assert not (tmp_path / "o" / "samples.csv").exists()


# A short tune of a built-in experiment, made once and copied into each test that damages or holds it.
SMALL_TUNE = ["tune", "cart-pole-lqr", "--vary", "r=0.1:1", "--samples", "2", "--short", "--workers", "1",
              "--no-progress"]


@pytest.fixture(scope="module")
def small_tune(tmp_path_factory):
    out = tmp_path_factory.mktemp("small") / "tune"
    assert main([*SMALL_TUNE, "--out", str(out)]) == 0
    return out


def _copy(folder, to):
    import shutil

    shutil.copytree(folder, to)
    return to


def test_a_torn_last_row_is_run_again_not_kept(small_tune, tmp_path, capsys):
    """A last row cut mid-number (no newline: a full disk, a power loss) still parses; it is run again."""
    out = _copy(small_tune, tmp_path / "tune")
    whole = (out / "samples.csv").read_text()
    torn = whole[:-12]  # the last row loses the end of its last number and its newline
    assert torn.count("\n") == whole.count("\n") - 1 and torn.rsplit(",", 1)[1].replace(".", "").lstrip("-").isdigit()
    (out / "samples.csv").write_text(torn)
    capsys.readouterr()
    assert main([*SMALL_TUNE, "--out", str(out)]) == 0
    assert "1 run in" in capsys.readouterr().out  # the torn run, and only it
    assert (out / "samples.csv").read_text() == whole


@pytest.mark.parametrize("column, damage, message", [
    ("decay_rate_measured", "-1.2x", "decay_rate_measured='-1.2x' is not a number"),
    ("outcome", "pas", "outcome='pas' is none of crashed, error, fail, pass, timed out"),
    ("passed", "yes", "passed='yes' is none of false, true"),
])
def test_a_damaged_resumed_row_is_refused_in_one_line(small_tune, tmp_path, capsys, column, damage, message):
    out = _copy(small_tune, tmp_path / "tune")
    rows = _rows(out / "samples.csv")
    rows[1][column] = damage
    with open(out / "samples.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    before = (out / "samples.csv").read_text()
    capsys.readouterr()
    assert main([*SMALL_TUNE, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"samples.csv line 3 is damaged: {message}" in err, err
    assert (out / "samples.csv").read_text() == before


def test_a_second_tune_into_the_same_out_is_refused(small_tune, tmp_path, capsys):
    """While one tune holds --out (here: this test, as another process would), a second is refused; after, it runs."""
    from crossdyn.experiments.core.sweep import table

    out = _copy(small_tune, tmp_path / "tune")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    capsys.readouterr()
    with table.locked(out):
        assert main([*SMALL_TUNE, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "is in use by another tune" in err, err
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert main([*SMALL_TUNE, "--out", str(out)]) == 0  # the lock is let go with the first
    assert "0 run in" in capsys.readouterr().out


def test_two_tunes_at_once_into_one_out_one_is_refused(tmp_path):
    """Two real processes started together: one finishes, the other is refused in one line; no row is lost."""
    import os
    import subprocess
    import sys

    out = tmp_path / "tune"
    command = [sys.executable, "-m", "crossdyn.experiments", *SMALL_TUNE, "--out", str(out)]
    env = {**os.environ, "MPLBACKEND": "Agg"}
    procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(2)]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 2], results
    refused = next(err for code, _, err in results if code == 2)
    assert refused.count("\n") == 1 and "is in use by another tune" in refused, refused
    assert len(_rows(out / "samples.csv")) == 3


def test_a_line_per_finished_batch_off_a_terminal(tmp_path, capsys):
    """Printing to a CI log, ``crossdyn tune`` says each batch of runs as it finishes (4 runs in 2 batches)."""
    assert main(["tune", "cart-pole-lqr", "--vary", "q_angle=1:1000:log", "--vary", "r=0.000001:1:log", "--search",
                 "grid", "--samples", "4", "--short", "--workers", "1", "--out", str(tmp_path / "grid")]) == 0
    printed = capsys.readouterr().out.splitlines()
    lines = [line for line in printed if line.startswith("tune cart-pole-lqr: ") and " runs, " in line]
    failed = sum(row["outcome"] != "pass" for row in _rows(tmp_path / "grid" / "samples.csv"))
    assert len(lines) == 2 and re.fullmatch(r"tune cart-pole-lqr: 3/5 runs, \d failed", lines[0]), printed
    assert lines[1] == f"tune cart-pole-lqr: 5/5 runs, {failed} failed" and failed > 0, printed  # the defaults' too
    assert main(["tune", "cart-pole-lqr", "--vary", "q_angle=1:1000:log", "--vary", "r=0.000001:1:log", "--search",
                 "grid", "--samples", "4", "--short", "--workers", "1", "--out", str(tmp_path / "grid"),
                 "--no-progress"]) == 0  # resumed, and asked for no progress: no line
    assert not [line for line in capsys.readouterr().out.splitlines() if " runs, " in line]
