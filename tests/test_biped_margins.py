"""The biped's balance loop broken at a wheel motor: measured in MuJoCo beside its design.

The designed loop is the wheeled pendulum's and the steering model's
(``controllers.biped.wheel_loops``), its margins python-control's.  On the ideal robot
(rigid massless legs: the design's own model built in MuJoCo) the measured loop must be
the designed one; on the whole robot the two are reported side by side, each with the
model it comes from, and the gap goes the way the left-out leg links make it go.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from crossdyn.analytic.biped.wheeled_pendulum import linearize_pendulum
from crossdyn.controllers.biped.controller import wheel_loops
from crossdyn.controllers.lqr import lqr
from crossdyn.experiments.biped.loop_margins import BROKEN_AT, ideal_loop, leg_link_mass
from crossdyn.experiments.biped.model import nominal_params
from crossdyn.experiments.biped.scenarios import ALPHA_NOMINAL, controller_for, robot
from crossdyn.experiments.core.errors import ParameterError
from crossdyn.experiments.core.margins import LoopDesign, measure_setup


def test_the_wheel_loops_close_on_the_lqr_and_yaw_pd_poles():
    """The 6-state design closes on the pendulum LQR's poles and the yaw PD's double pole at -wn: its two wheels'
    halves of T and dT add up to the two laws as designed, each on its own model."""
    p = nominal_params()
    gains = controller_for({}).gains
    length = float(p.leg_height(ALPHA_NOMINAL))
    A4, B4 = linearize_pendulum(p.pendulum, length)
    K = lqr(A4, B4, np.diag(gains.Q), np.array([[gains.R]])).K
    A, B, Kw = wheel_loops(p.pendulum, gains, length, K)
    closed = np.sort_complex(np.linalg.eigvals(A - B @ Kw))
    j = B[5, 1] ** -1  # the steering model's torque per yaw acceleration
    yaw = np.roots([j, gains.yaw.kd, gains.yaw.kp])  # J s^2 + kd s + kp: the PD on the pure inertia
    expected = np.sort_complex(np.concatenate([np.linalg.eigvals(A4 - B4 @ K), yaw]))
    # a double pole splits by ~sqrt(round-off) = 1e-8 relative under perturbation: 1e-6 of |6| is ample
    np.testing.assert_allclose(closed, expected, atol=1e-6 * np.abs(expected).max())


def test_on_the_ideal_robot_the_measured_loop_is_the_designed_one():
    setup = ideal_loop({}, short=True)
    measured = measure_setup(setup)
    loop = measured.loops[0]
    assert loop.actuator == BROKEN_AT and loop.design_margins is not None and not loop.clamped_steps
    m, d = loop.margins, loop.design_margins
    # the 1 kHz hold lags the phase by w_c dt / 2 = 33.5 rad/s x 0.5 ms = 1.0 deg at the crossover
    assert m.phase_margin_deg == pytest.approx(d.phase_margin_deg, abs=1.5)
    # the wheels' soft contacts, and the interpolation between points 1.5x apart: the design's crossover within 2 %
    assert m.crossover_rad_s == pytest.approx(d.crossover_rad_s, rel=0.02)
    # the unstable pendulum's lower gain margin, where the phase passes -180 deg near 2.8 rad/s: within 0.5 dB
    assert m.gain_margin_db == pytest.approx(d.gain_margin_db, abs=0.5)
    assert "the design's own model built in MuJoCo" in str(measured)


def test_crossdyn_margins_measures_the_whole_robot_beside_the_pendulum_it_was_designed_on(tmp_path):
    done = subprocess.run([sys.executable, "-m", "crossdyn.experiments", "margins", "balance-recovery", "--short",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=300,
                          env={"MPLBACKEND": "Agg", "PATH": ""})
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "margins.json").read_text())
    for key in ("gain_margin_db", "phase_margin_deg", "crossover_rad_s", "delay_margin_s"):
        assert data[key]["measured"] is not None and data[key]["designed"] is not None, key
    [loop] = data["loops"]
    assert loop["actuator"] == BROKEN_AT and loop["designed_on"].startswith("the wheeled pendulum")
    assert "the other 5 actuators' loops closed" in data["notes"][0]
    # The note's leg mass is the model's: the robot's whole mass but the body's and the wheels', as the pendulum's
    # parameters read them (the built-in robot carries nothing else).
    model = robot()
    p = nominal_params().pendulum
    links = float(model.body_subtreemass[model.body("body").id]) - p.M - 2 * p.m
    assert leg_link_mass(model) == pytest.approx(links, rel=1e-12)
    assert f"legs weigh {links:.3g} kg" in " ".join(data["notes"])
    # The design leaves those links out, so the robot is heavier than its model and the loop's gain lower: it
    # crosses 0 dB earlier than designed (on the ideal robot the two agree: the test above).
    assert data["crossover_rad_s"]["measured"] < data["crossover_rad_s"]["designed"]


def test_a_loop_design_must_fit_together():
    A, B, K = np.zeros((2, 2)), np.zeros((2, 1)), np.zeros((1, 2))
    with pytest.raises(ParameterError, match="do not fit"):
        LoopDesign(A, B, K.T)
    with pytest.raises(ParameterError, match="2 input names for the 1 columns"):
        LoopDesign(A, B, K, inputs=("a", "b"))
