"""Many closed loops in lockstep (mujoco.batch): each simulation's trace is simulate's, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import crossdyn
from crossdyn.experiments.cart_pole import design
from crossdyn.experiments.core import imperfections as imp
from crossdyn.experiments.core.errors import ControllerError, ParameterError
from crossdyn.experiments.core.loop.batch import simulate_batch
from crossdyn.experiments.core.loop.simulate import simulate
from crossdyn.experiments.core.models import load_model

CART_POLE = load_model("cart_pole")
FIELDS = ("t", "qpos", "qvel", "sensordata", "command", "ctrl")
DURATION = 0.3  # s: 150 steps of 2 ms, enough for delays, lags and a push to act
START = [0.0, 0.1]

# Imperfection mixes, one per simulation: every kind of imperfection in some simulation.
MIXES = [
    [],
    [imp.SensorNoise("pole_angle", std=1e-3, bias_std=1e-3), imp.SensorNoise("cart_pos", std=1e-4), imp.Delay(2)],
    [imp.MassScale("pole", 1.2), imp.ActuatorLag("push", 0.02), imp.Push("pole", [5.0, 0.0, 0.0], 0.1, 0.05)],
    [imp.InertiaScale("pole", 0.8), imp.FrictionScale(1.5), imp.Quantization("cart_pos", 1e-3),
     imp.TorqueSpeedLimit("push", no_load_speed=2.0)],
]


def assert_same_traces(batched, serial):
    for k, (b, s) in enumerate(zip(batched, serial, strict=True)):
        for name in FIELDS:
            np.testing.assert_array_equal(getattr(b, name), getattr(s, name), err_msg=f"simulation {k}: {name}")
        assert b.stopped == s.stopped, f"simulation {k}"


@pytest.mark.parametrize("nthread", [1, 2])
def test_regulators_with_their_own_gains_imperfections_and_seeds_equal_simulate(nthread):
    regs = [design({"r": r}) for r in (0.1, 0.2, 0.05)] + [design({}).to([0.3, 0.0])]
    seeds = [5, 6, 7, 8]
    batched = simulate_batch(CART_POLE, regs, DURATION, keyframe="upright", qpos=START, imperfections=MIXES,
                             seeds=seeds, nthread=nthread)
    serial = [simulate(CART_POLE, reg, DURATION, keyframe="upright", qpos=START, imperfections=mix, seed=seed)
              for reg, mix, seed in zip(regs, MIXES, seeds, strict=True)]
    assert_same_traces(batched, serial)


def test_the_check_can_fail_other_seeds_give_other_traces():
    regs = [design({})] * 2
    mixes = [[imp.SensorNoise("pole_angle", std=1e-3), imp.Delay(1)]] * 2
    batched = simulate_batch(CART_POLE, regs, DURATION, keyframe="upright", qpos=START, imperfections=mixes,
                             seeds=[1, 2], nthread=1)
    serial = [simulate(CART_POLE, reg, DURATION, keyframe="upright", qpos=START, imperfections=mix, seed=seed)
              for reg, mix, seed in zip(regs, mixes, [2, 1], strict=True)]
    with pytest.raises(AssertionError):
        assert_same_traces(batched, serial)


class Gain:
    """A controller object on the write_command path, with start()."""

    def __init__(self, k):
        self.k, self.started = k, 0

    def start(self, model, data):
        self.started += 1
        self.qpos, self.qvel = data.qpos, data.qvel

    def write_command(self, t, sensed, command):
        command[0] = self.k * sensed[1] + 3.0 * self.qvel[1]
        return True


def test_one_controller_per_simulation_functions_and_objects_with_stop():
    reg = design({})
    gain = Gain(40.0)
    controllers = [lambda t, obs: reg(t, obs), gain, lambda t, obs: {"push": 0.0}, lambda t, obs: np.zeros(1)]
    starts = [[0.0, 0.1], [0.0, 0.05], [0.0, 0.2], [0.0, 0.3]]

    def fell(obs):
        return "fell" if abs(obs.qpos[1]) > 0.35 else None

    batched = simulate_batch(CART_POLE, controllers, 1.0, keyframe="upright", qpos=starts, imperfections=MIXES,
                             seeds=[0, 1, 2, 3], stop=fell, nthread=2)
    assert gain.started == 1
    serial = [simulate(CART_POLE, c, 1.0, keyframe="upright", qpos=q, imperfections=mix, seed=seed, stop=fell)
              for c, q, mix, seed in zip(controllers, starts, MIXES, [0, 1, 2, 3], strict=True)]
    assert_same_traces(batched, serial)
    assert batched[3].stopped == "fell" and batched[0].stopped is None  # the unbalanced ones left the batch early
    assert len(batched[3].t) < len(batched[0].t)


def test_a_function_over_the_batch():
    def pd(t, obs):
        assert t.shape == (3,) and obs.qpos.shape == (3, 2) and obs.sensor("pole_angle").shape == (3, 1)
        return (60.0 * obs.sensor("pole_angle") + 8.0 * obs.qvel[:, 1:2])

    def pd_one(t, obs):
        return 60.0 * obs.sensor("pole_angle") + 8.0 * obs.qvel[1:2]

    batched = simulate_batch(CART_POLE, pd, DURATION, keyframe="upright", qpos=START, imperfections=MIXES[:3],
                             seeds=[3, 4, 5], nthread=1)
    serial = [simulate(CART_POLE, pd_one, DURATION, keyframe="upright", qpos=START, imperfections=mix, seed=seed)
              for mix, seed in zip(MIXES[:3], [3, 4, 5], strict=True)]
    assert_same_traces(batched, serial)


def test_one_regulator_for_all_and_the_count_from_n():
    traces = simulate_batch(CART_POLE, design({}), DURATION, n=3, keyframe="upright",
                            qpos=[[0.0, 0.1], [0.0, 0.0], [0.1, 0.1]], nthread=1)
    assert len(traces) == 3 and np.all(traces[1].qpos == 0.0)  # upright at rest stays there exactly
    assert not np.array_equal(traces[0].qpos, traces[2].qpos)


@pytest.mark.parametrize("kwargs, error, phrase", [
    ({"controller": [lambda t, obs: np.zeros(1)] * 2, "seeds": [1, 2, 3]}, ParameterError, "disagree"),
    ({"controller": lambda t, obs: np.zeros(1), "seeds": [1, 2]}, ControllerError, "one row of controls"),
    ({"controller": [lambda t, obs: np.zeros(1), lambda t, obs: 1 / 0]}, ControllerError,
     "ZeroDivisionError in simulation 1"),
    ({"controller": [lambda t, obs: np.array([np.nan])]}, ControllerError, "non-finite"),
    ({"controller": lambda t, obs: np.zeros((1, 1))}, ParameterError, "give n"),
    ({"controller": 3, "n": 2}, ParameterError, "controller must be"),
    ({"controller": [design({})], "nthread": -1}, ParameterError, "nthread"),
])
def test_bad_arguments_are_named(kwargs, error, phrase):
    with pytest.raises(error, match=phrase):
        simulate_batch(CART_POLE, duration=0.01, keyframe="upright", **kwargs)


def test_switching_regulators_at_their_own_times_equal_simulate():
    from crossdyn.experiments.core.regulator import Switch

    reg = design({})
    switches = [Switch(reg, reg.to([d, 0.0]), at) for d, at in ((0.3, 0.1), (-0.2, 0.2), (0.1, 0.0))]
    batched = simulate_batch(CART_POLE, switches, DURATION, keyframe="upright", imperfections=MIXES[:3],
                             seeds=[0, 1, 2], nthread=1)
    serial = [simulate(CART_POLE, s, DURATION, keyframe="upright", imperfections=mix, seed=seed)
              for s, mix, seed in zip(switches, MIXES[:3], [0, 1, 2], strict=True)]
    assert_same_traces(batched, serial)
    called = simulate(CART_POLE, lambda t, obs: switches[0](t, obs), DURATION, keyframe="upright",
                      imperfections=MIXES[0], seed=0)
    np.testing.assert_array_equal(called.command, serial[0].command)  # the in-place path computes what a call does


class NaNAfter:
    """A write_command controller whose control turns NaN after 10 ms (no check of its own, as compiled ones)."""

    def write_command(self, t, sensed, command):
        command[0] = np.nan if t > 0.01 else 0.0
        return True


def test_a_nan_reaching_the_actuators_names_its_simulation_on_two_threads():
    from crossdyn import simulate_batch as front_door

    controllers = [Gain(40.0), Gain(40.0), NaNAfter(), Gain(40.0)]
    with pytest.raises(ControllerError, match="non-finite control reached the actuators in simulation 2"):
        front_door(CART_POLE, controllers, 0.1, keyframe="upright", nthread=2)


def test_the_batch_sets_a_run_up_as_simulate_does():
    """One set-up: a regulator designed at 10 ms runs at its period in a batch too (not at the 2 ms time step),
    and a bad seed or an imperfection that does not fit the run is refused as simulate refuses it."""
    reg = design({"r": 0.2})
    discrete = crossdyn.regulator(CART_POLE, Q=[1, 10, 1, 1], R=0.2, keyframe="upright", dt=0.01)
    batched = simulate_batch(CART_POLE, [discrete, reg], DURATION, keyframe="upright", qpos=START, nthread=1)
    serial = [simulate(CART_POLE, c, DURATION, keyframe="upright", qpos=START) for c in (discrete, reg)]
    assert_same_traces(batched[:1], serial[:1])
    np.testing.assert_allclose(np.diff(batched[0].t), 0.01)  # its own period, as simulate runs it
    with pytest.raises(ParameterError, match="seed must be a whole number"):
        simulate_batch(CART_POLE, [reg], DURATION, keyframe="upright", seeds=[-1])
    with pytest.raises(ParameterError, match="different control periods"):
        simulate_batch(CART_POLE, [discrete, discrete.to([0.1, 0.0]), crossdyn.regulator(
            CART_POLE, Q=[1, 10, 1, 1], R=0.2, keyframe="upright", dt=0.004)], DURATION, keyframe="upright")
