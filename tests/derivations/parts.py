"""Hand derivations of every part (kinematics ... linearization) for the test models, right and wrong.

The right ones are crossdyn's own tree algorithms (``analytic.kinematics``,
``analytic.rnea``), which never see MuJoCo; the wrong ones are the slips the
checks must name: a column's sign, the local frame, the body origin for the site,
a transposed rotation, the armature, a gravity sign, a wrong mass, centre of mass,
inertia or link length.

Models (``tests/models/``): ``floating_base.xml`` (a free joint and two legs),
``urdf_leg.urdf`` (MuJoCo's URDF import), ``arm7.xml`` (armature, damping, a spring
about its springref, gear-2 motor), ``ball_chain.xml`` (ball joints).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from crossdyn.analytic import kinematics as K
from crossdyn.analytic.rnea import rnea
from crossdyn.analytic.rotation import quat_to_matrix
from crossdyn.experiments.core.checks.tree import tree_from_model
from crossdyn.experiments.core.models import load_model
from crossdyn.experiments.core.truth import truth_model

MODELS = Path(__file__).parent.parent / "models"
FLOAT = load_model(MODELS / "floating_base.xml")
URDF = load_model(MODELS / "urdf_leg.urdf")
ARM = load_model(MODELS / "arm7.xml")
BALL = load_model(MODELS / "ball_chain.xml")
TREES = {"float": tree_from_model(FLOAT), "urdf": tree_from_model(URDF), "arm": tree_from_model(truth_model(ARM)),
         "ball": tree_from_model(BALL)}


def _site(model, name):
    site = model.site(name)
    return int(site.bodyid[0]) - 1, np.array(model.site_pos[site.id]), quat_to_matrix(model.site_quat[site.id])


FOOT = _site(FLOAT, "left_foot")
TOOL = _site(ARM, "tool")
HAND = _site(BALL, "hand")


def _with(tree, **changes):
    return dataclasses.replace(tree, **changes)


def _changed(tree, field, body, value):
    array = getattr(tree, field).copy()
    array[body] = value
    return _with(tree, **{field: array})


# --- kinematics and Jacobians -------------------------------------------------------------


def site_pose(tree, site, q):
    body, pos, rot = site
    R, p = K.poses(tree, q)
    return p[..., body, :] + np.einsum("...ij,j->...i", R[..., body, :, :], pos), R[..., body, :, :] @ rot


def foot_pose(q):
    return site_pose(TREES["float"], FOOT, q)


def foot_position(q):
    return foot_pose(q)[0]


def foot_pose_transposed(q):
    p, R = foot_pose(q)
    return p, np.swapaxes(R, -1, -2)


def foot_at_calf_origin(q):
    R, p = K.poses(TREES["float"], q)
    return p[..., FOOT[0], :]


def foot_pose_one_state(q):
    """Written for one state only: a batch does not reshape to (nq,)."""
    p, R = foot_pose(np.asarray(q).reshape(FLOAT.nq))
    return p, R


def foot_jacobian(q):
    return K.point_jacobian(TREES["float"], q, FOOT[0], FOOT[1])


def foot_jacobian_local(q):
    J = foot_jacobian(q)
    Rt = np.swapaxes(foot_pose(q)[1], -1, -2)
    return np.concatenate([Rt @ J[..., :3, :], Rt @ J[..., 3:, :]], axis=-2)


def foot_jacobian_knee_flipped(q):
    J = foot_jacobian(q).copy()
    J[..., FLOAT.joint("left_knee").dofadr[0]] *= -1.0
    return J


def foot_jacobian_at_calf_origin(q):
    return K.point_jacobian(TREES["float"], q, FOOT[0])[..., :3, :]


def foot_jacobian_at_calf_com(q):
    """The calf's centre of mass (``body_ipos``, off its axis) where the foot site belongs."""
    return K.point_jacobian(TREES["float"], q, FOOT[0], FLOAT.body_ipos[FOOT[0] + 1])


def hand_pose(q):
    return site_pose(TREES["ball"], HAND, q)


def hand_jacobian(q):
    return K.point_jacobian(TREES["ball"], q, HAND[0], HAND[1])


def urdf_foot_pose(q):
    R, p = K.poses(TREES["urdf"], q)
    body = URDF.body("foot").id - 1
    return p[..., body, :], R[..., body, :, :]


def urdf_foot_pose_transposed(q):
    p, R = urdf_foot_pose(q)
    return p, np.swapaxes(R, -1, -2)


def urdf_foot_jacobian(q):
    return K.point_jacobian(TREES["urdf"], q, URDF.body("foot").id - 1)


def urdf_foot_jacobian_ankle_flipped(q):
    J = urdf_foot_jacobian(q).copy()
    J[..., URDF.joint("ankle").dofadr[0]] *= -1.0
    return J


# --- mass matrix, bias, energy, forward dynamics ------------------------------------------


def mass_matrix(tree):
    return lambda q: K.mass_matrix(tree, q)


def bias(tree):
    return lambda q, qd: rnea(tree, q, qd, np.zeros(np.shape(qd)))


def energy(tree):
    return lambda q, qd: K.energy(tree, q, qd)


def forward_dynamics(tree, armature=0.0, damping=0.0):
    def fd(q, qd, tau):
        M = K.mass_matrix(tree, q) + np.diag(np.broadcast_to(armature, (tree.nv,)))
        f = tau - rnea(tree, q, qd, np.zeros(np.shape(qd))) - damping * np.asarray(qd)
        return np.linalg.solve(M, f[..., None])[..., 0]
    return fd


def inverse_dynamics(tree):
    return lambda q, qd, qdd: rnea(tree, q, qd, qdd)


# The floating base with one thing wrong (the inertial-parameter rule's cases).
_F = TREES["float"]
TRUNK, THIGH, CALF = (FLOAT.body(n).id - 1 for n in ("trunk", "left_thigh", "left_calf"))
WRONG = {
    "mass": _changed(_F, "mass", TRUNK, 7.5),
    "com": _changed(_F, "com", THIGH, _F.com[THIGH] + [0.01, 0.0, 0.0]),
    "inertia": _changed(_F, "inertia", TRUNK, _F.inertia[TRUNK] + np.diag([0.01, 0.0, 0.0])),
    "link_length": _changed(_F, "pos", CALF, _F.pos[CALF] + [0.0, 0.0, -0.02]),
    "gravity": _with(_F, gravity=-_F.gravity),
}

float_mass_matrix = mass_matrix(_F)
float_mass_matrix_heavy_trunk = mass_matrix(WRONG["mass"])
float_bias = bias(_F)
float_bias_gravity_flipped = bias(WRONG["gravity"])
float_energy = energy(_F)
float_forward = forward_dynamics(_F)
float_forward_heavy_trunk = forward_dynamics(WRONG["mass"])
float_inverse = inverse_dynamics(_F)
urdf_mass_matrix = mass_matrix(TREES["urdf"])
urdf_mass_matrix_long_shin = mass_matrix(_changed(TREES["urdf"], "pos", URDF.body("shin").id - 1,
                                                  TREES["urdf"].pos[URDF.body("shin").id - 1] + [0, 0, -0.03]))
urdf_bias = bias(TREES["urdf"])
urdf_forward = forward_dynamics(TREES["urdf"])
urdf_inverse = inverse_dynamics(TREES["urdf"])


def float_energy_zero_at_base(q, qd):
    """Potential measured from a datum 0.45 m below the world origin: MuJoCo's plus a constant."""
    T, U = float_energy(q, qd)
    mass = TREES["float"].mass.sum()
    return T, U + mass * 9.81 * 0.45


def float_energy_missing_half(q, qd):
    T, U = float_energy(q, qd)
    return 2.0 * T, U


def urdf_energy(q, qd):
    return K.energy(TREES["urdf"], q, qd)


def urdf_energy_potential_flipped(q, qd):
    T, U = urdf_energy(q, qd)
    return T, -U


def urdf_forward_no_coriolis(q, qd, tau):
    return urdf_forward(q, np.zeros_like(qd), tau)


ARMATURE = np.asarray(ARM.dof_armature)
arm_mass_matrix = mass_matrix(TREES["arm"])


def arm_mass_matrix_with_armature(q):
    return arm_mass_matrix(q) + np.diag(ARMATURE)


# --- linearization --------------------------------------------------------------------------

_DAMPING = np.asarray(ARM.dof_damping)
_K = np.asarray(ARM.jnt_stiffness)
_REST = np.asarray(ARM.qpos_spring)
_GEAR = np.asarray(ARM.actuator_gear[:, 0])


def _arm_qdd(tree):
    def qdd(q, qd, u):
        M = K.mass_matrix(tree, q) + np.diag(ARMATURE)
        f = _GEAR * u - rnea(tree, q, qd, np.zeros_like(qd)) - _DAMPING * qd - _K * (q - _REST)
        return np.linalg.solve(M, f)
    return qdd


def finite_difference_linearization(qdd, q, qd, u, eps=1e-6):
    """``(A, B)`` of ``qdd(q, qd, u)`` by central differences (hinges and slides only)."""
    nv, nu = len(qd), len(u)
    A, B = np.zeros((2 * nv, 2 * nv)), np.zeros((2 * nv, nu))
    A[:nv, nv:] = np.eye(nv)
    for i in range(nv):
        e = np.zeros(nv)
        e[i] = eps
        A[nv:, i] = (qdd(q + e, qd, u) - qdd(q - e, qd, u)) / (2 * eps)
        A[nv:, nv + i] = (qdd(q, qd + e, u) - qdd(q, qd - e, u)) / (2 * eps)
    for i in range(nu):
        e = np.zeros(nu)
        e[i] = eps
        B[nv:, i] = (qdd(q, qd, u + e) - qdd(q, qd, u - e)) / (2 * eps)
    return A, B


def arm_linearization(q, qd, u):
    return finite_difference_linearization(_arm_qdd(TREES["arm"]), q, qd, u)


def arm_linearization_gravity_slip(q, qd, u):
    """Gravity entered with the wrong sign: the dq/dq block is the reversed-gravity one."""
    return finite_difference_linearization(_arm_qdd(_with(TREES["arm"], gravity=-TREES["arm"].gravity)), q, qd, u)


def arm_linearization_without_gear(q, qd, u):
    A, B = arm_linearization(q, qd, u)
    return A, B / _GEAR


def urdf_linearization(q, qd, u):
    tree = TREES["urdf"]

    def qdd(q, qd, u):
        return np.linalg.solve(K.mass_matrix(tree, q), -rnea(tree, q, qd, np.zeros_like(qd)))
    return finite_difference_linearization(qdd, q, qd, u)


def urdf_linearization_stiffness_flipped(q, qd, u):
    A, B = urdf_linearization(q, qd, u)
    n = len(qd)
    A[n:, :n] *= -1.0
    return A, B
