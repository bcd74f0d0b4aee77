"""C controllers under the command line: faults cost one result, C globals are experiment parameters.

A user's experiment file (``--from``) runs a C controller that segfaults, aborts or
never returns past t = 10 ms, as ``mode`` says; each is that experiment's
``crashed`` / ``timed out`` result (under ``crossdyn run`` and the pytest plugin)
and the fine one still passes.  The cart-pole's
C LQR exposes its gains as parameters: ``--set`` sets them, ``crossdyn tune``
varies them.
"""

from __future__ import annotations

import csv
import json
import re

import pytest

from test_faults import crossdyn
from test_pytest_plugin import pytest_in

FAULTS_C = """\
#include <stdlib.h>
int mode = 0;

void step(double t, const double *qpos, double *ctrl)
{
    if (t > 0.01) {
        if (mode == 1) *(volatile int *)0 = 1;  /* segfault */
        if (mode == 2) abort();
        if (mode == 3) for (;;) {}            /* never returns */
    }
    ctrl[0] = 0.0 * qpos[0];
}
"""

LQR_C = """\
double k_x = -3.16, k_theta = -49.5, k_xd = -5.91, k_thetad = -12.8;  /* the LQR of the cart-pole experiment */

void step(double t, const double *qpos, const double *qvel, double *ctrl)
{
    (void)t;
    ctrl[0] = -(k_x * qpos[0] + k_theta * qpos[1] + k_xd * qvel[0] + k_thetad * qvel[1]);
}
"""

EXPERIMENTS = """\
from pathlib import Path
from crossdyn import CController, experiment, simulate

HERE = Path(__file__).parent

for name, mode in {"c-segfault": 1, "c-abort": 2, "c-hangs": 3, "c-fine": 0}.items():
    @experiment(name, summary="a C controller that faults", expected="runs")
    def run(ctx, mode=mode):
        c = CController(HERE / "faults.c", "step", inputs=("qpos",))
        c.params["mode"] = mode
        simulate("cart_pole", c, 0.05)
        return {"passed": True, "measured": "ran"}

LQR = CController(HERE / "lqr.c", "step", inputs=("qpos", "qvel"))

@experiment("c-lqr", summary="the cart-pole balanced by C", expected="upright",
            params=LQR.as_params({"k_theta": (-100.0, 100.0)}))
def lqr(ctx):
    c = CController(HERE / "lqr.c", "step", inputs=("qpos", "qvel")).set_params(ctx.params)
    trace = simulate("cart_pole", c, 1.0, keyframe="upright", qpos=[0.0, 0.1])
    tilt = float(abs(trace.qpos[-1, 1]))
    return {"passed": not trace.diverged and tilt < 0.05, "measured": f"tilt {tilt:.3g} rad", "tilt_rad": tilt,
            "k_theta": c.params["k_theta"]}
"""


@pytest.fixture
def user_files(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "faults.c").write_text(FAULTS_C)
    (tmp_path / "lqr.c").write_text(LQR_C)
    (tmp_path / "mine.py").write_text(EXPERIMENTS)
    return tmp_path


def test_segfault_abort_and_endless_loop_each_cost_one_result(user_files):
    run = crossdyn(["run", "--from", "mine.py", "c-segfault", "c-abort", "c-hangs", "c-fine", "--timeout", "4",
                    "--out", "out"], user_files)
    assert run.returncode == 1, run.stdout + run.stderr
    rows = {r["name"]: r for r in json.loads((user_files / "out" / "summary.json").read_text())}
    assert {name: row["measured"] for name, row in rows.items()} == {
        "c-segfault": "crashed", "c-abort": "crashed", "c-hangs": "timed out", "c-fine": "ran"}
    assert run.stderr.splitlines() == [
        "c-segfault: crashed: its process ended (signal SIGSEGV) without returning a result",
        "c-abort: crashed: its process ended (signal SIGABRT) without returning a result",
        "c-hangs: timed out after 4 s (--timeout); its process was stopped"]
    assert rows["c-fine"]["passed"] is True


def test_faults_under_the_pytest_plugin(user_files):
    """--crossdyn-from: the segfaulting C controller's item errors as crashed; the fine one after it passes.

    (The abort and the endless loop take the same worker path as under ``crossdyn run``, tested above.)
    """
    (user_files / "pytest.ini").write_text("[pytest]\n")
    run = pytest_in(user_files, "--crossdyn-from", "mine.py", "-k", "segfault or fine")
    assert run.returncode == 1, run.out
    assert re.search(r"^ERROR mine.py::c-segfault .*crashed", run.stdout, flags=re.M), run.out
    assert re.search(r"^PASSED mine.py::c-fine", run.stdout, flags=re.M), run.out


def test_c_globals_are_set_and_tuned_as_parameters(user_files):
    slipped = crossdyn(["run", "--from", "mine.py", "c-lqr", "--set", "k_theta=49.5", "--out", "slip"], user_files)
    assert slipped.returncode == 1, slipped.stdout + slipped.stderr  # the sign slip: the pole falls
    metrics = json.loads((user_files / "slip" / "c-lqr" / "metrics.json").read_text())
    assert metrics["params"]["k_theta"] == metrics["k_theta"] == 49.5 and metrics["passed"] is False
    tuned = crossdyn(["tune", "c-lqr", "--from", "mine.py", "--vary", "k_theta=-60:-40", "--samples", "2",
                      "--workers", "1", "--no-progress", "--out", "tune"], user_files)
    assert tuned.returncode == 0, tuned.stdout + tuned.stderr
    with open(user_files / "tune" / "samples.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 3 and all(r["outcome"] == "pass" for r in rows)
    varied = [float(r["k_theta"]) for r in rows[1:]]
    assert all(-60 <= k <= -40 for k in varied) and varied == [float(r["metrics.k_theta"]) for r in rows[1:]]


def test_no_compiler_on_the_command_line_is_one_line_exit_2(user_files, monkeypatch):
    monkeypatch.setenv("CROSSDYN_C_CACHE", str(user_files / "empty-cache"))  # nothing compiled yet
    monkeypatch.setenv("CC", "no-such-cc")
    run = crossdyn(["run", "--from", "mine.py", "c-fine", "--out", "out"], user_files)
    assert run.returncode == 2 and len(run.stderr.splitlines()) == 1, run.stderr
    assert "no C compiler found (looked for CC='no-such-cc'): install one (Debian/Ubuntu: apt-get install gcc" \
        in run.stderr and "Traceback" not in run.stderr
    assert not (user_files / "out").exists()
