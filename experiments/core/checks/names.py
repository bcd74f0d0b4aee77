"""Names a report can use for a model's joints, dofs, equalities and coordinate conventions.

An unnamed joint is named by its body (``torso``, ``torso#2`` for a body's second
joint), an unnamed equality by what it ties together, not ``joint0.z`` or ``equality '#0'``.
"""

from __future__ import annotations

import mujoco
import numpy as np

__all__ = ["joint_name", "joint_label", "dof_names", "dof_joints", "equality_label", "body_name", "conventions",
           "ROW_NAMES"]

# The rows of a 6-row Jacobian (linear, then angular), in words.
ROW_NAMES = ("linear x", "linear y", "linear z", "angular x", "angular y", "angular z")

_FREE, _BALL = int(mujoco.mjtJoint.mjJNT_FREE), int(mujoco.mjtJoint.mjJNT_BALL)


def body_name(model: mujoco.MjModel, b: int) -> str:
    """A body's name, or ``body3`` for an unnamed one (``world`` for body 0)."""
    return model.body(int(b)).name or ("world" if b == 0 else f"body{int(b)}")


def joint_name(model: mujoco.MjModel, j: int) -> str:
    """A joint's name; an unnamed one is named by its body (``torso``, ``torso#2``)."""
    name = model.joint(int(j)).name
    if name:
        return name
    body = int(model.jnt_bodyid[j])
    siblings = np.flatnonzero(np.asarray(model.jnt_bodyid) == body)
    base = body_name(model, body)
    return base if len(siblings) == 1 else f"{base}#{int(np.flatnonzero(siblings == j)[0]) + 1}"


def joint_label(model: mujoco.MjModel, j: int) -> str:
    """``joint 'elbow'``, or ``the joint of body 'tail'`` for an unnamed one."""
    if model.joint(int(j)).name:
        return f"joint {model.joint(int(j)).name!r}"
    body = int(model.jnt_bodyid[j])
    siblings = np.flatnonzero(np.asarray(model.jnt_bodyid) == body)
    if len(siblings) == 1:
        return f"the joint of body {body_name(model, body)!r}"
    return f"joint {int(np.flatnonzero(siblings == j)[0]) + 1} of body {body_name(model, body)!r}"


def dof_names(model: mujoco.MjModel) -> list[str]:
    """A readable name per dof: the joint's name, suffixed on free (``.x`` .. ``.rz``) and ball (``.rx`` ..) joints."""
    suffixes = {_FREE: ["x", "y", "z", "rx", "ry", "rz"], _BALL: ["rx", "ry", "rz"]}
    names = []
    for j in range(model.njnt):
        base = joint_name(model, j)
        extra = suffixes.get(int(model.jnt_type[j]))  # int: numpy ints do not match the enum keys
        names.extend([f"{base}.{s}" for s in extra] if extra else [base])
    return names


def dof_joints(model: mujoco.MjModel) -> np.ndarray:
    """The joint of each dof, ``(nv,)``."""
    return np.asarray(model.dof_jntid, dtype=int)


def _object(model: mujoco.MjModel, kind: int, index: int) -> str:
    if kind == int(mujoco.mjtObj.mjOBJ_BODY) or kind == int(mujoco.mjtObj.mjOBJ_XBODY):
        return f"body {body_name(model, index)!r}"
    if kind == int(mujoco.mjtObj.mjOBJ_SITE):
        return f"site {model.site(index).name or f'#{index}'!r}"
    if kind == int(mujoco.mjtObj.mjOBJ_JOINT):
        return joint_label(model, index)
    if kind == int(mujoco.mjtObj.mjOBJ_TENDON):
        return f"tendon {model.tendon(index).name or f'#{index}'!r}"
    return f"object {index}"


def equality_label(model: mujoco.MjModel, e: int) -> str:
    """``equality 'couple'``, or ``the equality between body 'tail' and body 'world'`` for an unnamed one."""
    name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_EQUALITY, int(e))
    if name:
        return f"equality {name!r}"
    kinds = getattr(model, "eq_objtype", None)
    eq_type = int(model.eq_type[e])
    if kinds is not None:
        kind = int(kinds[e])
    elif eq_type == int(mujoco.mjtEq.mjEQ_JOINT):
        kind = int(mujoco.mjtObj.mjOBJ_JOINT)
    elif eq_type == int(mujoco.mjtEq.mjEQ_TENDON):
        kind = int(mujoco.mjtObj.mjOBJ_TENDON)
    else:
        kind = int(mujoco.mjtObj.mjOBJ_BODY)
    first = _object(model, kind, int(model.eq_obj1id[e]))
    second = int(model.eq_obj2id[e])
    if second < 0 or (eq_type in (int(mujoco.mjtEq.mjEQ_JOINT), int(mujoco.mjtEq.mjEQ_TENDON)) and second < 0):
        return f"the equality on {first}"
    return f"the equality between {first} and {_object(model, kind, second)}"


def conventions(model: mujoco.MjModel) -> list[str]:
    """One sentence per free or ball joint on MuJoCo's coordinates for it (empty when there is none): its
    free joint's ``qvel[0:3]`` is in the world frame but ``qvel[3:6]`` in the body's, unlike Pinocchio's
    and Drake's."""
    out = []
    for j in range(model.njnt):
        kind = int(model.jnt_type[j])
        if kind == _FREE:
            out.append(f"free joint {joint_name(model, j)!r} (body {body_name(model, int(model.jnt_bodyid[j]))!r}): "
                       "qpos = [x, y, z, qw, qx, qy, qz] (body origin in the world, unit quaternion); qvel[0:3] is "
                       "the world-frame linear velocity of the body origin, qvel[3:6] the angular velocity in the "
                       "body frame (Pinocchio's free flyer takes both in the body frame)")
        elif kind == _BALL:
            out.append(f"ball joint {joint_name(model, j)!r}: qpos = [qw, qx, qy, qz] relative to the body's "
                       "reference orientation; its three dofs are the angular velocity in the body frame")
    return out
