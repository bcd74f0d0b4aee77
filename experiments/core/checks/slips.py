"""Is an error one slip in the model's geometry?  Fit it, and name the element and its value.

Each slip (a joint measured the other way, a ``ref`` or ``quat`` left out, a body's
``pos`` or orientation or a joint's axis written wrong) is a change of one element of
the model: MuJoCo's own quantity is recomputed on a copy with that element changed or
fitted (Gauss-Newton on finite differences) and compared under the check's tolerance.
A fit starts from the model's value, so the slips no fit reaches are tried as they
are: a body turned half a turn about one of its axes, and the hinges of a planar
model all measured the other way (its axis drawn reversed).  The simplest slip that
explains every state is reported; two equal ones are both named.  Every quantity a
geometric slip changes is searched: positions, Jacobians, the mass matrix, bias and
gravity forces and inverse dynamics (:func:`dynamics_truth`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import mujoco
import numpy as np

from ....analytic.rotation import matrix_to_quat, quat_to_matrix
from ..linearize import linearize
from ..truth import inverse_dynamics
from .common import mass_matrices
from .names import body_name, joint_name

__all__ = ["Slip", "explain", "also", "number", "vector", "dynamics_truth", "STATES", "NONE_ALONE"]

# Said when the slips were tried and none explains the error alone.
NONE_ALONE = ("no single slip explains it alone (a joint's sign, ref or axis, a body's pos or quat, half a turn "
              "included, were each tried): several differ, or a term is missing")

# States a slip is fitted on: each gives 3 to nv^2 equations against at most 3 unknowns.
STATES = 16
# Gauss-Newton steps per fit: a length or an angle off by a few percent converges in two or three.
_STEPS = 8
# Finite-difference step of the fit, m or rad: the quantities are smooth, and the final
# comparison is on MuJoCo's own values, so the step only sets how fast the fit converges.
_H = 1e-7
# A fit direction the states cannot see: its column of the fit's Jacobian is below this
# fraction of the largest (round-off of the finite difference).
_BLIND = 1e-6
# A fitted number within this fraction of its element's size of a round value (the model's, or zero) is that
# value: Gauss-Newton stops once within the check's tolerance, which leaves such a remainder (1e-10 of a
# 0.2 m link length measured), never a figure to print.
_FIT_FLOOR = 1e-7

_HINGE_SLIDE = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))


@dataclass(frozen=True)
class Slip:
    """One geometric slip that explains the error: its sentence and its size (how many numbers it changes)."""

    sentence: str
    size: int


# truth(model, q, dof_sign) -> the quantity at each state, (n, ...): dof_sign (nv,) of +-1 negates
# the columns (and rows) of a Jacobian or a mass matrix per dof; a position ignores it.
Truth = Callable[[mujoco.MjModel, np.ndarray, np.ndarray], np.ndarray]


def number(x: float, scale: float = 1.0) -> str:
    """A number to 4 significant digits; round-off (below 1e-9 of ``scale``) printed as 0."""
    x = float(x)
    return "0" if abs(x) <= 1e-9 * max(abs(scale), 1e-300) else f"{x:.4g}"


def vector(v, sep: str = " ", scale: float | None = None) -> str:
    """A vector's entries as :func:`number` prints them, round-off against ``scale`` (default its largest
    entry) as 0."""
    v = np.asarray(v, dtype=float)
    if scale is None:
        scale = float(np.abs(v).max()) if v.size else 1.0
    return sep.join(number(x, scale) for x in v)


def explain(model: mujoco.MjModel, truth: Truth, q: np.ndarray, user: np.ndarray, atol: float, rtol: float,
            sign: bool = True) -> list[str]:
    """Sentences naming the one geometric slip that explains ``user (n, ...)`` at the states ``q (n, nq)``, or [].

    ``truth`` computes MuJoCo's quantity on a (changed) copy of ``model`` (:data:`Truth`);
    ``sign``: try joints measured the other way (a quantity that has dof columns or none).
    """
    work = copy.copy(model)
    nv = model.nv
    ones = np.ones(nv)
    reference = truth(model, q, ones)
    tol = atol + rtol * np.abs(reference)
    if np.all(np.abs(user - reference) <= tol):
        return []
    found: list[Slip] = []
    for candidate in _discrete(model, sign):
        slip = candidate(work, truth, q, user, tol)
        if slip is not None:
            found.append(slip)
    if not found:
        for fit in _continuous(model):
            slip = fit(work, truth, q, user, tol)
            if slip is not None:
                found.append(slip)
    if not found:
        return []
    found.sort(key=lambda s: s.size)
    best = [s for s in found if s.size == found[0].size]
    out = [best[0].sentence + "; everything else agrees"]
    for other in best[1:3]:
        out.append(f"(the same error is also {other.sentence}: the states checked cannot tell these apart)")
    return out


def also(sentences: list[str]) -> list[str]:
    """Another explanation of the same error (an inertial one's sentences) as one line after a slip's."""
    said = "; ".join(line.removesuffix("; everything else agrees") for line in sentences if not line.startswith("("))
    return [f"(the same error is also {said}: the states checked cannot tell these apart)"] if said else []


def _matches(value: np.ndarray, user: np.ndarray, tol: np.ndarray) -> bool:
    return bool(value.shape == user.shape and np.all(np.abs(user - value) <= tol))


def _restore(work: mujoco.MjModel, model: mujoco.MjModel) -> None:
    work.qpos0[:] = model.qpos0
    work.body_pos[:] = model.body_pos
    work.body_quat[:] = model.body_quat
    work.jnt_axis[:] = model.jnt_axis


def _moving_joints(model: mujoco.MjModel) -> list[int]:
    return [j for j in range(model.njnt) if int(model.jnt_type[j]) in _HINGE_SLIDE]


def _moving_bodies(model: mujoco.MjModel) -> list[int]:
    """Bodies that move with some joint, or whose children do: a body welded to the world changes nothing
    a joint-space quantity sees unless something below it moves."""
    moves = np.zeros(model.nbody, dtype=bool)
    for b in range(1, model.nbody):
        moves[b] = model.body_dofnum[b] > 0 or moves[int(model.body_parentid[b])]
    below = moves.copy()
    for b in range(model.nbody - 1, 0, -1):
        if below[b]:
            below[int(model.body_parentid[b])] = True
    return [b for b in range(1, model.nbody) if below[b]]


def _discrete(model: mujoco.MjModel, sign: bool) -> list[Callable]:
    out: list[Callable] = []
    for j in _moving_joints(model):
        if sign:
            out.append(lambda work, truth, q, user, tol, j=j: _other_way(model, work, truth, q, user, tol, [j]))
        if model.qpos0[int(model.jnt_qposadr[j])] != 0:
            out.append(lambda work, truth, q, user, tol, j=j: _ref_left_out(model, work, truth, q, user, tol, j))
    if sign:
        for group in _parallel_hinges(model):
            out.append(lambda work, truth, q, user, tol, g=group: _other_way(model, work, truth, q, user, tol, g))
    for b in _moving_bodies(model):
        if not np.allclose(model.body_quat[b], [1, 0, 0, 0], atol=1e-12):
            out.append(lambda work, truth, q, user, tol, b=b: _quat_left_out(model, work, truth, q, user, tol, b))
        for axis in _half_turn_axes(model, b):
            out.append(lambda work, truth, q, user, tol, b=b, a=axis: _half_turn(model, work, truth, q, user, tol, b,
                                                                                 a))
    return out


def _parallel_hinges(model: mujoco.MjModel) -> list[list[int]]:
    """The hinges that turn about one line's direction in the world at the reference pose, two or more: a
    planar model's (its angles all measured the other way when its axis is drawn reversed)."""
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    hinges = [j for j in _moving_joints(model) if int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_HINGE)]
    groups: list[list[int]] = []
    for j in hinges:
        axis = np.asarray(data.xaxis[j])
        for group in groups:
            if abs(abs(float(np.dot(axis, data.xaxis[group[0]]))) - 1.0) < 1e-9:  # parallel, to round-off
                group.append(j)
                break
        else:
            groups.append([j])
    return [group for group in groups if len(group) > 1]


def _half_turn_axes(model: mujoco.MjModel, b: int) -> list[np.ndarray]:
    """The axes of a body's frame (and its hinges' axes) a half turn about which is tried: a fit of its
    orientation, starting from the model's, never reaches a turn that large."""
    axes = [np.eye(3)[k] for k in range(3)]
    for j in range(model.njnt):
        if int(model.jnt_bodyid[j]) == b and int(model.jnt_type[j]) in _HINGE_SLIDE:
            a = np.asarray(model.jnt_axis[j], dtype=float)
            if all(abs(abs(float(np.dot(a, e))) - 1.0) > 1e-9 for e in axes):
                axes.append(a / np.linalg.norm(a))
    return axes


def _explained(model, work, truth, q, user, tol, field: str, index: int, value) -> bool:
    """Whether the model with ``field[index]`` written ``value`` (on the working copy, restored after) gives
    the user's values."""
    getattr(work, field)[index] = value
    try:
        return _matches(truth(work, q, np.ones(model.nv)), user, tol)
    finally:
        _restore(work, model)


def _half_turn(model, work, truth, q, user, tol, b: int, axis: np.ndarray) -> Slip | None:
    R0 = quat_to_matrix(np.asarray(model.body_quat[b], dtype=float))
    quat = matrix_to_quat(R0 @ _rotvec(np.pi * axis))
    if not _explained(model, work, truth, q, user, tol, "body_quat", b, quat):
        return None
    return Slip(f"body {body_name(model, b)!r}: quat {vector(quat)} where the model has {vector(model.body_quat[b])} "
                f"(turned by a further 180 deg about [{vector(axis)}] in its own frame)", 0)


def _other_way(model, work, truth, q, user, tol, joints: list[int]) -> Slip | None:
    flipped = np.array(q, dtype=float)
    signs = np.ones(model.nv)
    for j in joints:
        adr, dof = int(model.jnt_qposadr[j]), int(model.jnt_dofadr[j])
        flipped[:, adr] = 2 * model.qpos0[adr] - flipped[:, adr]
        signs[dof] = -1.0
    if not _matches(truth(work, flipped, signs), user, tol):
        return None
    axis = vector(model.jnt_axis[joints[0]])
    if len(joints) > 1:
        names = ", ".join(repr(joint_name(model, j)) for j in joints)
        return Slip(f"joints {names} all turn the other way: your angles are minus MuJoCo's (they turn about one "
                    f"direction, [{axis}] in body {body_name(model, int(model.jnt_bodyid[joints[0]]))!r}: a planar "
                    "model drawn with its axis reversed)", 0)
    j = joints[0]
    return Slip(f"joint {joint_name(model, j)!r} turns the other way: your angle is minus MuJoCo's (it turns "
                f"about [{axis}] in body {body_name(model, int(model.jnt_bodyid[j]))!r})", 0)


def _ref_left_out(model, work, truth, q, user, tol, j: int) -> Slip | None:
    adr = int(model.jnt_qposadr[j])
    if not _explained(model, work, truth, q, user, tol, "qpos0", adr, 0.0):
        return None
    ref = float(model.qpos0[adr])
    unit = f" ({np.degrees(ref):.4g} deg)" if int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_HINGE) else " m"
    return Slip(f"joint {joint_name(model, j)!r}: ref {ref:.6g}{unit} left out (MuJoCo measures the joint's "
                "position from its ref: at qpos = ref the body sits as the model places it)", 0)


def _quat_left_out(model, work, truth, q, user, tol, b: int) -> Slip | None:
    if not _explained(model, work, truth, q, user, tol, "body_quat", b, [1.0, 0.0, 0.0, 0.0]):
        return None
    return Slip(f"body {body_name(model, b)!r}: its quat left out (the model turns it by "
                f"{_angle_axis(model.body_quat[b])} against its parent, quat {vector(model.body_quat[b])})", 0)


def _angle_axis(quat) -> str:
    quat = np.asarray(quat, dtype=float) / np.linalg.norm(quat)
    if quat[0] < 0:
        quat = -quat
    angle = 2 * np.degrees(np.arctan2(np.linalg.norm(quat[1:]), quat[0]))
    axis = quat[1:] / max(np.linalg.norm(quat[1:]), 1e-300)
    return f"{angle:.4g} deg about [{vector(axis)}]"


def _continuous(model: mujoco.MjModel) -> list[Callable]:
    out: list[Callable] = []
    bodies = _moving_bodies(model)
    for b in bodies:  # a link length first: the commonest slip of the same size as a ref
        out.append(lambda work, truth, q, user, tol, b=b: _fit_pos(model, work, truth, q, user, tol, b))
    for j in _moving_joints(model):
        out.append(lambda work, truth, q, user, tol, j=j: _fit_ref(model, work, truth, q, user, tol, j))
    for b in bodies:
        out.append(lambda work, truth, q, user, tol, b=b: _fit_quat(model, work, truth, q, user, tol, b))
    for j in _moving_joints(model):
        out.append(lambda work, truth, q, user, tol, j=j: _fit_axis(model, work, truth, q, user, tol, j))
    return out


def _gauss_newton(evaluate: Callable[[np.ndarray], np.ndarray], k: int, user: np.ndarray,
                  tol: np.ndarray) -> tuple[np.ndarray, int] | None:
    """Fit ``k`` numbers ``x`` (from 0) with ``evaluate(x) ~ user``: ``(x, seen directions)`` or None."""
    x = np.zeros(k)
    target = user.ravel()
    seen = k
    for _ in range(_STEPS):
        f = evaluate(x).ravel()
        r = target - f
        if np.all(np.abs(r) <= tol.ravel()):
            return x, seen
        J = np.stack([(evaluate(x + _H * e).ravel() - f) / _H for e in np.eye(k)], axis=1)
        norms = np.linalg.norm(J, axis=0)
        visible = norms > _BLIND * max(float(norms.max()), 1e-300)
        seen = int(visible.sum())
        if not visible.any():
            return None
        step = np.zeros(k)
        step[visible] = np.linalg.lstsq(J[:, visible] / norms[visible], r, rcond=None)[0] / norms[visible]
        if not np.all(np.isfinite(step)):
            return None
        x = x + step
    f = evaluate(x).ravel()
    return (x, seen) if np.all(np.abs(target - f) <= tol.ravel()) else None


def _fit_on(work: mujoco.MjModel, model: mujoco.MjModel, evaluate: Callable[[np.ndarray], np.ndarray], k: int,
            user: np.ndarray, tol: np.ndarray) -> np.ndarray | None:
    """:func:`_gauss_newton` on the working copy, which is restored after: the fitted ``x``, or None when no
    fit explains the user's values or the fitted numbers never reached them (nothing seen)."""
    try:
        fit = _gauss_newton(evaluate, k, user, tol)
    finally:
        _restore(work, model)
    return None if fit is None or fit[1] == 0 else fit[0]


def _fit_ref(model, work, truth, q, user, tol, j: int) -> Slip | None:
    adr = int(model.jnt_qposadr[j])
    ones = np.ones(model.nv)

    def evaluate(x):
        work.qpos0[adr] = model.qpos0[adr] + x[0]
        return truth(work, q, ones)

    x = _fit_on(work, model, evaluate, 1, user, tol)
    if x is None:
        return None
    ref0, ref1 = float(model.qpos0[adr]), float(model.qpos0[adr] + x[0])
    hinge = int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_HINGE)
    unit = " rad" if hinge else " m"
    offset = f" ({np.degrees(ref1 - ref0):+.4g} deg)" if hinge else f" ({ref1 - ref0:+.4g} m)"
    zero = "angle" if hinge else "position"
    return Slip(f"joint {joint_name(model, j)!r}: ref {number(ref1)}{unit} where the model has {number(ref0)}"
                f"{unit}{offset}: your zero {zero} is elsewhere", 1)


def _fit_pos(model, work, truth, q, user, tol, b: int) -> Slip | None:
    ones = np.ones(model.nv)

    def evaluate(x):
        work.body_pos[b] = model.body_pos[b] + x
        return truth(work, q, ones)

    x = _fit_on(work, model, evaluate, 3, user, tol)
    if x is None:
        return None
    p0 = np.asarray(model.body_pos[b], dtype=float)
    p1 = p0 + x
    scale = max(float(np.abs(p0).max()), float(np.abs(p1).max()))
    p1 = np.where(np.abs(p1 - p0) <= _FIT_FLOOR * scale, p0, p1)  # the fit's round-off keeps the model's value
    p1 = np.where(np.abs(p1) <= _FIT_FLOOR * scale, 0.0, p1)  # ... and a zero its zero
    parent = body_name(model, int(model.body_parentid[b]))
    length0, length1 = float(np.linalg.norm(p0)), float(np.linalg.norm(p1))
    return Slip(f"body {body_name(model, b)!r}: pos {vector(p1, scale=scale)} where the model has {vector(p0)} (its "
                f"origin {number(length1)} m from the origin of body {parent!r}, not {number(length0)} m: a link "
                "length)", int(np.count_nonzero(p1 != p0)))


def _fit_quat(model, work, truth, q, user, tol, b: int) -> Slip | None:
    ones = np.ones(model.nv)
    R0 = quat_to_matrix(np.asarray(model.body_quat[b], dtype=float))

    def evaluate(x):
        work.body_quat[b] = matrix_to_quat(R0 @ _rotvec(x))
        return truth(work, q, ones)

    x = _fit_on(work, model, evaluate, 3, user, tol)
    if x is None:
        return None
    quat = matrix_to_quat(R0 @ _rotvec(x))
    turn = np.asarray(matrix_to_quat(_rotvec(x)))
    return Slip(f"body {body_name(model, b)!r}: quat {vector(quat)} where the model has "
                f"{vector(model.body_quat[b])} (turned by a further {_angle_axis(turn)} in its own frame)", 3)


def _fit_axis(model, work, truth, q, user, tol, j: int) -> Slip | None:
    ones = np.ones(model.nv)
    a0 = np.asarray(model.jnt_axis[j], dtype=float)
    # Two directions normal to the axis: tilting it (its length stays 1).
    u = np.cross(a0, [1.0, 0.0, 0.0] if abs(a0[0]) < 0.9 else [0.0, 1.0, 0.0])
    u /= np.linalg.norm(u)
    v = np.cross(a0, u)

    def axis(x):
        a = a0 + x[0] * u + x[1] * v
        return a / np.linalg.norm(a)

    def evaluate(x):
        work.jnt_axis[j] = axis(x)
        return truth(work, q, ones)

    x = _fit_on(work, model, evaluate, 2, user, tol)
    if x is None:
        return None
    return Slip(f"joint {joint_name(model, j)!r}: axis [{vector(axis(x))}] where the model has [{vector(a0)}]",
                2)


def _rotvec(x: np.ndarray) -> np.ndarray:
    """The rotation matrix of a rotation vector ``x`` (rad)."""
    angle = float(np.linalg.norm(x))
    if angle < 1e-300:
        return np.eye(3)
    k = np.asarray(x, dtype=float) / angle
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def kinematics_truth(tgt, rotation: bool) -> Truth:
    """MuJoCo's position of ``tgt`` (and its rotation, flattened after it): ``(n, 3)`` or ``(n, 12)``."""
    def truth(model: mujoco.MjModel, q: np.ndarray, dof_sign: np.ndarray) -> np.ndarray:
        data = mujoco.MjData(model)
        out = np.empty((q.shape[0], 12 if rotation else 3))
        for k in range(q.shape[0]):
            data.qpos[:] = q[k]
            mujoco.mj_kinematics(model, data)
            out[k, :3] = tgt.position(data)
            if rotation:
                out[k, 3:] = tgt.rotation(data).ravel()
        return out

    return truth


def jacobian_truth(tgt, frame: str, rows: int) -> Truth:
    """MuJoCo's Jacobian of ``tgt`` in ``frame`` (``"world-aligned"`` or ``"local"``), its first ``rows`` rows,
    ``(n, rows, nv)``; ``dof_sign`` negates columns."""
    def truth(model: mujoco.MjModel, q: np.ndarray, dof_sign: np.ndarray) -> np.ndarray:
        data = mujoco.MjData(model)
        jacp, jacr = np.zeros((3, model.nv)), np.zeros((3, model.nv))
        jac = mujoco.mj_jacSite if tgt.kind == "site" else mujoco.mj_jacBody
        out = np.empty((q.shape[0], 6, model.nv))
        for k in range(q.shape[0]):
            data.qpos[:] = q[k]
            mujoco.mj_kinematics(model, data)
            mujoco.mj_comPos(model, data)
            jac(model, data, jacp, jacr, tgt.index)
            if frame == "local":
                Rt = tgt.rotation(data).T
                out[k, :3], out[k, 3:] = Rt @ jacp, Rt @ jacr
            else:
                out[k, :3], out[k, 3:] = jacp, jacr
        return out[:, :rows] * dof_sign

    return truth


def dynamics_truth(qd: np.ndarray, qdd: np.ndarray | None = None) -> Truth:
    """MuJoCo's inverse dynamics at the states with velocities ``qd (n, nv)`` and accelerations ``qdd``
    (None: zero, the bias forces; with ``qd`` zero too, gravity), ``(n, nv)``; ``dof_sign`` negates a
    dof's velocity, acceleration and force."""
    def truth(model: mujoco.MjModel, q: np.ndarray, dof_sign: np.ndarray) -> np.ndarray:
        accelerations = np.zeros_like(qd) if qdd is None else qdd
        return inverse_dynamics(model, q, qd * dof_sign, accelerations * dof_sign) * dof_sign

    return truth


def mass_matrix_truth(model: mujoco.MjModel, q: np.ndarray, dof_sign: np.ndarray) -> np.ndarray:
    """MuJoCo's ``M(q)``, ``(n, nv, nv)``; ``dof_sign`` negates a dof's row and column."""
    return mass_matrices(model, q) * dof_sign[:, None] * dof_sign[None, :]


def jacobian_layout(model: mujoco.MjModel, tgt, frame: str, q: np.ndarray, user: np.ndarray, atol: float,
                    rtol: float) -> list[str]:
    """A Jacobian whose rows are laid out wrong: transposed, or its angular rows in a body's frame (or the
    world's) while its linear rows agree.  ``user (n, rows, nv)``; [] when neither explains it."""
    rows = user.shape[1]
    J = jacobian_truth(tgt, "world-aligned", 6)(model, q, np.ones(model.nv))
    ref = J if frame == "world-aligned" else jacobian_truth(tgt, "local", 6)(model, q, np.ones(model.nv))
    ref = ref[:, :rows]
    tol = atol + rtol * np.abs(ref)
    if rows == model.nv and _matches(np.swapaxes(ref, 1, 2), user, np.swapaxes(tol, 1, 2)):
        return [f"your Jacobian is transposed: its row i is MuJoCo's column i ({rows} x {rows}: MuJoCo's rows are "
                f"the velocity components of {tgt.label}, its columns the dofs)"]
    if rows != 6 or not np.all(np.abs(user[:, :3] - ref[:, :3]) <= tol[:, :3]):
        return []
    data = mujoco.MjData(model)
    frames = np.empty((q.shape[0], model.nbody, 3, 3))
    for k in range(q.shape[0]):
        data.qpos[:] = q[k]
        mujoco.mj_kinematics(model, data)
        frames[k] = np.asarray(data.xmat).reshape(model.nbody, 3, 3)
    angular = J[:, 3:]
    order = [tgt.body] + [b for b in range(model.nbody) if b != tgt.body]
    for b in order:
        candidate = np.swapaxes(frames[:, b], 1, 2) @ angular
        if _matches(candidate, user[:, 3:], tol[:, 3:]):
            where = "the world's" if b == 0 else f"the frame of body {body_name(model, b)!r}"
            should = "the world's axes" if frame == "world-aligned" else f"{tgt.label}'s own axes"
            return [f"the angular rows are in {where} (the linear rows agree): MuJoCo's angular rows are in "
                    f"{should}, as its linear rows; rotate yours by that body's rotation R (w_world = R w_body)"]
    return []


# Passive effects a linearization's A carries, by the model's field: (words, field, per dof or per joint).
_EFFECTS = (("damping", "dof_damping", "dq/dqd block: d qdd / d qd = -M^-1 D"),
            ("stiffness", "jnt_stiffness", "dq/dq block: d qdd / d q = -M^-1 K"),
            ("armature", "dof_armature", "M = M_rigid + armature on the diagonal"))


def linearization_effects(model: mujoco.MjModel, lin, reduction, A_user: np.ndarray, B_user: np.ndarray,
                          atol: float, rtol: float) -> list[str]:
    """The joints whose damping, stiffness or armature the user's ``(A, B)`` leaves out, or [].

    Each hypothesis is MuJoCo's own linearization of a copy of the model without that
    effect: on one joint at a time, then on every joint carrying it.
    """
    for words, name, where in _EFFECTS:
        values = np.asarray(getattr(model, name))
        carriers = [int(i) for i in np.flatnonzero(values)]
        if not carriers:
            continue
        def explains(chosen: list[int], name=name) -> bool:
            work = copy.copy(model)
            getattr(work, name)[chosen] = 0.0
            other = linearize(work, qpos=lin.qpos, qvel=lin.qvel, ctrl=lin.ctrl)
            A, B = (other.A, other.B) if reduction is None else reduction.apply(other.A, other.B)
            return _matches(A, A_user, atol + rtol * np.abs(A)) and _matches(B, B_user, atol + rtol * np.abs(B))

        sets = [[i] for i in carriers] + ([carriers] if len(carriers) > 1 else [])
        for chosen in sets:
            if explains(chosen):
                for i in list(chosen):  # a joint the (reduced) linearization cannot see is not named
                    if len(chosen) > 1 and explains([k for k in chosen if k != i]):
                        chosen.remove(i)
                joints = [i if name.startswith("jnt_") else int(model.dof_jntid[i]) for i in chosen]
                who = ", ".join(f"joint {joint_name(model, j)!r}: {words} {number(values[i])}"
                                for j, i in zip(joints, chosen, strict=True))
                return [f"{who} left out of A ({where}); everything else agrees"]
    return []
