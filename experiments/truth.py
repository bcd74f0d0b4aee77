"""MuJoCo as ground truth: loading models, batched inverse dynamics, parameters.

This is the only place (with the rest of ``experiments/``) that imports mujoco.
The analytic side gets its numbers from parameter objects filled here from the
compiled ``MjModel``, so the MJCF stays the single source of physical parameters.
"""

from __future__ import annotations

import os
from pathlib import Path

import mujoco
import numpy as np

import mjcf
from analytic.two_link import TwoLinkParams
from experiments.errors import ModelError, StateError

__all__ = [
    "load_model",
    "model_path",
    "inverse_dynamics",
    "mass_matrix",
    "bias_force",
    "check_exact_dynamics",
    "two_link_params",
    "as_state_batch",
]


def model_path(name_or_path: str | os.PathLike) -> Path:
    """Resolve a built-in model name (``mjcf/NAME.xml``) or a file path.

    Raises:
      ModelError: neither a built-in name nor an existing file.
    """
    text = os.fspath(name_or_path)
    builtin = mjcf.path(text)
    if "/" not in text and not text.endswith(".xml") and builtin.is_file():
        return builtin
    path = Path(text).expanduser()
    if path.is_file():
        return path.resolve()
    known = ", ".join(mjcf.names())
    raise ModelError(f"no model file {text!r} (not a file, and not a built-in model: {known})")


def load_model(name_or_path: str | os.PathLike) -> mujoco.MjModel:
    """Compile an MJCF model from a built-in name or a path.

    Args:
      name_or_path: ``"two_link_arm"`` for ``mjcf/two_link_arm.xml``, or a path to
        any MJCF file.

    Raises:
      ModelError: the file is missing or MuJoCo cannot compile it; the message
        carries the path and MuJoCo's first error line.
    """
    path = model_path(name_or_path)
    try:
        return mujoco.MjModel.from_xml_path(str(path))
    except ValueError as exc:  # MuJoCo reports parse and compile errors as ValueError.
        detail = " ".join(str(exc).split())
        raise ModelError(f"cannot compile {path}: {detail}") from None


def as_state_batch(model: mujoco.MjModel, qpos, qvel, qacc) -> tuple[np.ndarray, ...]:
    """Validate a state and broadcast it to a batch: ``(N, nq), (N, nv), (N, nv)``.

    A single state (1-D arrays) becomes a batch of one.

    Raises:
      StateError: wrong trailing sizes, or NaN/inf entries (the message names
        which array and which row).
    """
    arrays = []
    for name, value, size in (("q", qpos, model.nq), ("qd", qvel, model.nv), ("qdd", qacc, model.nv)):
        a = np.asarray(value, dtype=float)
        if a.ndim == 1:
            a = a[None, :]
        if a.ndim != 2 or a.shape[1] != size:
            raise StateError(f"{name} must have shape (N, {size}) or ({size},) for this model, got {np.shape(value)}")
        bad = ~np.isfinite(a).all(axis=1)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise StateError(f"{name} has a non-finite entry in row {row}: {a[row]}")
        arrays.append(a)
    n = np.broadcast_shapes(*(a.shape[:1] for a in arrays))
    return tuple(np.broadcast_to(a, n + a.shape[1:]) for a in arrays)


def check_exact_dynamics(model: mujoco.MjModel) -> None:
    """Refuse a model whose ``mj_inverse`` is not ``M qacc + bias`` alone.

    ``qfrc_inverse = M qacc + bias - qfrc_passive - qfrc_constraint`` (SPEC §0), and
    armature adds to M's diagonal.  An exact cross-check against a hand model of
    rigid bodies needs all of those off.

    Raises:
      ModelError: naming the element (joint or dof) and the attribute to zero.
    """
    problems = []
    for attr, label in (
        ("dof_armature", "armature"),
        ("dof_damping", "damping"),
        ("dof_frictionloss", "frictionloss"),
    ):
        values = getattr(model, attr)
        for dof in np.flatnonzero(values != 0):
            joint = model.joint(int(model.dof_jntid[dof])).name or f"#{model.dof_jntid[dof]}"
            problems.append(f"joint {joint!r} has {label}={values[dof]:g}")
    for j in np.flatnonzero(model.jnt_stiffness != 0):
        problems.append(f"joint {model.joint(int(j)).name!r} has stiffness={model.jnt_stiffness[j]:g}")
    if model.neq and np.any(model.eq_active0):
        problems.append(f"{int(np.sum(model.eq_active0))} active equality constraint(s)")
    if problems:
        raise ModelError(
            "model is not suitable for an exact rigid-body cross-check (mj_inverse would include "
            "passive or constraint forces, SPEC §0): " + "; ".join(problems) + ". Set these to zero."
        )


def inverse_dynamics(model: mujoco.MjModel, qpos, qvel, qacc, data: mujoco.MjData | None = None,
                     unconstrained: bool = False) -> np.ndarray:
    """MuJoCo's inverse dynamics ``qfrc_inverse`` row by row.

    Args:
      model: compiled model.
      qpos: positions, ``(N, nq)`` or ``(nq,)``.
      qvel: velocities, ``(N, nv)`` or ``(nv,)``.
      qacc: accelerations, ``(N, nv)`` or ``(nv,)``.
      data: optional scratch ``MjData`` to reuse.
      unconstrained: refuse any state at which a constraint is active (a contact,
        a reached joint limit): its force would be in ``qfrc_inverse``.

    Returns:
      Generalized forces, ``(N, nv)`` (N m for hinges, N for slides).  Includes
      whatever passive and constraint forces the model has (SPEC §0); use
      :func:`check_exact_dynamics` first for an exact rigid-body comparison.

    Raises:
      ModelError: with ``unconstrained``, a state with active constraints (the
        message names the state and the constraint kinds).
    """
    qpos, qvel, qacc = as_state_batch(model, qpos, qvel, qacc)
    data = mujoco.MjData(model) if data is None else data
    out = np.empty((qpos.shape[0], model.nv))
    for k in range(qpos.shape[0]):
        data.qpos[:] = qpos[k]
        data.qvel[:] = qvel[k]
        data.qacc[:] = qacc[k]
        mujoco.mj_inverse(model, data)
        if unconstrained and data.nefc:
            kinds = sorted({mujoco.mjtConstraint(int(c)).name.removeprefix("mjCNSTR_").lower()
                            for c in data.efc_type[: data.nefc]})
            raise ModelError(
                f"at state {k} (q = {np.round(qpos[k], 4).tolist()}) {data.nefc} constraint row(s) are active "
                f"({', '.join(kinds)}): mj_inverse then includes constraint forces (SPEC §0). Disable "
                "contacts (contype/conaffinity 0) and joint limits, or check at other states."
            )
        out[k] = data.qfrc_inverse
    return out


def mass_matrix(model: mujoco.MjModel, qpos) -> np.ndarray:
    """Dense joint-space inertia ``M(q)`` from ``mj_fullM``, ``(N, nv, nv)``."""
    qpos = np.atleast_2d(np.asarray(qpos, dtype=float))
    data = mujoco.MjData(model)
    out = np.empty((qpos.shape[0], model.nv, model.nv))
    for k, q in enumerate(qpos):
        data.qpos[:] = q
        mujoco.mj_forward(model, data)
        mujoco.mj_fullM(model, data, out[k])
    return out


def bias_force(model: mujoco.MjModel, qpos, qvel) -> np.ndarray:
    """``qfrc_bias`` (Coriolis, centrifugal and gravity forces), ``(N, nv)``."""
    qpos, qvel, _ = as_state_batch(model, qpos, qvel, np.zeros(model.nv))
    data = mujoco.MjData(model)
    out = np.empty((qpos.shape[0], model.nv))
    for k in range(qpos.shape[0]):
        data.qpos[:] = qpos[k]
        data.qvel[:] = qvel[k]
        mujoco.mj_forward(model, data)
        out[k] = data.qfrc_bias
    return out


# Geometric tolerance for "planar" and "parallel" when reading a user's model:
# MJCF numbers are typed with ~6 significant digits, far above round-off.
_GEOM_TOL = 1e-9


def two_link_params(model: mujoco.MjModel) -> TwoLinkParams:
    """Read a planar two-link arm's parameters from a compiled model.

    The model must follow SPEC §1: two hinge joints in a chain from the world,
    both axes along world z, gravity along -y, link 1 hanging straight down at
    ``q = 0`` with link 2 continuing it, each CoM on its link's line.  Lengths:
    ``l1`` is the distance between the joint anchors; ``l2`` is the distance from
    joint 2 to a site named ``tip`` on link 2 if there is one, else ``2 p2`` (a
    uniform link).  ``i_k`` is the inertia about the world z axis through the CoM.

    Raises:
      ModelError: naming what is not as required (joint count or type, axis,
        gravity direction, zero pose, CoM placement) and the value found.
    """
    if model.njnt != 2 or model.nv != 2:
        raise ModelError(f"a two-link arm needs exactly 2 joints, this model has {model.njnt} (nv={model.nv})")
    for j in range(2):
        if model.jnt_type[j] != mujoco.mjtJoint.mjJNT_HINGE:
            kind = mujoco.mjtJoint(model.jnt_type[j]).name
            raise ModelError(f"joint {model.joint(j).name!r} is {kind}; a two-link arm needs two hinge joints")
    b1, b2 = int(model.jnt_bodyid[0]), int(model.jnt_bodyid[1])
    if model.body_parentid[b1] != 0 or model.body_parentid[b2] != b1:
        raise ModelError("the two joints must form a chain world -> link 1 -> link 2")
    others = np.ones(model.nbody, dtype=bool)
    others[[b1, b2]] = False
    other_mass = float(model.body_mass[others].sum())
    if other_mass > 0:
        raise ModelError(f"bodies other than the two links carry {other_mass:g} kg; the closed form has two bodies")

    gravity = np.array(model.opt.gravity)
    g = float(np.linalg.norm(gravity))
    if g == 0 or np.linalg.norm(gravity / g - [0.0, -1.0, 0.0]) > _GEOM_TOL:
        raise ModelError(f"gravity must point along -y (SPEC §1), this model has gravity={gravity.tolist()}")

    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)  # at qpos0: the reference pose
    if np.any(model.qpos0 != 0):
        raise ModelError(f"qpos0 must be zero (the hanging pose), found {model.qpos0.tolist()}")
    for j in range(2):
        axis = data.xaxis[j]
        if abs(abs(axis[2]) - 1.0) > _GEOM_TOL:
            raise ModelError(f"joint {model.joint(j).name!r} axis is {axis.round(6).tolist()} in the world; it must be +z")
        if axis[2] < 0:
            raise ModelError(f"joint {model.joint(j).name!r} axis is -z; SPEC §1 takes +z (counter-clockwise positive)")
    anchor1, anchor2 = data.xanchor[0], data.xanchor[1]
    com1, com2 = data.xipos[b1], data.xipos[b2]
    for name, point in (("joint 2 anchor", anchor2), ("link 1 CoM", com1), ("link 2 CoM", com2)):
        if abs(point[2] - anchor1[2]) > _GEOM_TOL:
            raise ModelError(f"{name} is off the arm's plane by {point[2] - anchor1[2]:.3g} m in z")

    down = np.array([0.0, -1.0, 0.0])
    link1 = anchor2 - anchor1
    l1 = float(np.linalg.norm(link1))
    if l1 == 0:
        raise ModelError("joint 2 sits on joint 1's axis; link 1 has zero length")
    if np.linalg.norm(link1 / l1 - down) > 1e-6:
        raise ModelError(
            f"at q = 0 link 1 must hang straight down (-y), it points along {(link1 / l1).round(6).tolist()}"
        )

    def along(point, origin, name):
        offset = point - origin
        lateral = offset - (offset @ down) * down
        if np.linalg.norm(lateral) > 1e-6:
            raise ModelError(
                f"{name} is {np.linalg.norm(lateral):.3g} m off the link's line at q = 0; "
                "the closed form needs each CoM on its link"
            )
        return float(offset @ down)

    p1 = along(com1, anchor1, "link 1 CoM")
    p2 = along(com2, anchor2, "link 2 CoM")
    try:
        tip = model.site("tip")
    except KeyError:
        l2 = 2.0 * p2
    else:
        if model.site_bodyid[tip.id] != b2:
            raise ModelError("site 'tip' must be on link 2")
        l2 = along(data.site_xpos[tip.id], anchor2, "site 'tip'")

    def inertia_zz(body):
        rot = data.ximat[body].reshape(3, 3)
        return float((rot @ np.diag(model.body_inertia[body]) @ rot.T)[2, 2])

    return TwoLinkParams(
        l1=l1,
        l2=l2,
        m1=float(model.body_mass[b1]),
        m2=float(model.body_mass[b2]),
        p1=p1,
        p2=p2,
        i1=inertia_zz(b1),
        i2=inertia_zz(b2),
        g=g,
    )
