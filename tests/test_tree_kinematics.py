"""crossdyn's own tree kinematics and inertial-parameter regressor against MuJoCo.

``analytic.kinematics`` (poses, point Jacobians, mass matrix, energies) and
``analytic.regressor`` (``tau = Y pi``) are built on RNEA's outward pass and never
see MuJoCo; here each is compared with MuJoCo's own computation on the test
models (a floating base, a 7-dof arm, ball joints, a URDF).
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest

from crossdyn.analytic import kinematics
from crossdyn.analytic.regressor import body_properties, energy_regressor, inertial_parameters, regressor
from crossdyn.analytic.rnea import rnea
from crossdyn.experiments.core.checks.common import sample_states
from crossdyn.experiments.core.checks.tree import tree_from_model
from crossdyn.experiments.core.models import load_model, with_options
from crossdyn.experiments.core.truth import truth_model
from support import assert_close

MODELS = Path(__file__).parent / "models"
FILES = ("floating_base.xml", "arm7.xml", "ball_chain.xml", "urdf_leg.urdf")
# Every quantity is a few dozen products of O(1) numbers: round-off ~1e-15 of the
# scale; energies reach ~100 J and torques ~100 N m, so 1e-11 absolute.
TOL = 1e-11


@pytest.fixture(scope="module", params=FILES)
def case(request):
    model = truth_model(load_model(MODELS / request.param))  # rigid bodies only: no armature, no springs
    model = with_options(model, enableflags=int(model.opt.enableflags) | int(mujoco.mjtEnableBit.mjENBL_ENERGY))
    return request.param, model, tree_from_model(model)


def _mujoco(model, q, qd):
    data = mujoco.MjData(model)
    out = {"xpos": [], "xmat": [], "M": [], "energy": [], "jac": []}
    last = model.nbody - 1
    point = np.array([0.01, -0.02, 0.03])
    for k in range(len(q)):
        data.qpos[:], data.qvel[:] = q[k], qd[k]
        mujoco.mj_forward(model, data)
        out["xpos"].append(data.xpos[1:].copy())
        out["xmat"].append(data.xmat[1:].reshape(-1, 3, 3).copy())
        M = np.zeros((model.nv, model.nv))
        mujoco.mj_fullM(model, data, M)
        out["M"].append(M)
        out["energy"].append(data.energy.copy())
        jp, jr = np.zeros((3, model.nv)), np.zeros((3, model.nv))
        mujoco.mj_jac(model, data, jp, jr, data.xpos[last] + data.xmat[last].reshape(3, 3) @ point, last)
        out["jac"].append(np.vstack([jp, jr]))
    return {k: np.array(v) for k, v in out.items()}, point


def test_kinematics_mass_matrix_and_energy_match_mujoco(case):
    name, model, tree = case
    q, qd, _ = sample_states(model, 40, seed=21)
    truth, point = _mujoco(model, q, qd)
    R, p = kinematics.poses(tree, q)
    assert_close(p, truth["xpos"], atol=TOL, what=f"{name}: body origins")
    assert_close(R, truth["xmat"], atol=TOL, what=f"{name}: body orientations")
    assert_close(kinematics.point_jacobian(tree, q, model.nbody - 2, point), truth["jac"], atol=TOL,
                 what=f"{name}: point Jacobian")
    assert_close(kinematics.mass_matrix(tree, q), truth["M"], atol=TOL, what=f"{name}: mass matrix")
    T, U = kinematics.energy(tree, q, qd)
    assert_close(np.column_stack([U, T]), truth["energy"], atol=TOL, what=f"{name}: (potential, kinetic)")


def test_regressor_times_parameters_is_rnea(case):
    name, model, tree = case
    q, qd, qdd = sample_states(model, 40, seed=22)
    Y = regressor(tree, q, qd, qdd)
    assert Y.shape == (40, model.nv, 10 * (model.nbody - 1))
    assert_close(Y @ inertial_parameters(tree).ravel(), rnea(tree, q, qd, qdd), atol=TOL, what=f"{name}: Y pi")


def test_energy_regressor_times_parameters_is_the_energy(case):
    name, model, tree = case
    q, qd, _ = sample_states(model, 40, seed=24)
    Y_T, Y_U = energy_regressor(tree, q, qd)
    pi = inertial_parameters(tree).ravel()
    T, U = kinematics.energy(tree, q, qd)
    assert_close(Y_T @ pi, T, atol=TOL, what=f"{name}: Y_T pi")
    assert_close(Y_U @ pi, U, atol=TOL, what=f"{name}: Y_U pi")


def test_regressor_column_is_a_unit_mass():
    """Column (b, m) of Y is the torque of a robot whose only mass is 1 kg at body b's origin."""
    model = load_model(MODELS / "arm7.xml")
    tree = tree_from_model(model)
    b = 4
    lone = type(tree)(**{**tree.__dict__, "mass": np.eye(len(tree.mass))[b], "com": np.zeros_like(tree.com),
                         "inertia": np.zeros_like(tree.inertia)})
    q, qd, qdd = sample_states(model, 20, seed=23)
    assert_close(regressor(tree, q, qd, qdd)[:, :, 10 * b], rnea(lone, q, qd, qdd), atol=TOL,
                 what="unit-mass column")


def test_body_properties_invert_the_parameters():
    tree = tree_from_model(load_model(MODELS / "floating_base.xml"))
    mass, com, inertia = body_properties(inertial_parameters(tree))
    # The parallel-axis shift and back: round-off of kg m^2 entries.
    assert_close(mass, tree.mass, atol=1e-15, what="mass")
    assert_close(com, tree.com, atol=1e-15, what="CoM")
    assert_close(inertia, tree.inertia, atol=1e-15, what="inertia about the CoM")
