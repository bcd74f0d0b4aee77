"""The plain-float per-step path agrees with today's NumPy implementation to 1e-12.

``tests/biped_reference.py`` keeps the estimator and controller as they were
before the speed rewrite (NumPy arrays per step).  Here both are driven with the
same recorded inputs, taken from closed-loop runs that visit every branch: a
sensor-based balance recovery with a push, velocity tracking and a turn, a
height change, and a jump (crouch, thrust, retract, flight, landing).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from biped_reference import ReferenceController, ReferenceEstimator
from crossdyn.analytic.biped.wheeled_pendulum import leg_forces, linearize
from crossdyn.controllers.balance import schedule
from crossdyn.controllers.biped import DEFAULT_Q, DEFAULT_R, BipedController, Command
from crossdyn.controllers.estimation import Estimator
from crossdyn.controllers.jump import JumpPlan
from crossdyn.experiments.biped import closed_loop, scenarios
from crossdyn.experiments.biped.closed_loop import geometry, make_controller, simulate
from crossdyn.experiments.biped.model import nominal_params
from support import assert_close

# Round-off: the rewrite reorders a few float operations (a 4-term dot product
# summed left to right instead of by BLAS); values are O(1-100), so 1e-12 relative.
TOL = 1e-12
ESTIMATE_FIELDS = ("x", "xd", "pitch", "pitch_rate", "roll", "roll_rate", "yaw", "yaw_rate", "alpha", "alpha_rate",
                   "height", "height_rate", "height_slope", "accel", "hip_angles", "hip_rates")


def _record(sc, jump=None):
    """Run ``sc`` and return every control step's sensor readings, time and reference."""
    readings, calls = [], []
    p = nominal_params()
    controller = make_controller(p, sc.control_period, jump=jump)

    def recording(t, est, ref):
        calls.append((t, ref))
        return controller(t, est, ref)

    original = closed_loop._Sensors.read
    closed_loop._Sensors.read = lambda self, data: readings.append(original(self, data)) or readings[-1]
    try:
        simulate(scenarios.robot(), sc, recording, compiled=False)  # the readable path reads the sensors here
    finally:
        closed_loop._Sensors.read = original
    return readings[: len(calls)], calls


def _scenarios():
    period = scenarios.CONTROL_PERIOD
    balance = scenarios.balance_scenario(10.0, 2.0)
    pushed = scenarios.push_scenario(15.0, 0.1, after=1.5)
    yield "balance", balance, None
    yield "push", pushed, None
    jump, low = JumpPlan(), scenarios.stance_height(JumpPlan().alpha_crouch)  # as scenarios.jump
    yield "jump", closed_loop.Scenario(duration=3.0, alpha0=np.radians(200.0), control_period=period,
                                       reference=lambda t: scenarios.Reference(height=low), jump=jump), jump
    height = scenarios.stance_height(scenarios.ALPHA_NOMINAL)
    moving = closed_loop.Scenario(
        duration=2.0, alpha0=scenarios.ALPHA_NOMINAL, control_period=period,
        reference=lambda t: scenarios.Reference(velocity=0.5 if t > 0.2 else 0.0, yaw=0.8 if t > 1.0 else 0.0,
                                                height=height + (0.05 if t > 0.5 else 0.0)))
    yield "move-turn-height", moving, None


@pytest.fixture(scope="module", params=list(_scenarios()), ids=lambda c: c[0])
def recorded(request):
    name, sc, jump = request.param
    return name, sc, jump, *_record(sc, jump)


def _pair(sc, jump):
    p = nominal_params()
    new = make_controller(p, sc.control_period, jump=jump)
    ref = ReferenceController(p.pendulum, geometry(p), new.gains, sc.control_period, p.hip_torque_limit,
                              p.wheel_torque_limit, jump=jump)
    return new, ref


def test_estimator_matches_the_reference(recorded):
    name, sc, _, readings, _ = recorded
    p = nominal_params()
    new, ref = Estimator(geometry(p)), ReferenceEstimator(geometry(p))
    got = [new.update(*r) for r in readings]
    want = [ref.update(*r) for r in readings]
    for field in ESTIMATE_FIELDS:
        a = np.array([getattr(e, field) for e in got], dtype=float)
        b = np.array([getattr(e, field) for e in want], dtype=float)
        assert_close(a, b, atol=TOL * max(1.0, np.abs(b).max()), what=f"{name}: estimate {field}")


def test_controller_matches_the_reference(recorded):
    name, sc, jump, readings, calls = recorded
    p = nominal_params()
    new, ref = _pair(sc, jump)
    est_new, est_ref = Estimator(geometry(p)), ReferenceEstimator(geometry(p))
    got, want = [], []
    for r, (t, reference) in zip(readings, calls):
        got.append(new(t, est_new.update(*r), reference))
        want.append(ref(t, est_ref.update(*r), reference))
    for field in ("wheels", "hips", "legs", "wheel_total"):
        a = np.array([getattr(c, field) for c in got], dtype=float)
        b = np.array([getattr(c, field) for c in want], dtype=float)
        assert_close(a, b, atol=TOL * max(1.0, np.abs(b).max()), what=f"{name}: command {field}")
    assert [c.phase for c in got] == [c.phase for c in want]
    if jump is not None:
        assert {c.phase for c in got} >= {"crouch", "thrust", "retract", "flight", "landing", "balance"}
        assert new.machine.transitions == ref.machine.transitions


def test_the_comparison_can_fail():
    """A controller off by one part in 1e9 in one gain is caught at this tolerance."""
    _, sc, _ = next(_scenarios())
    readings, calls = _record(sc)
    p = nominal_params()
    new, ref = _pair(sc, None)
    ref.gains = type(ref.gains)(**{**ref.gains.__dict__, "swing_kp": ref.gains.swing_kp * (1 + 1e-9)})
    est_new, est_ref = Estimator(geometry(p)), ReferenceEstimator(geometry(p))
    hips = [(new(t, est_new.update(*r), rf).hips, ref(t, est_ref.update(*r), rf).hips)
            for r, (t, rf) in zip(readings, calls)]
    a, b = (np.array(h, dtype=float) for h in zip(*hips))
    with pytest.raises(AssertionError, match="out of tolerance"):
        assert_close(a, b, atol=TOL * max(1.0, np.abs(b).max()), what="perturbed")


def test_gain_row_is_the_schedule():
    gains = make_controller(nominal_params(), scenarios.CONTROL_PERIOD).gains.schedule
    for length in (0.1, 0.25, 0.31, 0.45, 1.0):  # inside and clamped outside the table
        np.testing.assert_array_equal(np.array(gains.row(length)).reshape(gains(length).shape), gains(length))
    with pytest.raises(ValueError, match="finite"):
        gains.row(float("nan"))


@pytest.mark.parametrize("degree", [2, 3, 4])
def test_gain_row_is_polyval_of_the_fit(degree):
    """``row`` (written out for the default cubic, a loop otherwise) is Horner's rule as
    ``np.polyval`` runs it: the same operations in the same order, so equal bit for bit."""
    p = nominal_params()
    lengths = np.linspace(0.12, 0.32, 9)
    gains = schedule(functools.partial(linearize, p.pendulum), lengths, np.diag(DEFAULT_Q), np.atleast_2d(DEFAULT_R),
                     degree=degree)
    flat = gains.coeffs.reshape(degree + 1, -1)
    for length in (0.12, 0.2, 0.2718, 0.32):
        np.testing.assert_array_equal(gains.row(length), [np.polyval(flat[:, k], length) for k in range(4)])
    assert gains.row(1.0) == gains.row(0.32) and gains.row(0.0) == gains.row(0.12)  # clamped to the table


def test_leg_forces_floats_are_the_arrays():
    P = nominal_params().pendulum
    F_y, T_x = np.linspace(-30, 30, 7), np.linspace(-5, 5, 7)
    P_L, P_R = leg_forces(P, F_y, T_x)
    for k in range(7):
        left, right = leg_forces(P, float(F_y[k]), float(T_x[k]))
        assert type(left) is float and (left, right) == (P_L[k], P_R[k])


def test_a_user_controller_function_drives_simulate():
    """``simulate`` takes any ``(t, est, ref) -> Command`` function: wrapping the biped
    controller in one gives the bit-identical trace."""
    sc = scenarios.balance_scenario(8.0, 1.0)
    direct = simulate(scenarios.robot(), sc, scenarios.controller_for({}))
    inner = scenarios.controller_for({})
    wrapped = simulate(scenarios.robot(), sc, lambda t, est, ref: inner(t, est, ref))
    np.testing.assert_array_equal(wrapped.true_pitch, direct.true_pitch)
    np.testing.assert_array_equal(wrapped.hip_torque, direct.hip_torque)
    assert wrapped.transitions == []
    # The smallest controller: wheels and hips only (legs, phase and total default).
    idle = simulate(scenarios.robot(), scenarios.balance_scenario(0.0, 0.05),
                    lambda t, est, ref: Command((0.0, 0.0), (0.0, 0.0, 0.0, 0.0)))
    assert idle.t.size == 50 and (idle.wheel_torque == 0).all() and set(idle.phase) == {"balance"}
    assert isinstance(inner, BipedController)


def test_readme_user_controller_example_runs(tmp_path):
    """README's 'Your own controller in the loop' example runs as printed and balances."""
    import os
    import re
    import subprocess
    import sys
    from pathlib import Path

    section = (Path(__file__).resolve().parents[1] / "README.md").read_text().split(
        "### Your own controller in the loop", 1)[1]
    code = re.findall(r"```python\n(.*?)```", section, flags=re.S)[0]
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "MPLBACKEND": "Agg"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("fell: False"), out.stdout
