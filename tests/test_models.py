"""Invariants over every shipped MJCF model.

Each model compiles, its sizes are pinned (a changed model must change this table
on purpose), every body, joint and actuator is named (experiments read by name),
and the same initial state gives the same trajectory.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from crossdyn import mjcf
from crossdyn.experiments.core.models import load_model

# (nq, nv, nu) per built-in model.
PINNED = {
    "two_link_arm": (2, 2, 2),
    "two_link_arm_point_mass": (2, 2, 2),
    "spatial_arm": (7, 7, 0),
    "free_tree": (11, 10, 0),
    "rigid_box": (7, 6, 2),
    "rigid_box_ground": (7, 6, 0),
    # The five-bar biped and its larger copy: a free body, four hips, four knees, two wheels; six motors.
    **dict.fromkeys(("wheel_legged_biped", "wheel_legged_biped_large"), (17, 16, 6)),
    "wheel_legged_biped_rod": (13, 12, 6),  # a free body, per leg a hip, a length and a wheel
    "cart_pole": (2, 2, 1),
    "double_pendulum_cart": (3, 3, 1),
    "pendulum": (1, 1, 1),
}


def test_every_model_is_pinned():
    unpinned = sorted(set(mjcf.names()) - set(PINNED))
    assert not unpinned, f"add these models to PINNED with their (nq, nv, nu): {unpinned}"


@pytest.mark.parametrize("name", mjcf.names())
def test_model_compiles_with_pinned_sizes(name):
    model = load_model(name)
    if PINNED.get(name) is not None:
        assert (model.nq, model.nv, model.nu) == PINNED[name]


@pytest.mark.parametrize("name", mjcf.names())
def test_everything_is_named(name):
    model = load_model(name)
    for kind, count in (("body", model.nbody), ("joint", model.njnt), ("actuator", model.nu)):
        start = 1 if kind == "body" else 0  # body 0 is the world
        unnamed = [i for i in range(start, count) if not getattr(model, kind)(i).name]
        assert not unnamed, f"{name}: unnamed {kind}(s) {unnamed}"


@pytest.mark.parametrize("name", mjcf.names())
def test_same_state_same_trajectory(name):
    model = load_model(name)
    runs = []
    for _ in range(2):
        data = mujoco.MjData(model)
        rng = np.random.default_rng(0)
        data.qvel[:] = rng.uniform(-0.5, 0.5, model.nv)
        data.ctrl[:] = rng.uniform(-0.1, 0.1, model.nu)
        for _ in range(200):
            mujoco.mj_step(model, data)
        runs.append(np.concatenate([data.qpos, data.qvel]))
    np.testing.assert_array_equal(runs[0], runs[1])  # bit-identical: MuJoCo is deterministic
