"""No false pass from the checks: inputs the user's function writes into, states never tried, bad tolerances.

Each test is a way a wrong derivation used to PASS (or a check to end with no
report): a function that zeroes its input was compared with MuJoCo at the zeroed
state; random states stayed within one turn and 10 rad/s, so a derivation wrong
only beyond them passed; ``atol=inf`` passed anything; a hanging function could
not be stopped; MuJoCo's own overflow read as the user's error.

Tolerances are the checks' defaults (1e-9: round-off with four orders of
magnitude to spare); every fault here is 1e-2 or more.  Sample counts are small:
a fault beyond one turn shows at two thirds of the states drawn over three turns.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import crossdyn as cd
from crossdyn.experiments.core.checks.common import sample_states
from crossdyn.experiments.core.errors import DerivationError, ParameterError, StateError
from crossdyn.experiments.core.ranges import TURN, Ranges
from crossdyn.testing import assert_derivation, assert_mass_matrix

HERE = Path(__file__).parent
ARM = HERE / "models" / "arm7.xml"  # 7 hinges: j2, j4 limited, the other five not
N = 30  # states per check

sys.path.insert(0, str(HERE / "derivations"))
import parts  # noqa: E402  (right derivations of every part, crossdyn's own tree algorithms)
import two_link_user  # noqa: E402  (a user's closed-form two-link inverse dynamics)

TREE = parts.TREES["arm"]
RIGHT = {
    "kinematics": lambda q: parts.site_pose(TREE, parts.TOOL, q),
    "jacobian": lambda q: parts.K.point_jacobian(TREE, q, parts.TOOL[0], parts.TOOL[1]),
    "mass-matrix": parts.mass_matrix(TREE),
    "bias": parts.bias(TREE),
    "energy": parts.energy(TREE),
    "forward-dynamics": parts.forward_dynamics(TREE),
    "derivation": parts.inverse_dynamics(TREE),
}
CHECKS = {"kinematics": (cd.check_kinematics, {"site": "tool"}), "jacobian": (cd.check_jacobian, {"site": "tool"}),
          "mass-matrix": (cd.check_mass_matrix, {}), "bias": (cd.check_bias, {}), "energy": (cd.check_energy, {}),
          "forward-dynamics": (cd.check_forward_dynamics, {}), "derivation": (cd.check_derivation, {})}


# --- a function that writes into its input ------------------------------------------------------------

def _zero_first(fn):
    """``q[:] = 0`` (a batch zeroed, or one state), then the right answer at the zeroed state."""
    def f(q, *rest):
        q[...] = 0.0
        return fn(q, *rest)
    return f


def _abs_in_place(fn):
    def f(q, *rest):
        np.abs(q, out=q)
        return fn(q, *rest)
    return f


def _zero_last(fn):
    """``tau[:] = 0`` (or ``qd``'s, ``qdd``'s): the last argument zeroed."""
    def f(*args):
        args[-1][...] = 0.0
        return fn(*args)
    return f


WRITERS = [(name, how, writer) for name in CHECKS for how, writer in
           (("q[:] = 0", _zero_first), ("np.abs(q, out=q)", _abs_in_place))] + \
          [(name, "last[:] = 0", _zero_last) for name in ("bias", "forward-dynamics", "derivation")]


def test_the_right_functions_pass():
    """The baseline the writers below are built on: each right function passes its check."""
    for name, (check, options) in CHECKS.items():
        assert check(RIGHT[name], ARM, samples=N, **options).passed, name


@pytest.mark.parametrize("name, how, writer", WRITERS, ids=[f"{n}-{h}" for n, h, _ in WRITERS])
def test_a_function_that_writes_into_its_input_is_told_so(name, how, writer):
    """Once compared at the state it had overwritten (and PASSED); now refused in one line naming the input."""
    check, options = CHECKS[name]
    with pytest.raises(DerivationError, match="wrote into its input"):
        check(writer(RIGHT[name]), ARM, samples=N, **options)


def test_given_states_are_never_changed_by_the_users_function():
    q = sample_states(parts.ARM, 5, seed=3)[0]
    before = q.copy()
    with pytest.raises(DerivationError, match=r"wrote into its input q \(state 0 of the batch, entry 0: "):
        cd.check_mass_matrix(_zero_first(RIGHT["mass-matrix"]), ARM, states=q)
    assert np.array_equal(q, before)


def test_assert_helpers_do_not_pass_a_function_that_zeroes_its_input():
    with pytest.raises(DerivationError, match="wrote into its input q"):
        assert_mass_matrix(_zero_first(RIGHT["mass-matrix"]), ARM, samples=N)
    with pytest.raises(DerivationError, match="wrote into its input qdd"):
        assert_derivation(_zero_last(RIGHT["derivation"]), ARM, samples=N)


# --- states never tried -------------------------------------------------------------------------------

def one_turn_only(q, qd, qdd):
    """Right within one turn of each joint, wrong beyond: the angle clipped once (a wheel's bug)."""
    return two_link_user.correct(np.clip(q, -TURN, TURN), qd, qdd)


def slow_only(q, qd, qdd):
    """Right below 12 rad/s, wrong above: the velocity saturated."""
    return two_link_user.correct(q, np.clip(qd, -12.0, 12.0), qdd)


# The ranges every check drew before: unlimited hinges +-pi, qd +-10, qdd +-50.
BEFORE = {"q_range": np.pi, "qd_range": 10.0, "qdd_range": 50.0}


@pytest.mark.parametrize("fn", [one_turn_only, slow_only])
def test_a_derivation_wrong_only_beyond_one_turn_or_12_rad_s_fails(fn):
    """Under the old ranges it passed "over N states"; the default ranges reach it."""
    assert cd.check_derivation(fn, "two_link_arm", samples=N, **BEFORE).passed  # the false pass, reproduced
    report = cd.check_derivation(fn, "two_link_arm", samples=N)
    assert not report.passed, report.diagnosis


def test_a_mass_matrix_wrong_beyond_one_turn_fails():
    def wrapped(q):
        return RIGHT["mass-matrix"](np.clip(q, -TURN, TURN))

    assert cd.check_mass_matrix(wrapped, ARM, samples=N, q_range=np.pi).passed
    assert not cd.check_mass_matrix(wrapped, ARM, samples=N).passed


def test_limited_joints_stay_in_their_range_and_unlimited_ones_turn():
    q, qd, qdd = sample_states(parts.ARM, 2000, seed=1, ranges=Ranges.of(q_range=100.0, qd_range=(0, 1)))
    for name in ("j2", "j4"):  # limited in the MJCF
        lo, hi = parts.ARM.joint(name).range
        column = q[:, parts.ARM.joint(name).qposadr[0]]
        assert lo <= column.min() and column.max() <= hi
    j1 = q[:, parts.ARM.joint("j1").qposadr[0]]
    assert j1.min() < -90 and j1.max() > 90  # the range given, far beyond one turn
    assert qd.min() >= 0 and qd.max() <= 1
    default = sample_states(parts.ARM, 2000, seed=1)
    assert np.abs(default[0]).max() > 2 * TURN and np.abs(default[1]).max() > 12 and np.abs(default[2]).max() > 50


def test_every_report_states_its_ranges():
    mass = cd.check_mass_matrix(RIGHT["mass-matrix"], ARM, samples=N)
    text = mass.text("M")
    assert "hinges without a range (j1, j3, j5, j6, j7): [-18.85, 18.85] rad (3 turns each way)" in text, text
    assert "joints in the model's range: j2 [-2, 2], j4 [-2.5, 0.5]" in text, text
    assert "velocities" not in text  # M(q) takes no velocity
    assert mass.to_dict()["state_ranges"]["q_range"] == pytest.approx([-3 * TURN, 3 * TURN])
    derivation = cd.check_derivation(RIGHT["derivation"], ARM, samples=N, qd_range=(-5, 40))
    lines = "\n".join(derivation.sampling)
    assert "velocities qd: [-5, 40] rad/s" in lines and "accelerations qdd: [-100, 100]" in lines, lines
    given = cd.check_mass_matrix(RIGHT["mass-matrix"], ARM, states=np.zeros((3, 7)))
    assert given.sampling == ["3 given states (none drawn at random)"] and given.to_dict()["state_ranges"] == {}


def test_the_command_line_sets_and_prints_the_ranges(tmp_path):
    (tmp_path / "mine.py").write_text(
        f"import sys\nsys.path.insert(0, {str(HERE / 'derivations')!r})\n"
        "import numpy as np\nimport two_link_user\n\n"
        "def tau(q, qd, qdd):\n    return two_link_user.correct(np.clip(q, -2 * np.pi, 2 * np.pi), qd, qdd)\n")
    base = [sys.executable, "-m", "crossdyn.experiments", "check", "derivation", f"{tmp_path / 'mine.py'}:tau",
            "--mjcf", "two_link_arm", "--samples", str(N)]
    env = {**os.environ, "MPLBACKEND": "Agg"}
    narrow = subprocess.run([*base, "--q-range", "3.1416", "--qd-range=-10,10", "--out", str(tmp_path / "a")],
                            capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert narrow.returncode == 0, narrow.stdout + narrow.stderr
    assert "hinges without a range (q1, q2): [-3.142, 3.142] rad" in narrow.stdout, narrow.stdout
    wide = subprocess.run([*base, "--out", str(tmp_path / "b")], capture_output=True, text=True, timeout=300, env=env,
                          cwd=tmp_path)
    assert wide.returncode == 1, wide.stdout + wide.stderr
    assert "(3 turns each way)" in wide.stdout, wide.stdout
    metrics = json.loads(next((tmp_path / "b").rglob("metrics.json")).read_text())
    assert metrics["state_ranges"]["qd_range"] == [-30.0, 30.0]
    assert metrics["params"]["q_range"] is None  # the defaults: a baseline taken with --q-range does not compare


# --- one validation of tolerances and seeds; states with no rows (the rest: tests/test_bad_input.py) -----

def test_derivation_checks_refuse_the_same_and_an_empty_batch():
    with pytest.raises(ParameterError, match="atol must be a finite number"):
        cd.check_derivation(RIGHT["derivation"], ARM, samples=N, atol=float("inf"))
    with pytest.raises(ParameterError, match="seed must be a whole number from 0 to"):
        cd.check_derivation(RIGHT["derivation"], ARM, samples=N, seed=-1)
    with pytest.raises(ParameterError, match="rtol must be a finite number"):
        cd.check_linearization(parts.arm_linearization, ARM, keyframe="home", rtol=float("nan"))
    with pytest.raises(StateError, match="no rows"):
        cd.check_derivation(RIGHT["derivation"], ARM, states=(np.zeros((0, 7)),) * 3)


# --- huge values: crossdyn's arithmetic stays quiet, MuJoCo's overflow is not the user's --------------

HUGE = 1e308  # crossdyn's error = yours - MuJoCo's overflows on it
HUGE_ANSWERS = {
    "kinematics": lambda q: (np.full(3, HUGE), np.full((3, 3), -HUGE)),
    "jacobian": lambda q: np.full((6, 7), HUGE),
    "mass-matrix": lambda q: np.full((7, 7), HUGE),
    "bias": lambda q, qd: np.full(7, -HUGE),
    "energy": lambda q, qd: (HUGE, 0.0),
    "forward-dynamics": lambda q, qd, tau: np.full(7, HUGE),
    "derivation": lambda q, qd, qdd: np.full(7, HUGE) * np.sign(qdd),
}


@pytest.mark.parametrize("name", HUGE_ANSWERS)
def test_a_huge_answer_is_a_mismatch_without_numpy_warnings(name):
    check, options = CHECKS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any RuntimeWarning from crossdyn's arithmetic fails here
        report = check(HUGE_ANSWERS[name], ARM, samples=N, **options)
    assert not report.passed, report.diagnosis


def test_a_huge_matrix_reads_as_finite_offsets():
    report = cd.check_mass_matrix(HUGE_ANSWERS["mass-matrix"], ARM, samples=N)
    assert "inf" not in " ".join(report.entries()), report.entries()  # the mean of 1e308 errors is no overflow
    assert "too large for a least-squares fit" in " ".join(report.attribution), report.attribution


def test_the_users_function_keeps_its_own_numpy_warnings():
    """Only crossdyn's arithmetic is quiet: an overflow inside the user's function is still theirs to see."""
    def overflows(q):
        return np.minimum(np.full((7, 7), 1e200) * 1e200, 1.0)  # overflows to inf, then capped

    with pytest.warns(RuntimeWarning, match="overflow"):
        cd.check_mass_matrix(overflows, ARM, samples=N)


def test_mujocos_own_overflow_is_not_blamed_on_the_function():
    states = (np.zeros((2, 7)), np.full((2, 7), 1e160))  # qd^2 overflows in MuJoCo's bias
    with pytest.raises(StateError, match="MuJoCo's own value is not finite at state 0"):
        cd.check_bias(lambda q, qd: np.zeros(7), ARM, states=states)


def test_an_unknown_body_lists_the_bodies():
    with pytest.raises(ParameterError, match="its bodies: ") as raised:
        cd.check_kinematics(RIGHT["kinematics"], ARM, body="nope", samples=N)
    assert "bodys" not in str(raised.value)


# --- check --timeout and SIGTERM ---------------------------------------------------------------------

def test_sigterm_ends_a_check_with_one_line_and_its_worker(tmp_path):
    """A check killed by SIGTERM (CI's cancel) said nothing; now one line, exit 143, nothing written."""
    marker = tmp_path / "called"
    (tmp_path / "hangs.py").write_text(
        "import os, time\n\ndef M(q):\n"
        f"    open({str(marker)!r}, 'w').write(str(os.getpid()))\n    time.sleep(600)\n")
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "crossdyn.experiments", "check", "mass-matrix",
                             f"{tmp_path / 'hangs.py'}:M", "--mjcf", str(ARM), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env={**os.environ, "MPLBACKEND": "Agg"})
    try:
        deadline = time.monotonic() + 120
        while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.exists(), "the function was never called"
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    lines = stderr.strip().splitlines()
    assert proc.returncode == 128 + signal.SIGTERM, (proc.returncode, stderr)
    assert len(lines) == 1 and "stopped by SIGTERM" in lines[0] and "Traceback" not in stderr, stderr
    assert not out.exists() or not any(out.rglob("*"))
    worker = int(marker.read_text())
    for _ in range(50):  # the worker is killed with its parent
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(worker, signal.SIGKILL)
        pytest.fail(f"the worker {worker} outlived the check")


def test_a_drift_to_or_from_a_non_finite_value_reads_as_one():
    """``change changed`` once stood where a non-finite drift has no number."""
    from crossdyn.experiments.core.baseline import Drift, Tolerance

    assert "change to nan (" in str(Drift("settle_s", 0.297, float("nan"), Tolerance()))
    assert "change from inf (" in str(Drift("settle_s", float("inf"), 1.0, Tolerance()))
    assert "change +5 %" in str(Drift("settle_s", 1.0, 1.05, Tolerance()))


def test_sigterm_ends_a_systems_own_check_with_one_line(monkeypatch, tmp_path, capsys):
    """``check two-link`` (a system's command, run in this process) ends on SIGTERM as every check does."""
    from crossdyn.experiments import two_link
    from crossdyn.experiments.core.cli import main

    def terminated(*args, **kwargs):  # SIGTERM arrives while the check runs
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)

    monkeypatch.setattr(two_link, "check", terminated)
    code = main(["check", "two-link", "--samples", "10", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 128 + signal.SIGTERM and len(err) == 1 and "stopped by SIGTERM" in err[0], (code, err)
    assert not (tmp_path / "out").exists()


def test_slides_balls_and_free_joints_are_drawn_and_said():
    ranges = Ranges.of(slide_range=(0.1, 0.2))
    q = sample_states(parts.BALL, 500, seed=2, ranges=ranges)[0]
    extend = q[:, parts.BALL.joint("extend").qposadr[0]]
    assert extend.min() >= 0.1 and extend.max() <= 0.2
    lines = ranges.describe(parts.BALL, ("q",))
    assert "slides without a range (extend): [0.1, 0.2] m" in lines, lines
    assert "ball joints (shoulder, elbow): orientation uniformly random" in lines, lines
    assert any(line.startswith("free joints (root): position in [-1, 1] m") for line in Ranges().describe(parts.FLOAT))
