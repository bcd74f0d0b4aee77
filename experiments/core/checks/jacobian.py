"""``crossdyn check jacobian``: a hand-derived point Jacobian against ``mj_jacSite``/``mj_jacBody``.

The truth is world-aligned (Pinocchio's ``LOCAL_WORLD_ALIGNED``) or, with
``frame="local"``, in the point's own axes; for a closed loop, per unit velocity of
the independent ``coordinates``, the other dofs keeping the equality constraints.
On a mismatch the report names the columns and rows off and tests: a column off by
its sign, the other frame, another point of the body, Drake's ``[angular; linear]``
row order, or a free joint in another convention.
"""

from __future__ import annotations

import functools
import os

import mujoco
import numpy as np

from ....analytic.rotation import quat_to_matrix, skew
from .. import user_code
from ..errors import ModelError, ParameterError
from ..models import with_options
from . import slips
from .common import EntryStats, Hypotheses, UserFunction, model_warnings, progress
from .names import ROW_NAMES, body_name, dof_names, joint_label
from .options import SAMPLED, begin
from .report import CheckReport, Part
from .target import Target, point_of, target

__all__ = ["check_jacobian", "FRAMES", "loop_tangent"]

FRAMES = ("world-aligned", "local")
_FRAME_WORDS = {"world-aligned": "world-aligned (MuJoCo's; Pinocchio's LOCAL_WORLD_ALIGNED)",
                "local": "local frame of the point (Pinocchio's LOCAL)"}
# A loop is closed by the coordinates when J_c T = 0 to this fraction of |J_c|
# (least squares of exact constraint rows leaves round-off).
_CLOSURE_RTOL = 1e-9


def _rotate(J: np.ndarray, R: np.ndarray) -> np.ndarray:
    """``blockdiag(R^T, R^T) J`` row-block by row-block: world-aligned to local; ``(n, 6, c)``."""
    Rt = np.swapaxes(R, 1, 2)
    return np.concatenate([Rt @ J[:, :3], Rt @ J[:, 3:]], axis=1)


class _Truth:
    """MuJoCo's Jacobian of the target (and the frames and points the attribution needs) at a chunk of states."""

    def __init__(self, model: mujoco.MjModel, tgt: Target, coordinates: list[int] | None):
        self.tgt, self.coordinates = tgt, coordinates
        # A closed loop needs its equality rows: keep them, switch contacts and limits off.
        off = mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
        self.model = with_options(model, disableflags=int(model.opt.disableflags) | int(off)) if coordinates \
            else model
        self.data = mujoco.MjData(self.model)
        nv = model.nv
        self.jacp, self.jacr = np.zeros((3, nv)), np.zeros((3, nv))

    def __call__(self, q: np.ndarray, rotations: bool = False, alternatives: dict | None = None):
        """``J (n, 6, nv)``, ``T`` (loop tangents or None), and with ``rotations`` or ``alternatives``
        the target's rotation and position and the alternative points (else None)."""
        m, d, tgt = self.model, self.data, self.tgt
        n, nv = q.shape[0], m.nv
        J = np.empty((n, 6, nv))
        extra = rotations or alternatives is not None
        R, p = np.empty((n, 3, 3)), np.empty((n, 3))  # filled only when asked for
        alt = {name: np.empty((n, 3)) for name in alternatives or {}}
        coordinates = self.coordinates
        T = None if coordinates is None else np.empty((n, nv, len(coordinates)))
        jacp, jacr, index = self.jacp, self.jacr, tgt.index
        jac = mujoco.mj_jacSite if tgt.kind == "site" else mujoco.mj_jacBody
        for k in range(n):
            d.qpos[:] = q[k]
            if T is None or coordinates is None:
                mujoco.mj_kinematics(m, d)
                mujoco.mj_comPos(m, d)
            else:
                mujoco.mj_fwdPosition(m, d)
                T[k] = loop_tangent(m, d, coordinates)
            jac(m, d, jacp, jacr, index)
            J[k, :3], J[k, 3:] = jacp, jacr
            if extra:
                R[k], p[k] = tgt.rotation(d), tgt.position(d)
                for name, (kind, which) in (alternatives or {}).items():
                    alt[name][k] = point_of(d, kind, which)[0]
        return J, T, (R if extra else None), (p if extra else None), alt


def loop_tangent(model: mujoco.MjModel, data: mujoco.MjData, coordinates: list[int]) -> np.ndarray:
    """``T = dq/dq_c (nv, k)``: how every dof moves when the ``coordinates`` dofs do, with the equality
    constraints kept (``J_eq T = 0``; the others least-norm).  Needs ``mj_fwdPosition`` first.

    Raises:
      ModelError: the coordinates do not close the loop (a constraint row that
        no least-norm motion of the other dofs satisfies).
    """
    nv = model.nv
    rows = np.flatnonzero(np.asarray(data.efc_type[: data.nefc]) == int(mujoco.mjtConstraint.mjCNSTR_EQUALITY))
    T = np.zeros((nv, len(coordinates)))
    T[coordinates, np.arange(len(coordinates))] = 1.0
    if rows.size == 0:
        return T
    if mujoco.mj_isSparse(model):
        dense = np.zeros((data.nefc, nv))
        mujoco.mju_sparse2dense(dense, data.efc_J, data.efc_J_rownnz, data.efc_J_rowadr, data.efc_J_colind)
    else:
        dense = np.asarray(data.efc_J[: data.nefc * nv]).reshape(data.nefc, nv)
    Jc = dense[rows]
    rest = np.setdiff1d(np.arange(nv), coordinates)
    T[rest] = -np.linalg.lstsq(Jc[:, rest], Jc[:, coordinates], rcond=None)[0]
    residual = np.abs(Jc @ T).max()
    if residual > _CLOSURE_RTOL * max(np.abs(Jc).max(), 1.0):
        raise ModelError(f"the coordinates do not determine the closed loop: no motion of the other dofs keeps "
                         f"the equality constraints (residual {residual:.2e}); name independent joints")
    return T


def _coordinate_dofs(model: mujoco.MjModel, coordinates) -> tuple[list[int], list[str]]:
    names = dof_names(model)
    dofs = []
    for name in coordinates:
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if jid < 0:
            raise ParameterError(f"no joint {name!r} in the model (--coordinates takes joint names)")
        if int(model.jnt_type[jid]) not in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
            raise ParameterError(f"joint {name!r} is not a hinge or slide; coordinates are one-dof joints")
        dofs.append(int(model.jnt_dofadr[jid]))
    if len(set(dofs)) != len(dofs):
        raise ParameterError("--coordinates names a joint twice")
    return dofs, [names[d] for d in dofs]


def _free_conventions(model: mujoco.MjModel, coordinates) -> list[tuple[str, int, int]]:
    """``(joint name, first dof, body)`` of each free joint (none when checking loop coordinates)."""
    if coordinates is not None:
        return []
    return [(model.joint(j).name or body_name(model, int(model.jnt_bodyid[j])), int(model.jnt_dofadr[j]),
             int(model.jnt_bodyid[j]))
            for j in range(model.njnt) if int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_FREE)]


@user_code.quiet_arithmetic
def check_jacobian(fn, model: mujoco.MjModel | str | os.PathLike, *, site: str | None = None, body: str | None = None,
                   frame: str = "world-aligned", coordinates: list[str] | tuple[str, ...] | None = None,
                   **options) -> CheckReport:
    """Check ``fn(q) -> J`` against MuJoCo's Jacobian of a site or a body's frame origin.

    ``fn``, ``model``, the sampling ``options`` (a closed loop's ``states`` closed poses) and the
    errors are every check's (:class:`~crossdyn.experiments.core.checks.options.CheckOptions`).

    Args:
      fn: returns ``(6, nv)`` (linear rows, then angular) or ``(3, nv)`` (linear only), per unit ``qvel``.
      site, body: the point (exactly one).
      frame: ``"world-aligned"`` (MuJoCo's) or ``"local"`` (the point's own axes).
      coordinates: a closed loop's independent joints; ``J`` is then ``(6, k)`` or ``(3, k)``, per unit
        velocity of those.

    Returns:
      The :class:`~crossdyn.experiments.core.checks.report.CheckReport`, part ``jacobian``.
    """
    check = begin("check_jacobian", fn, model, options, SAMPLED)
    model, label, atol, rtol = check.model, check.label, check.options.atol, check.options.rtol
    if frame not in FRAMES:
        raise ParameterError(f"unknown frame {frame!r}; choose from {', '.join(FRAMES)}")
    tgt = target(model, site, body)
    dofs, columns = (None, dof_names(model)) if coordinates is None else _coordinate_dofs(model, coordinates)
    ncol = len(columns)
    source = check.source(("q",))
    user = UserFunction(check.fn, label, [((6, ncol),), ((3, ncol),)],
                        f"a Jacobian of {ncol} columns, linear rows then angular")
    truth = _Truth(model, tgt, dofs)
    frees = _free_conventions(model, coordinates)
    other = "local" if frame == "world-aligned" else "world-aligned"
    stats = None
    with model_warnings() as warned:
        for (q,) in progress(source.chunks(), source.total, f"checking {label}"):
            (J_user,) = user(q)
            rows = J_user.shape[1]
            J, T, R, _, _ = truth(q, rotations=frame == "local")
            ref = J if frame == "world-aligned" else _rotate(J, R)
            ref = (ref if T is None else ref @ T)[:, :rows]
            if stats is None:
                stats = EntryStats((rows, ncol))
            stats.add(J_user - ref, ref, atol, rtol)
        part = Part.from_stats("jacobian", "J", (ROW_NAMES[:rows], columns), stats)
        hyp = Hypotheses()
        if not part.passed:  # second pass: what the error is
            alternatives = tgt.alternatives(model)
            for (q,) in progress(source.chunks(), source.total, f"explaining {label}"):
                (J_user,) = user(q)
                J, T, R, p, alt = truth(q, alternatives=alternatives)
                frames = {"world-aligned": J, "local": _rotate(J, R)}
                project = functools.partial(_project, T=T)
                ref = project(frames[frame])[:, :rows]
                _test(hyp, J_user, ref, rows, frames, other, p, alt, R, project, frees, model, q, atol, rtol)
    slip = None
    if not part.passed and dofs is None:
        slip = functools.partial(_slips, model, tgt, frame, rows, source, user, atol, rtol)
    attribution = [] if part.passed else _attribute(model, tgt, part, hyp, frame, other, rows, columns, dofs,
                                                    frees, slip)
    where = f"site {tgt.name!r}: mj_jacSite" if tgt.kind == "site" else f"the origin of body {tgt.name!r}: mj_jacBody"
    truth_text = f"{where}, {_FRAME_WORDS[frame]}"
    if dofs is not None:
        truth_text += f", per unit velocity of {', '.join(columns)} with the model's equality constraints held"
    return check.report(
        "jacobian", {"jacobian": part}, truth_text, attribution, source=source, user=user, warned=warned,
        **({} if dofs is None else {"conventions": []}),
        extra={"target": {"kind": tgt.kind, "name": tgt.name}, "frame": frame, "rows": rows, "columns": columns})


def _project(A: np.ndarray, T: np.ndarray | None) -> np.ndarray:
    """``A T``: a Jacobian per unit velocity of the loop's coordinates (``A`` itself for an open tree)."""
    return A if T is None else A @ T


def _test(hyp, J_user, ref, rows, frames, other, p, alt, R, project, frees, model, q, atol, rtol):
    """Fold one chunk into every hypothesis about what a wrong Jacobian is."""
    hyp.test("sign", J_user, -ref, atol, rtol, axis=(0, 1))  # per column
    hyp.test("frame", J_user, project(frames[other])[:, :rows], atol, rtol, axis=None)
    if rows == 6:
        swapped = np.concatenate([ref[:, 3:], ref[:, :3]], axis=1)
        hyp.test("angular first", J_user, swapped, atol, rtol, axis=None)
    for name, x in alt.items():
        # v_x = v_p + w x (x - p): the linear rows at another point of the same body.
        world = frames["world-aligned"]
        lin = world[:, :3] - skew(x - p) @ world[:, 3:]
        for which in FRAMES:
            shifted = np.concatenate([lin, world[:, 3:]], axis=1)
            if which == "local":
                shifted = _rotate(shifted, R)
            hyp.test(f"point|{name}|{which}", J_user[:, :3], project(shifted)[:, :3], atol, rtol, axis=None)
    for name, da, b in frees:
        # Another free-joint convention: angular velocity in world axes (the columns times R^T), or
        # linear velocity in the body frame (Pinocchio's free flyer: the columns times R).
        Rb = _body_rotation(model, b, q)
        for what, cols, M in (("world angular", slice(da + 3, da + 6), np.swapaxes(Rb, 1, 2)),
                              ("body linear", slice(da, da + 3), Rb)):
            changed = ref.copy()
            changed[:, :, cols] = ref[:, :, cols] @ M
            hyp.test(f"free|{name}|{what}", J_user, changed, atol, rtol, axis=None)


def _body_rotation(model: mujoco.MjModel, body: int, q: np.ndarray) -> np.ndarray:
    """The orientation of a free body (its quaternion in qpos), ``(n, 3, 3)``."""
    j = int(np.flatnonzero(np.asarray(model.jnt_bodyid) == body)[0])
    adr = int(model.jnt_qposadr[j])
    return quat_to_matrix(q[:, adr + 3 : adr + 7])


def _slips(model, tgt, frame: str, rows: int, source, user, atol: float, rtol: float) -> list[str]:
    """Rows laid out wrong (transposed, angular rows in a body's frame), or one geometric slip (:mod:`.slips`)."""
    (q,) = next(iter(source.chunks()))
    q = q[: slips.STATES]
    (J_user,) = user(q)
    return (slips.jacobian_layout(model, tgt, frame, q, J_user, atol, rtol)
            or slips.explain(model, slips.jacobian_truth(tgt, frame, rows), q, J_user, atol, rtol))


def _attribute(model, tgt, part, hyp, frame, other, rows, columns, dofs, frees, slip=None) -> list[str]:
    out = []
    if hyp.all("frame"):
        out.append(f"the whole Jacobian is in the {_FRAME_WORDS[other]}, not {_FRAME_WORDS[frame]}: rotate "
                   f"both row blocks by the frame's rotation, or check with --frame {other}")
        return out
    if rows == 6 and hyp.all("angular first"):
        out.append("the rows are [angular; linear] (Drake's spatial-velocity order); MuJoCo's and Pinocchio's "
                   "are [linear; angular]")
        return out
    for name, _, _ in frees:
        for what in ("world angular", "body linear"):
            if hyp.all(f"free|{name}|{what}"):
                cols = f"{name}.rx..{name}.rz" if what == "world angular" else f"{name}.x..{name}.z"
                wrong = ("the angular velocity in world axes" if what == "world angular"
                         else "the linear velocity in the body frame (Pinocchio's free flyer)")
                out.append(f"free joint {name!r}: your columns {cols} take {wrong}; MuJoCo's qvel[0:3] is the "
                           "world-frame linear velocity and qvel[3:6] the body-frame angular velocity")
                return out
    off_columns = [c for c in range(len(columns)) if not np.all(part.entry_passed[:, c])]
    linear_only = not np.any(~part.entry_passed[3:]) if rows == 6 else True
    if linear_only:
        for key in [k for k in hyp.holds if k.startswith("point|")]:
            if hyp.all(key):
                _, name, which = key.split("|")
                in_frame = "" if which == frame else f", in the {_FRAME_WORDS[which]}"
                out.append(f"the linear rows are the Jacobian of {name}{in_frame}, not of {tgt.label}: the point "
                           "is wrong (the angular rows agree)")
                return out
    signs = hyp["sign"]
    flipped = [c for c in off_columns if signs.size and signs[c]]
    tried = slip is not None and len(flipped) < len(off_columns)
    if tried:
        found = slip()
        if found:
            return found
    for c in flipped:
        if dofs is None:
            j = int(model.dof_jntid[c])
            axis = np.asarray(model.jnt_axis[j])
            out.append(f"column {columns[c]!r} has the opposite sign: {joint_label(model, j)} turns about "
                       f"[{', '.join(f'{a:g}' for a in axis)}] in body {body_name(model, int(model.jnt_bodyid[j]))!r}"
                       "; yours about the reverse axis")
        else:
            out.append(f"column {columns[c]!r} has the opposite sign")
    rest = [columns[c] for c in off_columns if c not in flipped]
    if rest:
        bad = {ROW_NAMES[r] for c in off_columns if c not in flipped for r in np.flatnonzero(~part.entry_passed[:, c])}
        bad_rows = sorted(bad, key=ROW_NAMES.index)
        out.append(f"column{'s' if len(rest) > 1 else ''} {', '.join(repr(c) for c in rest[:8])}"
                   f"{f' and {len(rest) - 8} more' if len(rest) > 8 else ''} off in rows {', '.join(bad_rows)}, "
                   "not by a sign, a frame or a point: a joint axis, an anchor or a link length differs")
        if tried:
            out.append(slips.NONE_ALONE)
    return out
