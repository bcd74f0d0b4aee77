"""The lecture's spatial RNEA (analytic.rnea) against mj_inverse and the two-link closed forms."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import mujoco
import numpy as np
import pytest

from crossdyn.analytic.rnea import Tree, apply_spatial_inertia, rnea, spatial_inertia
from crossdyn.analytic.two_link import lagrange, newton_euler
from crossdyn.experiments.core.checks.common import sample_states
from crossdyn.experiments.core.checks.tree import tree_from_model
from crossdyn.experiments.core.models import load_model, model_path
from crossdyn.experiments.core.truth import inverse_dynamics, truth_model
from crossdyn.experiments.two_link import two_link_params
from support import assert_close

# The bound: |error| <= 1e-9 (1 + |tau|).  Torques reach ~500 N m at these
# random states (|qd| <= 10, |qdd| <= 50); round-off is ~1e-13, 4 orders below.
TOL = 1e-9
MODELS = ("two_link_arm", "spatial_arm", "free_tree")


@pytest.fixture(scope="module", params=MODELS)
def model_and_tree(request):
    model = load_model(request.param)
    return request.param, model, tree_from_model(model)


def test_rnea_matches_mj_inverse_at_1000_states(model_and_tree):
    name, model, tree = model_and_tree
    q, qd, qdd = sample_states(model, 1000, seed=3)
    assert_close(rnea(tree, q, qd, qdd), inverse_dynamics(model, q, qd, qdd), atol=TOL, rtol=TOL,
                 what=f"rnea vs mj_inverse on {name}")


def test_rnea_batch_shapes(model_and_tree):
    _, model, tree = model_and_tree
    q, qd, qdd = sample_states(model, 6, seed=4)
    full = rnea(tree, q, qd, qdd)
    assert rnea(tree, q[2], qd[2], qdd[2]).shape == (model.nv,)
    # A (2, 3) batch is the same computation reshaped: identical to the bit.
    shaped = rnea(tree, q.reshape(2, 3, -1), qd.reshape(2, 3, -1), qdd.reshape(2, 3, -1))
    np.testing.assert_array_equal(shaped.reshape(6, -1), full)


def test_rnea_equals_two_link_closed_forms():
    model = load_model("two_link_arm")
    tree, params = tree_from_model(model), two_link_params(model)
    q, qd, qdd = sample_states(model, 500, seed=5)
    tau = rnea(tree, q, qd, qdd)
    # Three independent derivations of torques of ~2 N m: round-off only.
    assert_close(tau, lagrange(params, q, qd, qdd), atol=1e-12, what="rnea vs Lagrange closed form")
    assert_close(tau, newton_euler(params, q, qd, qdd), atol=1e-12, what="rnea vs the Newton-Euler article's recursion")


def test_a_wrong_inertia_is_caught():
    model = load_model("spatial_arm")
    tree = tree_from_model(model)
    inertia = tree.inertia.copy()
    inertia[3, 0, 1] += 1e-4  # one product of inertia of the slider, kg m^2
    inertia[3, 1, 0] += 1e-4
    wrong = dataclasses.replace(tree, inertia=inertia)
    q, qd, qdd = sample_states(model, 50, seed=6)
    err = np.abs(rnea(wrong, q, qd, qdd) - inverse_dynamics(model, q, qd, qdd))
    assert err.max() > 1e3 * TOL  # a 1e-4 kg m^2 error at 50 rad/s^2 moves torques by ~1e-3 N m


def test_free_joint_velocity_layout():
    # MuJoCo's free joint: qvel[0:3] is the world velocity of the body origin and
    # qvel[3:6] the body-frame angular velocity.  With only the torso spinning
    # about its own x axis and its origin at rest, the force needed to keep the
    # origin fixed is the centripetal m w^2 r of the CoM offset, in the world.
    model = load_model("free_tree")
    tree = dataclasses.replace(tree_from_model(model), gravity=np.zeros(3))
    solo = dataclasses.replace(tree, mass=np.where(np.arange(len(tree.mass)) == 0, tree.mass, 0.0),
                               inertia=tree.inertia * (np.arange(len(tree.mass)) == 0)[:, None, None])
    angle = 0.7
    q = np.zeros(model.nq)
    q[3:7] = [np.cos(angle / 2), 0.0, 0.0, np.sin(angle / 2)]  # torso yawed by 0.7 rad
    qd = np.zeros(model.nv)
    qd[3] = 2.0  # rad/s about the body x axis
    force = rnea(solo, q, qd, np.zeros(model.nv))[:3]
    R = np.array([[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0], [0, 0, 1]])
    w = R @ np.array([2.0, 0.0, 0.0])
    r = R @ tree.com[0]
    expected = tree.mass[0] * np.cross(w, np.cross(w, r))
    # O(1) N forces: round-off.
    assert_close(force, expected, atol=1e-12, what="force holding a spinning torso's origin")


def _edit(name, edit):
    spec = mujoco.MjSpec.from_file(str(model_path(name)))
    edit(spec)
    return spec.compile()


def test_ball_joints_match_mj_inverse():
    """Ball joints with off-origin anchors, a slide below one, a hinge above (tests/models/ball_chain.xml)."""
    model = load_model(Path(__file__).parent / "models" / "ball_chain.xml")
    tree = tree_from_model(model)
    assert tree.joint_type.count("ball") == 2 and (tree.nq, tree.nv) == (model.nq, model.nv)
    q, qd, qdd = sample_states(model, 300, seed=12)
    # The equality constraint is switched off in the truth; torques reach ~100 N m: round-off.
    assert_close(rnea(tree, q, qd, qdd), inverse_dynamics(truth_model(model), q, qd, qdd), atol=TOL, rtol=TOL,
                 what="rnea vs mj_inverse with ball joints")


def test_ball_followed_by_a_rotation_is_refused():
    tree = tree_from_model(load_model(Path(__file__).parent / "models" / "ball_chain.xml"))
    kinds = list(tree.joint_type)
    kinds[tree.joint_type.index("ball") + 2] = "hinge"  # the slide after the elbow ball becomes a hinge
    with pytest.raises(ValueError, match="followed by a rotation"):
        dataclasses.replace(tree, joint_type=tuple(kinds))


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: setattr(s.joint("elbow"), "armature", 0.01),
        lambda s: setattr(s.joint("elbow"), "damping", [0.3, 0.0, 0.0]),  # MuJoCo 4: damping polynomial
        lambda s: setattr(s.body("hand"), "gravcomp", 1.0),
    ],
    ids=["armature", "damping", "gravcomp"],
)
def test_tree_is_the_rigid_body_part(edit):
    """A model with passive effects gives the tree of its rigid bodies.

    RNEA equals the rigid-body truth, not mj_inverse.
    """
    model = _edit("spatial_arm", edit)
    q, qd, qdd = sample_states(model, 20, seed=11)
    tau = rnea(tree_from_model(model), q, qd, qdd)
    # O(10) N m torques: round-off.
    assert_close(tau, inverse_dynamics(truth_model(model, "rigid-body"), q, qd, qdd), atol=1e-10, what="RNEA")
    assert np.abs(tau - inverse_dynamics(model, q, qd, qdd)).max() > 1e-6  # the effect is really there


def test_tree_validates_its_arrays():
    model = load_model("two_link_arm")
    tree = tree_from_model(model)
    with pytest.raises(ValueError, match="parents first"):
        dataclasses.replace(tree, parent=np.array([1, -1]))
    with pytest.raises(ValueError, match=r"qpos must have shape \(\.\.\., 2\)"):
        rnea(tree, np.zeros(3), np.zeros(2), np.zeros(2))
    assert isinstance(tree, Tree) and tree.nq == 2 and tree.nv == 2


def test_applied_spatial_inertia_is_the_seed_matrix():
    # rnea applies I^S without forming it; the product must be the lecture's matrix times xi.
    rng = np.random.default_rng(14)
    c, xi = rng.normal(size=(20, 3)), rng.normal(size=(20, 6))
    L = rng.normal(size=(20, 3, 3))
    inertia = L @ np.swapaxes(L, 1, 2)
    matrix = spatial_inertia(2.5, c, inertia)
    assert_close(np.swapaxes(matrix, 1, 2), matrix, atol=1e-12, what="I^S symmetric")  # L L^T round-off
    expected = np.einsum("nij,nj->ni", matrix, xi)
    applied = apply_spatial_inertia(2.5, c, np.einsum("nij,nj->ni", inertia, xi[:, 3:]), xi)
    assert_close(applied, expected, atol=1e-12, what="I^S xi")  # O(10) entries: round-off


def test_rnea_experiment_compute_judge_plot(tmp_path):
    """The experiment's parts: computed without a Context, judged, drawn; the judge can say FAIL."""
    from crossdyn.experiments import rnea as rnea_experiment

    result = rnea_experiment.rnea_check("free_tree", samples=50, seed=0)
    assert (result.nq, result.nv) == (load_model("free_tree").nq, load_model("free_tree").nv)
    verdict, metrics = rnea_experiment.judge_rnea(result)
    assert verdict.passed and metrics["passed"] is True and metrics["model"] == "free_tree"
    # A mass matrix off by 1e-6 of its scale (far above round-off, below any plot's eye): FAIL.
    off = {**result.matrices, "mass_matrix_max_abs_error": 1e-6 * result.matrices["mass_matrix_scale"]}
    verdict, _ = rnea_experiment.judge_rnea(dataclasses.replace(result, matrices=off))
    assert not verdict.passed
    assert [p.name for p in rnea_experiment.plot_rnea(result, tmp_path)] == ["term_errors.png"]
