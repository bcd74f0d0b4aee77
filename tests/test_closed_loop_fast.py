"""The per-step estimator and controller in plain floats agree with the library's array functions.

``Estimator.update`` writes the Z-Y-X Euler angles, the five-bar (eq. 3.2, 2.29) and
the shank angle out in plain floats for speed, one sample at a time.  Here a whole
recorded run is estimated a second way, vectorized over time with the library's
NumPy functions (``analytic.rotation.euler_zyx`` and ``euler_rates``,
``five_bar.height_derivatives``, ``estimation.shank_angle``, ``np.unwrap``), from
closed-loop runs that visit every branch: a sensor-based balance recovery with a
push, velocity tracking and a turn, a height change, a jump (crouch, thrust,
retract, flight, landing) and a turn past +-180 deg.  The controller's float paths
are checked against their array forms piece by piece (gain row, leg forces).  The
compiled step is checked against these readable classes bit for bit in
``test_compiled.py``.
"""

from __future__ import annotations

import dataclasses
import functools
from unittest import mock

import numpy as np
import pytest

from biped_scenarios import branch_scenarios
from crossdyn.analytic.biped import five_bar
from crossdyn.analytic.biped.wheeled_pendulum import leg_forces, linearize_pendulum
from crossdyn.analytic.rotation import euler_rates, euler_zyx
from crossdyn.controllers.biped.balance import balance_torque
from crossdyn.controllers.biped.controller import DEFAULT_Q, DEFAULT_R, BipedController, Command
from crossdyn.controllers.biped.estimation import Estimator, LegGeometry, shank_angle
from crossdyn.controllers.lqr import schedule
from crossdyn.experiments.biped import closed_loop, scenarios
from crossdyn.experiments.biped.closed_loop import geometry, make_controller, simulate_scenario
from crossdyn.experiments.biped.model import nominal_params
from support import assert_close

# Round-off: the two paths evaluate the same formulas, but NumPy's vectorized sin, cos,
# arctan2 may differ from the C library's by a few ulp and x**2 is not x * x; values are
# O(1-100), so 1e-12 relative.
TOL = 1e-12
ESTIMATE_FIELDS = ("x", "xd", "pitch", "pitch_rate", "roll", "roll_rate", "yaw", "yaw_rate", "alpha", "alpha_rate",
                   "height", "height_rate", "height_slope", "accel", "hip_angles", "hip_rates")


def _record(sc, jump=None) -> list[tuple]:
    """Run ``sc`` and return every control step's sensor readings (the estimator's arguments)."""
    readings, calls = [], []
    p = nominal_params()
    controller = make_controller(p, sc.control_period, jump=jump)

    def recording(t, est, ref):
        calls.append(t)
        return controller(t, est, ref)

    original = closed_loop.Sensors.read

    def read(sensors, sensordata):
        readings.append(original(sensors, sensordata))
        return readings[-1]

    with mock.patch.object(closed_loop.Sensors, "read", read):
        simulate_scenario(scenarios.robot(), sc, recording, compiled=False)  # the readable path reads the sensors here
    return readings[: len(calls)]


def _scenarios():
    yield "balance", scenarios.balance_scenario(10.0, 2.0), None
    yield from branch_scenarios(push_after=1.5)


@pytest.fixture(scope="module", params=list(_scenarios()), ids=lambda c: c[0])
def recorded(request):
    name, sc, jump = request.param
    return name, _record(sc, jump)


def _library_estimates(readings: list[tuple], g: LegGeometry) -> dict[str, np.ndarray]:
    """Every step's estimate at once, ``field -> (N, ...)``, from the library's array functions."""
    columns = (np.array(r, dtype=float) for r in zip(*readings, strict=True))
    quat, gyro, accel, hip_pos, hip_vel, wheel_pos, wheel_vel = columns
    roll, pitch, yaw = euler_zyx(quat)
    roll_rate, pitch_rate, yaw_rate = euler_rates(roll, pitch, gyro)
    # Each leg's alpha is the mean of its front and rear motor, kept in the reachable range.
    alpha = np.clip(0.5 * (hip_pos[:, 0::2] + hip_pos[:, 1::2]), *five_bar.REACHABLE)
    alpha_rate = 0.5 * (hip_vel[:, 0::2] + hip_vel[:, 1::2])
    y, y1, _ = five_bar.height_derivatives(alpha, g.l1, g.l2, g.l3)
    phi, dphi = shank_angle(alpha, g)
    # Odometry: the wheels' rotation in the world (encoder + body pitch + shank angle) times r, from 0.
    x = g.r * np.mean(wheel_pos + pitch[:, None] + phi, axis=1)
    xd = g.r * np.mean(wheel_vel + pitch_rate[:, None] + dphi * alpha_rate, axis=1)
    return {"x": x - x[0], "xd": xd, "pitch": pitch, "pitch_rate": pitch_rate, "roll": roll, "roll_rate": roll_rate,
            "yaw": np.unwrap(yaw), "yaw_rate": yaw_rate, "alpha": alpha, "alpha_rate": alpha_rate, "height": y,
            "height_rate": y1 * alpha_rate, "height_slope": y1, "accel": np.linalg.norm(accel, axis=1),
            "hip_angles": hip_pos, "hip_rates": hip_vel}


def _compare(got: list, want: dict[str, np.ndarray], what: str) -> None:
    for field in ESTIMATE_FIELDS:
        a = np.array([getattr(e, field) for e in got], dtype=float)
        b = want[field]
        assert_close(a, b, atol=TOL * max(1.0, np.abs(b).max()), what=f"{what}: estimate {field}")


def test_estimator_matches_the_library(recorded):
    name, readings = recorded
    estimator = Estimator(geometry(nominal_params()))
    got = [estimator.update(*r) for r in readings]
    _compare(got, _library_estimates(readings, geometry(nominal_params())), name)
    if name == "turn-past-pi":
        assert max(e.yaw for e in got) > np.pi + 0.1  # unwrapped past +pi: the turn counting ran


def test_the_comparison_can_fail():
    """A leg one part in 1e9 longer on the library side is caught at this tolerance."""
    _, sc, jump = next(_scenarios())
    readings = _record(sc, jump)
    g = geometry(nominal_params())
    estimator = Estimator(g)
    got = [estimator.update(*r) for r in readings]
    with pytest.raises(AssertionError, match="out of tolerance"):
        _compare(got, _library_estimates(readings, dataclasses.replace(g, l2=g.l2 * (1 + 1e-9))), "perturbed")


def test_balance_torque_floats_are_the_matrix_product():
    """The controller's balance torque, a 4-term sum in floats, is ``-K (x - x_ref)`` as NumPy computes it."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        K, x, ref = rng.normal(size=(1, 4)) * 50, rng.normal(size=4), rng.normal(size=4)
        want = -float((K @ (x - ref))[0])
        # Round-off: a 4-term dot product of O(50) terms summed in another order, so 1e-12 relative.
        assert balance_torque(tuple(K[0]), tuple(x), tuple(ref)) == pytest.approx(want, rel=1e-12, abs=1e-12)
        assert balance_torque(K, x, ref, limit=1.0) == min(max(balance_torque(K, x, ref), -1.0), 1.0)


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
    gains = schedule(functools.partial(linearize_pendulum, p.pendulum), lengths, np.diag(DEFAULT_Q),
                     np.atleast_2d(DEFAULT_R), degree=degree)
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


def test_a_user_controller_function_drives_simulate_scenario():
    """``simulate_scenario`` takes any ``(t, est, ref) -> Command`` function: wrapping the biped
    controller in one gives the bit-identical trace."""
    sc = scenarios.balance_scenario(8.0, 1.0)
    direct = simulate_scenario(scenarios.robot(), sc, scenarios.controller_for({}))
    inner = scenarios.controller_for({})
    wrapped = simulate_scenario(scenarios.robot(), sc, lambda t, est, ref: inner(t, est, ref))
    np.testing.assert_array_equal(wrapped.true_pitch, direct.true_pitch)
    np.testing.assert_array_equal(wrapped.hip_torque, direct.hip_torque)
    assert wrapped.transitions == []
    # The smallest controller: wheels and hips only (legs, phase and total default).
    idle = simulate_scenario(scenarios.robot(), scenarios.balance_scenario(0.0, 0.05),
                    lambda t, est, ref: Command((0.0, 0.0), (0.0, 0.0, 0.0, 0.0)))
    assert idle.t.size == 50 and (idle.wheel_torque == 0).all() and set(idle.phase) == {"balance"}
    assert isinstance(inner, BipedController)


def test_readme_user_controller_example_runs(tmp_path):
    """The Python guide's 'Your own controller on the biped' example runs as printed and balances."""
    import os
    import subprocess
    import sys

    from support import code_blocks, doc_section

    [code] = code_blocks(doc_section("docs/guides/python.md", "Your own controller on the biped"), "python")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "MPLBACKEND": "Agg"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("fell: False"), out.stdout
