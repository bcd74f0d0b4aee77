"""The biped's runs batched (closed_loop.simulate_many): each trace is simulate_scenario's, bit for bit."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from crossdyn.experiments.biped import closed_loop, scenarios
from crossdyn.experiments.biped.imperfections import REALISTIC
from crossdyn.experiments.biped.model import biped_params
from crossdyn.experiments.core.errors import CrossdynError

DURATION = 0.6  # s: 300 control steps, the push inside it


def assert_same(batched, serial):
    for f in dataclasses.fields(serial):
        a, b = getattr(batched, f.name), getattr(serial, f.name)
        if isinstance(b, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg=f.name)
        else:
            assert a == b, f.name


def test_scenarios_with_their_own_imperfections_and_seeds_equal_simulate():
    model = scenarios.robot()
    period, alpha = scenarios.CONTROL_PERIOD, scenarios.ALPHA_NOMINAL
    height = scenarios.stance_height(alpha)
    runs = [
        closed_loop.Scenario(duration=DURATION, alpha0=alpha, control_period=period,
                             reference=lambda t: scenarios.Reference(height=height), initial_tilt=0.05),
        closed_loop.Scenario(duration=DURATION, alpha0=alpha, control_period=period,
                             reference=lambda t: scenarios.Reference(velocity=0.3, height=height),
                             push=(0.2, 20.0, 0.1)),
        closed_loop.Scenario(duration=DURATION, alpha0=alpha, control_period=period,
                             reference=lambda t: scenarios.Reference(yaw=0.5, height=height)),
    ]
    p = biped_params(model)
    mixes = [[], REALISTIC.generic(p, period), REALISTIC.generic(p, period)]
    seeds = [0, 1, 2]
    batched = closed_loop.simulate_many(model, runs, imperfections=mixes, seeds=seeds)
    for sc, mix, seed, trace in zip(runs, mixes, seeds, batched, strict=True):
        assert_same(trace, closed_loop.simulate_scenario(model, sc, imperfections=mix, seed=seed))
    with pytest.raises(AssertionError):  # the comparison sees another seed
        assert_same(batched[2], closed_loop.simulate_scenario(model, runs[2], imperfections=mixes[2], seed=5))


def test_scenarios_of_different_lengths_are_refused():
    model = scenarios.robot()
    runs = [closed_loop.Scenario(duration=d, alpha0=scenarios.ALPHA_NOMINAL, reference=lambda t: scenarios.Reference())
            for d in (0.1, 0.2)]
    with pytest.raises(CrossdynError, match="one duration"):
        closed_loop.simulate_many(model, runs)
