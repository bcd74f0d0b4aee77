"""The lecture §10.3's unit-vector method and its semi-implicit Euler simulator vs MuJoCo."""

from __future__ import annotations

import functools

import mujoco
import numpy as np
import pytest

from crossdyn.analytic.rnea import rnea
from crossdyn.analytic.two_link import lecture_no_link_inertia
from crossdyn.analytic.unit_vector import forward_dynamics, integrate_dynamics, integrate_pos, mass_matrix_and_bias
from crossdyn.experiments.core.checks.common import sample_states
from crossdyn.experiments.core.checks.tree import tree_from_model
from crossdyn.experiments.core.models import load_model
from crossdyn.experiments.core.truth import bias_force, mass_matrix
from crossdyn.experiments.two_link import two_link_params
from crossdyn.experiments.unit_vector import mujoco_euler, simulator_error
from support import assert_close

# A and b vs mj_fullM and qfrc_bias: the 1e-10 x scale.  Both sides are
# sums of a few dozen double products, so round-off is ~1e-15 x scale.
MATRIX_RTOL = 1e-10
# Same equations, same integrator, same dt: only round-off separates the two
# trajectories; the 1e-8 over 2 s leaves room for its amplification.
TRAJECTORY_TOL = 1e-8


@pytest.mark.parametrize("name", ["spatial_arm", "free_tree"])  # fixed and floating base
def test_mass_matrix_and_bias_match_mujoco(name):
    model = load_model(name)
    tree = tree_from_model(model)
    q, qd, _ = sample_states(model, 200, seed=7)
    A, b = mass_matrix_and_bias(functools.partial(rnea, tree), q, qd)
    M_ref, b_ref = mass_matrix(model, q), bias_force(model, q, qd)
    assert A.shape == (200, model.nv, model.nv)
    assert_close(A, M_ref, atol=MATRIX_RTOL * np.abs(M_ref).max(), what=f"A vs mj_fullM ({name})")
    assert_close(b, b_ref, atol=MATRIX_RTOL * np.abs(b_ref).max(), what=f"b vs qfrc_bias ({name})")
    assert np.linalg.eigvalsh(0.5 * (A + np.swapaxes(A, 1, 2))).min() > 0  # M is positive definite


def test_single_state_and_forward_dynamics_match_mj_forward():
    model = load_model("free_tree")
    tree = tree_from_model(model)
    id_fn = functools.partial(rnea, tree)
    q, qd, tau = sample_states(model, 20, seed=8)
    A, b = mass_matrix_and_bias(id_fn, q[0], qd[0])
    assert A.shape == (model.nv, model.nv) and b.shape == (model.nv,)
    qdd = forward_dynamics(id_fn, q, qd, tau)
    data = mujoco.MjData(model)
    expected = np.empty_like(qdd)
    for k in range(q.shape[0]):
        data.qpos[:], data.qvel[:], data.qfrc_applied[:] = q[k], qd[k], tau[k]
        mujoco.mj_forward(model, data)
        expected[k] = data.qacc
    # qacc reaches ~1e4 rad/s^2 on the light limbs (qd to 30 rad/s, tau to 100); LDL vs LU round-off,
    # ~1e-11 of it on these ill-conditioned limbs, with a factor 100 to spare.
    assert_close(qdd, expected, atol=1e-8, rtol=1e-9, what="forward dynamics vs mj_forward qacc")


def test_integrate_pos_matches_mujoco():
    model = load_model("free_tree")
    tree = tree_from_model(model)
    q, qd, _ = sample_states(model, 10, seed=9)
    ours = integrate_pos(tree.joint_type, q, qd, 0.01)
    for k in range(q.shape[0]):
        expected = q[k].copy()
        mujoco.mj_integratePos(model, expected, qd[k], 0.01)
        assert_close(ours[k], expected, atol=1e-15, what="integrate_pos vs mj_integratePos")  # same formula


@pytest.mark.parametrize("name", ["two_link_arm", "free_tree"])  # fixed and floating base
def test_simulator_matches_mujoco_euler_over_2s(name):
    error = simulator_error(load_model(name), seconds=2.0, seed=0)
    assert error.size == 2001
    assert error.max() <= TRAJECTORY_TOL, f"max |ours - MuJoCo Euler| = {error.max():.2e}"


def test_simulator_tells_a_wrong_model_apart():
    # the lecture as printed misses the link inertias: its trajectory must leave
    # MuJoCo's by far more than the tolerance within 0.5 s.
    model = load_model("two_link_arm")
    params = two_link_params(model)
    id_fn = functools.partial(lecture_no_link_inertia, params)
    q0, qd0 = np.array([0.8, -0.4]), np.array([0.5, 1.0])
    ours, _ = integrate_dynamics(id_fn, ("hinge", "hinge"), q0, qd0, model.opt.timestep, 500)
    theirs, _ = mujoco_euler(model, q0, qd0, 500)
    assert np.abs(ours - theirs).max() > 1e3 * TRAJECTORY_TOL


def test_simulator_compute_judge_plot(tmp_path):
    """The experiment's parts: computed without a Context, judged, drawn; the judge can say FAIL."""
    from crossdyn.experiments import unit_vector as uv

    result = uv.simulator_comparison(seconds=0.2, seed=0)
    assert result.horizon == {"two_link_arm": 0.2, "free_tree": 0.2, "spatial_arm": 0.2}
    verdict, metrics = uv.judge_simulator(result)
    assert verdict.passed and metrics["passed"] is True and metrics["measured"] == verdict.measured
    # One step 1e-6 off on the free tree (a dropped term would do far worse): FAIL.
    bad = result.errors["free_tree"].copy()
    bad[-1] = 1e-6
    broken = uv.SimulatorResult(result.horizon, result.timestep, {**result.errors, "free_tree": bad},
                                result.self_divergence)
    verdict, metrics = uv.judge_simulator(broken)
    assert not verdict.passed and metrics["max_error"]["free_tree"] == 1e-6
    assert [p.name for p in uv.plot_simulator(result, tmp_path)] == ["trajectory_error.png"]
