"""The closed loop against its design: sampled-data LQR, the sensors' instant, compare_to_design, measured margins.

The margins are checked against python-control's ``margin`` on the design's own loop
``K (sI - A)^-1 B`` (an independent computation: no MuJoCo in it); the delay's effect
against ``w_c x delay``; the public model is dm_control's cart-pole (tests/models/dm_control).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings
from pathlib import Path

import mujoco
import numpy as np
import pytest

from crossdyn.experiments.cart_pole import design as cart_pole_design
from crossdyn.experiments.core.design_check import compare_to_design
from crossdyn.experiments.core.errors import ParameterError
from crossdyn.experiments.core.imperfections import Delay
from crossdyn.experiments.core.loop.control_rate import control_period, period_in_effect
from crossdyn.experiments.core.loop.simulate import simulate
from crossdyn.experiments.core.margins import designed_loop, margins_of, measure_loop
from crossdyn.experiments.core.models import load_model
from crossdyn.experiments.core.regulator import RATE_LIMIT, measured_decay, regulator, zero_order_hold

MODELS = Path(__file__).parent / "models"
DM_CARTPOLE = MODELS / "dm_control" / "cartpole.xml"
# Frequencies about the cart-pole design's crossover (12.4 rad/s), rad/s: few, so the runs stay short.
NEAR_CROSSOVER = np.geomspace(4.0, 40.0, 10)
CONTROL_DT = 0.002  # s, the cart-pole experiments' period


@pytest.fixture(scope="module")
def cart_pole():
    return load_model("cart_pole"), cart_pole_design({})


def _silently(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kwargs)


# ------------------------------------------------------------------------------------ regulator(dt=), weights


def test_scalar_q_and_r_mean_multiples_of_the_identity():
    """A scalar Q or R is that multiple of the identity, for 7 inputs too (refused before)."""
    arm = load_model(MODELS / "arm7.xml")
    scalar = _silently(regulator, arm, 2.0, 0.01, keyframe="home")
    spelled = _silently(regulator, arm, 2.0 * np.eye(2 * arm.nv), 0.01 * np.eye(arm.nu), keyframe="home")
    assert scalar.design.K.shape == (arm.nu, 2 * arm.nv)
    # the same Riccati equation: the gains agree to the solver's round-off
    np.testing.assert_allclose(scalar.design.K, spelled.design.K, rtol=1e-9, atol=1e-9)


def test_a_continuous_design_beyond_the_rate_warns_naming_the_pole_and_rate():
    model = load_model(DM_CARTPOLE)
    with pytest.warns(RuntimeWarning, match=r"fastest closed-loop pole -1716\.\d 1/s .* 0\.01 s \(100 Hz\)"):
        fast = regulator(model, [1, 10, 1, 1], 1e-4)
    assert abs(fast.design.poles).max() * model.opt.timestep > RATE_LIMIT
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a design the rate carries is silent
        gentle = regulator(model, [1, 10, 1, 1], 1.0)
        simulate(model, gentle, 0.1, qpos=[0, 0.05])
    assert abs(gentle.design.poles).max() * model.opt.timestep <= RATE_LIMIT
    with pytest.warns(RuntimeWarning, match="0.02 s"):  # the loop checks the period it runs at
        simulate(model, gentle if abs(gentle.design.poles).max() * 0.02 > RATE_LIMIT else fast, 0.1,
                 qpos=[0, 0.05], control_dt=0.02)


def test_discrete_design_at_the_public_models_rate_balances_it():
    """dm_control's cart-pole at its 10 ms: the discrete design balances it; the continuous one warns, and its
    run, compared with its design, names the saturation that its chattering fast pole drives."""
    model = load_model(DM_CARTPOLE)
    at_rate = regulator(model, [1, 10, 1, 1], 1e-4, dt=model.opt.timestep)
    assert at_rate.control_dt == model.opt.timestep and np.all(np.abs(at_rate.design.poles) < 1)
    trace = simulate(model, at_rate, 5.0, qpos=[0.0, 0.2])
    assert trace.stopped is None
    assert abs(trace.qpos[-1, 1]) < 0.01 and abs(trace.qpos[-1, 0]) < 0.05  # rad, m: balanced and back home
    with pytest.warns(RuntimeWarning, match="beyond what a loop"):
        continuous = regulator(model, [1, 10, 1, 1], 1e-4)
    with pytest.warns(RuntimeWarning):
        chattering = simulate(model, continuous, 5.0, qpos=[0.0, 0.2])
    assert chattering.saturated.sum() > 0.9 * chattering.t.size  # at the clamp on nearly every step
    assert "saturation: 'slide'" in compare_to_design(chattering, continuous).sentence


def test_a_delay_folded_into_the_design_keeps_the_designed_decay(cart_pole):
    model, _ = cart_pole
    periods = 10  # 20 ms at 2 ms
    reg = regulator(model, [1, 10, 1, 1], 0.1, keyframe="upright", dt=CONTROL_DT, delay=periods)
    trace = simulate(model, reg, 4.0, keyframe="upright", qpos=[0, 0.2], imperfections=[Delay(periods)])
    check = compare_to_design(trace, reg)
    assert check.agrees, str(check)
    slowest = check.modes[0]
    # the linear loop's slowest mode; a 0.2 rad start adds a few % of nonlinearity
    assert slowest.measured == pytest.approx(slowest.designed.real, rel=0.05)
    with pytest.raises(ParameterError, match="needs the period"):
        regulator(model, 1.0, 0.1, keyframe="upright", delay=2)


def test_dt_defaults_to_the_control_period_in_effect_and_is_continuous_outside_one(cart_pole):
    model, _ = cart_pole
    weights = ([1, 10, 1, 1], 0.1)
    assert period_in_effect() is None and regulator(model, *weights, keyframe="upright").dt is None
    with control_period(0.01):
        stated = regulator(model, *weights, keyframe="upright")
        continuous = regulator(model, *weights, keyframe="upright", dt=0)  # python-control's dt=0: continuous
        trace = simulate(model, stated, 0.05, keyframe="upright")
    spelled = regulator(model, *weights, keyframe="upright", dt=0.01)
    assert stated.dt == 0.01 and continuous.dt is None and period_in_effect() is None
    np.testing.assert_array_equal(stated.design.K, spelled.design.K)  # the same design, bit for bit
    np.testing.assert_allclose(np.diff(trace.t), 0.01, rtol=1e-9)  # and the loop runs at it
    with warnings.catch_warnings():  # the run's control_dt is in effect inside simulate
        warnings.simplefilter("error", RuntimeWarning)
        inside = {}

        def designs_at_start(t, obs):
            return np.zeros(model.nu)

        designs_at_start.start = lambda m, d: inside.setdefault("reg", regulator(model, *weights, keyframe="upright"))
        simulate(model, designs_at_start, 0.02, keyframe="upright", control_dt=0.004)
    assert inside["reg"].dt == 0.004
    with pytest.raises(ParameterError, match="positive control period"), control_period(-1.0):
        pass
    with pytest.warns(RuntimeWarning, match="designed at 0.01 s runs at 0.002 s"):
        simulate(model, spelled, 0.02, keyframe="upright", control_dt=0.002)


def test_a_design_at_a_rate_measures_and_margins_as_its_discrete_loop(cart_pole):
    """The discrete design's margins (the delay's memory in the controller) agree with its loop measured in MuJoCo,
    and its measured decay with its discrete pole; python-control's margin on the discrete state space did not."""
    model, _ = cart_pole
    reg = regulator(model, [1, 10, 1, 1], 0.1, keyframe="upright", dt=0.01)
    trace = simulate(model, reg, 6.0, keyframe="upright", qpos=[0, 0.2])
    # the slowest mode of the linear sampled loop; a 0.2 rad start adds a few % of nonlinearity
    assert measured_decay(trace, reg) == pytest.approx(reg.slowest.real, rel=0.05)
    Ad, Bd = zero_order_hold(reg.linearization.A, reg.linearization.B, 0.01)
    np.testing.assert_allclose(reg.plant[0], Ad)  # the design's model is the exact hold's
    periods = 4  # 8 ms at 2 ms, folded into the design and in the loop
    late = regulator(model, [1, 10, 1, 1], 0.1, keyframe="upright", dt=CONTROL_DT, delay=periods)
    measured = measure_loop(model, late, keyframe="upright", frequencies=NEAR_CROSSOVER,
                            imperfections=[Delay(periods)]).loops[0]
    # the design's own loop, sampled as the loop samples it: only the interpolation between 10 points and the
    # cart-pole's nonlinearity under the excitation (5 % of the motor's range) separate them
    assert measured.margins.phase_margin_deg == pytest.approx(measured.design_margins.phase_margin_deg, abs=2.0)
    assert measured.margins.crossover_rad_s == pytest.approx(measured.design_margins.crossover_rad_s, rel=0.03)
    # the designed margins of a loop without delay at 2 ms: the continuous design's, less the hold's w_c dt / 2
    _, at_rate = designed_loop(regulator(model, [1, 10, 1, 1], 0.1, keyframe="upright", dt=CONTROL_DT), 0)
    _, continuous = designed_loop(regulator(model, [1, 10, 1, 1], 0.1, keyframe="upright"), 0)
    hold = math.degrees(continuous.crossover_rad_s * CONTROL_DT / 2)
    # the gains differ by O(|lambda| dt) from the continuous ones: the crossover within 1 %, the phase within 0.5 deg
    assert at_rate.crossover_rad_s == pytest.approx(continuous.crossover_rad_s, rel=0.01)
    assert at_rate.phase_margin_deg == pytest.approx(continuous.phase_margin_deg - hold, abs=0.5)


# ------------------------------------------------------------------------------------ sensors and Delay


def test_sensors_lag_the_state_by_exactly_what_the_trace_says_and_delay_by_what_it_names():
    model = load_model("cart_pole")
    model.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    periods, per = 3, 2  # a 3-period delay; two physics steps per control period
    dt = per * model.opt.timestep

    def push(t, obs):
        return np.array([5.0 * math.sin(7.0 * t)])

    trace = simulate(model, push, 0.2, keyframe="upright", qpos=[0.0, 0.1], control_dt=dt,
                     imperfections=[Delay(periods)])
    assert trace.sensor_lag == model.opt.timestep
    # The state sensor_lag before each row, stepped independently with the trace's own controls.
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("upright").id)
    data.qpos[:] = [0.0, 0.1]
    lagged = []
    for u in trace.ctrl:
        data.ctrl[:] = u
        for k in range(per):
            if k == per - 1:
                lagged.append(data.qpos.copy())
            mujoco.mj_step(model, data)
    lagged = np.array(lagged)
    # each row's reading is of the state one physics step before the next row: exactly, the same arithmetic
    np.testing.assert_array_equal(trace.sensor("pole_angle")[1:, 0], lagged[:-1, 1])
    np.testing.assert_array_equal(trace.sensor("cart_pos")[0, 0], trace.qpos[0, 0])  # the first row: its own
    # Delay(3): the command of row i reaches the actuator at row i + 3, nothing before
    np.testing.assert_array_equal(trace.ctrl[periods:], trace.command[:-periods])
    assert not trace.ctrl[:periods].any()


# ------------------------------------------------------------------------------------ compare_to_design


def test_compare_to_design_agrees_on_the_cart_pole_and_says_when_a_run_excites_nothing(cart_pole):
    model, reg = cart_pole
    tilted = simulate(model, reg, 4.0, keyframe="upright", qpos=[0, 0.2], control_dt=CONTROL_DT)
    check = compare_to_design(tilted, reg)
    assert check.agrees and check.sentence == ""
    for mode in check.modes:  # every mode measured, within 10 %: the experiment's own decay tolerance
        assert mode.measured == pytest.approx(mode.designed.real, rel=0.10), mode.line()
    still = simulate(model, reg, 1.0, keyframe="upright", control_dt=CONTROL_DT)
    quiet = compare_to_design(still, reg)
    assert all(m.measured is None and "not excited" in m.note for m in quiet.modes), str(quiet)
    # Nothing measured is not an agreement: a run that never excited the modes (or fell at once) cannot say.
    assert quiet.agrees is None and "cannot say whether the loop is the design" in quiet.sentence, quiet.sentence


def test_compare_to_design_names_saturation_on_a_7_dof_arm_with_poles_beyond_its_rate():
    """The issue's failure: a continuous LQR on a 7-dof arm at 2 ms, poles far beyond the rate, motors clamped."""
    arm = load_model(MODELS / "arm7.xml")
    arm.actuator_ctrllimited[:] = 1
    arm.actuator_ctrlrange[:] = [-40.0, 40.0]  # N m: holds the home pose (m2 needs 23.5)
    with pytest.warns(RuntimeWarning, match="fastest closed-loop pole"):
        reg = regulator(arm, 1.0, 1e-6, keyframe="home")
    start = arm.key("home").qpos.copy()
    start[1] += 0.3
    with pytest.warns(RuntimeWarning, match="0.002 s"):
        trace = simulate(arm, reg, 0.6, keyframe="home", qpos=start, control_dt=0.002)
    sentence = compare_to_design(trace, reg).sentence
    assert "the loop is not the design" in sentence and "saturation: 'm1'" in sentence
    assert "the control rate" in sentence


def test_compare_to_design_names_a_delay_the_design_did_not_assume(cart_pole):
    model, reg = cart_pole
    trace = simulate(model, reg, 4.0, keyframe="upright", qpos=[0, 0.2], control_dt=CONTROL_DT,
                     imperfections=[Delay(40)])
    assert "delay: commands reach the actuators 40 control periods (0.08 s) late" in \
        compare_to_design(trace, reg).sentence


# ------------------------------------------------------------------------------------ measured margins


def test_margins_of_a_known_loop():
    """margins_of on points of L = k e^(-s tau) / s (crossover k, phase margin 90 - k tau deg): interpolation only."""
    k, tau = 10.0, 0.02
    w = np.geomspace(1.0, 100.0, 40)
    L = k * np.exp(-1j * w * tau) / (1j * w)
    found = margins_of(w, L)
    assert found.crossover_rad_s == pytest.approx(k, rel=1e-3)  # |L| = k / w is a line in log-log: exact
    # the phase is linear in w, interpolated in log w over a 12.5 % step: off by w_c tau (log 1.125)^2 / 8, 0.02 deg
    assert found.phase_margin_deg == pytest.approx(90.0 - math.degrees(k * tau), abs=0.05)
    assert found.phase_crossover_rad_s == pytest.approx(math.pi / (2 * tau), rel=1e-3)


def test_cart_pole_margins_measured_match_the_design_and_drop_by_the_delay(cart_pole):
    model, reg = cart_pole
    plain = measure_loop(model, reg, control_dt=CONTROL_DT, keyframe="upright", frequencies=NEAR_CROSSOVER)
    loop = plain.loops[0]
    designed = loop.design_margins
    # the hold of each command over 2 ms lags the design's phase by w_c dt / 2 = 0.7 deg at the crossover
    assert loop.margins.phase_margin_deg == pytest.approx(designed.phase_margin_deg, abs=2.0)
    assert loop.margins.crossover_rad_s == pytest.approx(designed.crossover_rad_s, rel=0.03)
    delayed = measure_loop(model, reg, control_dt=CONTROL_DT, keyframe="upright", frequencies=NEAR_CROSSOVER,
                           imperfections=[Delay(5)])  # 10 ms
    drop = loop.margins.phase_margin_deg - delayed.loops[0].margins.phase_margin_deg
    expected = math.degrees(loop.margins.crossover_rad_s * 5 * CONTROL_DT)
    assert drop == pytest.approx(expected, abs=2.0)  # a pure delay's phase, w_c tau; |L| unchanged
    assert not delayed.loops[0].clamped_steps


def test_a_saturating_motor_limits_the_margins_to_the_amplitude_it_names(cart_pole):
    model, reg = cart_pole
    weak = load_model("cart_pole")
    weak.actuator_ctrlrange[0] = [-1.5, 1.5]  # N: below the injected 2 N peak
    measured = measure_loop(weak, reg, control_dt=CONTROL_DT, keyframe="upright", frequencies=NEAR_CROSSOVER,
                            amplitude=2.0)
    loop = measured.loops[0]
    assert loop.clamped_steps > 0 and loop.holds_below == pytest.approx(1.5)
    assert "the margins hold only below 1.5 at 'push'" in str(measured)
    unclamped = measure_loop(model, reg, control_dt=CONTROL_DT, keyframe="upright", frequencies=NEAR_CROSSOVER,
                             amplitude=2.0)
    assert "hold only below" not in str(unclamped)


def test_crossdyn_margins_writes_the_json_and_the_bode_plot(tmp_path):
    out = tmp_path / "m"
    done = subprocess.run([sys.executable, "-m", "crossdyn.experiments", "margins", "cart-pole-lqr", "--short",
                           "--delay", "5", "--out", str(out)], capture_output=True, text=True, timeout=300,
                          env={"MPLBACKEND": "Agg", "PATH": ""})
    assert done.returncode == 0, done.stderr
    data = json.loads((out / "margins.json").read_text())
    for key in ("gain_margin_db", "phase_margin_deg", "crossover_rad_s", "delay_margin_s"):
        assert set(data[key]) == {"measured", "designed"}
    # the 10 ms delay: measured below designed by about w_c x 10 ms (7 deg at 12.4 rad/s)
    assert data["phase_margin_deg"]["designed"] - data["phase_margin_deg"]["measured"] > 5.0
    assert (out / "bode.png").stat().st_size > 0 and "bode.png" in (out / "index.html").read_text()
    assert "margins: 1/1 measured (push)" in done.stderr  # a line per finished run, not on a terminal
    bad = subprocess.run([sys.executable, "-m", "crossdyn.experiments", "margins", "pendulum-lagrange",
                          "--out", str(tmp_path / "x")], capture_output=True, text=True, timeout=120,
                         env={"MPLBACKEND": "Agg", "PATH": ""})
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "no loop to measure" in bad.stderr


def test_a_measurement_says_whether_it_measured_the_loop(cart_pole):
    """The design's loop: no problem, its two halves and half its amplitude agree within a few percent.  The same
    regulator with its sign flipped (positive feedback) stays a number no longer: the run grows and saturates, and
    the measurement says it measured no loop (it had reported a phase margin of 77.7 deg)."""
    model, reg = cart_pole
    good = measure_loop(model, reg, control_dt=CONTROL_DT, keyframe="upright", frequencies=NEAR_CROSSOVER)
    assert good.valid and not good.loops[0].problems
    assert good.loops[0].agreement["half_amplitude"] < 0.05 and good.loops[0].agreement["halves"] < 0.05

    class Flipped:  # u = u_op + K x: the loop of the wrong sign
        control_dt = CONTROL_DT

        def __call__(self, t, obs):
            return 2 * reg.linearization.ctrl - reg(t, obs)

    bad = measure_loop(model, Flipped(), control_dt=CONTROL_DT, keyframe="upright", frequencies=NEAR_CROSSOVER,
                       design=reg)
    assert not bad.valid
    assert "no measurement of the loop at 'push'" in str(bad)
    assert "grew" in str(bad) or "saturated" in str(bad)


def test_crossdyn_margins_exits_1_for_a_loop_that_fell(tmp_path):
    """A 150-period (0.3 s) delay: the pole falls and the motor is clamped most of the run; exit 1 saying so (it
    had exited 0 with a phase margin of -0.02 deg)."""
    done = subprocess.run([sys.executable, "-m", "crossdyn.experiments", "margins", "cart-pole-lqr", "--short",
                           "--delay", "150", "--out", str(tmp_path / "m")], capture_output=True, text=True,
                          timeout=300, env={"MPLBACKEND": "Agg", "PATH": ""})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no measurement of the loop at 'push': the actuators saturated" in done.stdout
    data = json.loads((tmp_path / "m" / "margins.json").read_text())
    assert data["loops"][0]["valid"] is False and data["loops"][0]["problems"]


def test_compare_to_design_says_a_run_diverged(cart_pole):
    """A 150-period delay: the pole falls, the motor clamps; the comparison says the run diverged (it had said a
    mode was "held at the noise floor")."""
    model, reg = cart_pole
    trace = simulate(model, reg, 4.0, keyframe="upright", qpos=[0, 0.2], control_dt=CONTROL_DT,
                     imperfections=[Delay(150)])
    check = compare_to_design(trace, reg)
    assert check.agrees is False and check.diverged
    assert check.sentence.startswith("the loop is not the design: the run diverged (its state grew from")
    assert "saturation: 'push'" in check.sentence


def test_a_correct_discrete_design_of_a_7_dof_arm_is_the_design_in_its_run():
    """A discrete LQR of a 7-dof arm at its 2 ms rate, run from a small offset: each mode fitted over the span its
    designed decay is visible in (the three fastest had been judged on the slow modes' leakage and called 'not the
    design'), the one faster than the rows resolve left out."""
    arm = load_model(MODELS / "arm7.xml")
    arm.actuator_ctrllimited[:] = 1
    arm.actuator_ctrlrange[:] = [-40.0, 40.0]
    reg = regulator(arm, 1.0, 1e-2, keyframe="home", dt=0.002)
    start = arm.key("home").qpos.copy()
    start[1] += 0.05
    trace = simulate(arm, reg, 2.0, keyframe="home", qpos=start, control_dt=0.002)
    check = compare_to_design(trace, reg)
    assert check.agrees and check.sentence == "", str(check)
    assert any("faster than the run's rows resolve" in m.note for m in check.modes)


USER_LOOP = '''
from crossdyn import Param, experiment, load_model, regulator
from crossdyn.experiments.core.margins import LoopSetup, register_loop


@experiment("my-cart-pole", summary="a user's own loop", expected="always",
            params={"r": Param(0.1, "LQR weight on the force", 1e-3, 10.0)})
def mine(ctx):
    return {"passed": True, "measured": "nothing"}


@register_loop("my-cart-pole")
def _loop(params, short):
    model = load_model("cart_pole")
    reg = regulator(model, [1, 10, 1, 1], params["r"], keyframe="upright", dt=0.002)
    return LoopSetup(model, reg, 0.002, keyframe="upright", frequencies=(4.0, 8.0, 12.0, 16.0, 24.0, 40.0))
'''


def test_crossdyn_margins_from_a_users_file(tmp_path):
    """crossdyn margins --from FILE.py: a user's own experiment and loop, as run, tune and gains take them."""
    source = tmp_path / "my_loop.py"
    source.write_text(USER_LOOP)
    env = {"MPLBACKEND": "Agg", "PATH": ""}
    done = subprocess.run([sys.executable, "-m", "crossdyn.experiments", "margins", "my-cart-pole", "--from",
                           str(source), "--set", "r=0.2", "--out", str(tmp_path / "m")], capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "m" / "margins.json").read_text())
    assert data["experiment"] == "my-cart-pole" and data["params"]["r"] == 0.2
    assert data["loops"][0]["valid"] and 50 < data["phase_margin_deg"]["measured"] < 80
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('my file is broken')\n")
    bad = subprocess.run([sys.executable, "-m", "crossdyn.experiments", "margins", "my-cart-pole", "--from",
                          str(broken), "--out", str(tmp_path / "x")], capture_output=True, text=True, timeout=120,
                         env=env)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "my file is broken" in bad.stderr, bad.stderr
