"""The rigid-body :class:`~crossdyn.analytic.rnea.Tree` of a compiled MuJoCo model: what crossdyn's own
recursive algorithms (and a user's derivation) compute on."""

from __future__ import annotations

import mujoco
import numpy as np

from ....analytic.rnea import Tree
from ....analytic.rotation import quat_to_matrix
from ..errors import ModelError
from ..models import body_inertia
from ..truth import truth_model

__all__ = ["tree_from_model", "rigid_tree"]


_TYPES = {
    int(mujoco.mjtJoint.mjJNT_HINGE): "hinge",
    int(mujoco.mjtJoint.mjJNT_SLIDE): "slide",
    int(mujoco.mjtJoint.mjJNT_BALL): "ball",
    int(mujoco.mjtJoint.mjJNT_FREE): "free",
}


def tree_from_model(model: mujoco.MjModel) -> Tree:
    """Describe a compiled model as a :class:`~analytic.rnea.Tree`: its rigid-body part only.

    What MuJoCo adds on top (armature, damping, contacts, ...) is not in it, so its
    RNEA equals the truth of ``check derivation --dynamics rigid-body``.

    Raises:
      ModelError: the model's joints cannot be described as a tree (a free joint below the world, say).
    """
    nb = model.nbody - 1  # MuJoCo's body 0 is the world
    gravity = np.array(model.opt.gravity, dtype=float)
    if model.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_GRAVITY:
        gravity = np.zeros(3)
    inertia = np.array([body_inertia(model, b + 1) for b in range(nb)]).reshape(nb, 3, 3)
    kinds = tuple(_TYPES[int(k)] for k in model.jnt_type)
    ref = np.array([model.qpos0[model.jnt_qposadr[j]] if kinds[j] in ("hinge", "slide") else 0.0
                    for j in range(model.njnt)])
    try:
        tree = Tree(
            parent=np.asarray(model.body_parentid[1:], dtype=int) - 1,
            pos=np.array(model.body_pos[1:], dtype=float),
            rot=quat_to_matrix(model.body_quat[1:]).reshape(nb, 3, 3),
            mass=np.array(model.body_mass[1:], dtype=float),
            com=np.array(model.body_ipos[1:], dtype=float),
            inertia=inertia,
            joint_body=np.asarray(model.jnt_bodyid, dtype=int) - 1,
            joint_type=kinds,
            joint_axis=np.array(model.jnt_axis, dtype=float).reshape(-1, 3),
            joint_pos=np.array(model.jnt_pos, dtype=float).reshape(-1, 3),
            joint_ref=ref,
            gravity=gravity,
            body_names=tuple(model.body(b + 1).name for b in range(nb)),
            joint_names=tuple(model.joint(j).name for j in range(model.njnt)),
        )
    except ValueError as exc:
        raise ModelError(f"model cannot be described as a tree for analytic.rnea: {exc}") from None
    if not (np.array_equal(tree.qpos_adr, model.jnt_qposadr) and np.array_equal(tree.dof_adr, model.jnt_dofadr)):
        raise ModelError("the model's joint coordinates are not packed joint by joint; cannot map them")
    return tree


def rigid_tree(model: mujoco.MjModel):
    """crossdyn's own tree of the model's rigid bodies, or None when it cannot describe the model."""

    try:
        return tree_from_model(truth_model(model, "rigid-body"))
    except ModelError:
        return None
