"""``crossdyn check kinematics``: a hand-derived forward kinematics against ``mj_kinematics``.

On a mismatch each hypothesis is tested on every state: another point of the same body,
a position off by a constant vector in the body's frame or the world, the transposed
rotation, the body's frame instead of the site's, or one constant rotation.
"""

from __future__ import annotations

import os

import mujoco
import numpy as np

from ....analytic.rotation import matrix_to_quat, quat_to_matrix
from .. import user_code
from . import slips
from .common import EntryStats, Hypotheses, UserFunction, model_warnings, progress
from .names import body_name
from .options import SAMPLED, begin
from .report import CheckReport, Part
from .target import point_of, target

__all__ = ["check_kinematics"]

_XYZ = ("x", "y", "z")


class _Range:
    """Running min and max of an array over the states (is it one constant?)."""

    def __init__(self, shape):
        self.lo, self.hi = np.full(shape, np.inf), np.full(shape, -np.inf)

    def add(self, values: np.ndarray) -> None:
        self.lo, self.hi = np.minimum(self.lo, values.min(axis=0)), np.maximum(self.hi, values.max(axis=0))

    def constant(self, tol: float) -> bool:
        return bool(np.all((self.hi - self.lo) / 2 <= tol))

    @property
    def middle(self) -> np.ndarray:
        return (self.hi + self.lo) / 2


def _truth(model, data, tgt, alternatives, q):
    """Target pose, body pose and the alternative points' positions at every state of a chunk."""
    n = q.shape[0]
    p, R = np.empty((n, 3)), np.empty((n, 3, 3))
    p_body, R_body = np.empty((n, 3)), np.empty((n, 3, 3))
    alt = {name: np.empty((n, 3)) for name in alternatives}
    for k in range(n):
        data.qpos[:] = q[k]
        mujoco.mj_kinematics(model, data)
        p[k], R[k] = tgt.position(data), tgt.rotation(data)
        p_body[k], R_body[k] = data.xpos[tgt.body], data.xmat[tgt.body].reshape(3, 3)
        for name, (kind, index) in alternatives.items():
            alt[name][k] = point_of(data, kind, index)[0]
    return p, R, p_body, R_body, alt


def _angle_axis(R: np.ndarray) -> str:
    quat = matrix_to_quat(R)
    angle = 2 * np.degrees(np.arctan2(np.linalg.norm(quat[1:]), quat[0]))
    axis = quat[1:] / max(np.linalg.norm(quat[1:]), 1e-300)
    return f"{angle:.3g} deg about [{', '.join(f'{a:.3g}' for a in axis)}]"


@user_code.quiet_arithmetic
def check_kinematics(fn, model: mujoco.MjModel | str | os.PathLike, *, site: str | None = None,
                     body: str | None = None, **options) -> CheckReport:
    """Check ``fn(q) -> position`` or ``(position, rotation)`` against MuJoCo's kinematics.

    ``fn``, ``model``, the sampling ``options`` and the errors are every check's
    (:class:`~crossdyn.experiments.core.checks.options.CheckOptions`).  ``fn`` returns the world
    position ``(3,)`` m, or with it the rotation ``(3, 3)`` whose columns are the frame's axes in
    the world (MuJoCo's ``site_xmat``), of a ``site`` or a ``body``'s frame origin (exactly one).

    Returns:
      The :class:`~crossdyn.experiments.core.checks.report.CheckReport`, parts ``position`` (and ``rotation``).
    """
    check = begin("check_kinematics", fn, model, options, SAMPLED)
    model, label, atol, rtol = check.model, check.label, check.options.atol, check.options.rtol
    tgt = target(model, site, body)
    source = check.source(("q",))
    user = UserFunction(check.fn, label, [((3,),), ((3,), (3, 3))],
                        "a position (3,), or (position (3,), rotation (3, 3))")
    data = mujoco.MjData(model)
    alternatives = tgt.alternatives(model)
    stats_p, stats_R = EntryStats((3,)), EntryStats((3, 3))
    hyp = Hypotheses()
    in_body, in_world = _Range((3,)), _Range((3,))
    right, left = _Range((3, 3)), _Range((3, 3))
    with model_warnings() as warned:
        for (q,) in progress(source.chunks(), source.total, f"checking {label}"):
            outs = user(q)
            p, R, p_body, R_body, alt = _truth(model, data, tgt, alternatives, q)
            stats_p.add(outs[0] - p, p, atol, rtol)
            for name, value in alt.items():
                hyp.test(name, outs[0], value, atol, rtol, axis=None)
            in_body.add(np.einsum("nji,nj->ni", R_body, outs[0] - p))
            in_world.add(outs[0] - p)
            if len(outs) == 2:
                R_user = outs[1]
                stats_R.add(R_user - R, R, atol, rtol)
                hyp.test("transpose", R_user, np.swapaxes(R, 1, 2), atol, rtol, axis=None)
                hyp.test("body frame", R_user, R_body, atol, rtol, axis=None)
                right.add(np.einsum("nji,njk->nik", R, R_user))
                left.add(np.einsum("nij,nkj->nik", R_user, R))

    parts = {"position": Part.from_stats("position", "p", (_XYZ,), stats_p)}
    if user.form == 1:
        parts["rotation"] = Part.from_stats("rotation", "R", (("0", "1", "2"), ("0", "1", "2")), stats_R)
    passed = all(p.passed for p in parts.values())
    attribution = [] if passed else _attribute(model, tgt, parts, hyp, alternatives, in_body, in_world, right, left,
                                               atol, rtol)
    if not passed and not _exact_point(parts, hyp, alternatives, in_body, atol, rtol):
        # One geometric slip (a joint's sign or ref, a body's pos or quat) that explains position and rotation
        # together is the one cause, in place of a sentence per part.
        q_kept, kept = _kept(source, user)
        found = slips.explain(model, slips.kinematics_truth(tgt, user.form == 1), q_kept, kept, atol, rtol)
        scale = atol + rtol * max(parts["position"].scale, 1.0)
        generic = not parts["position"].passed and not in_world.constant(scale)
        attribution = found or (attribution + [slips.NONE_ALONE] if generic else attribution)
    truth = "mj_kinematics: " + (f"site_xpos and site_xmat of {tgt.label}" if tgt.kind == "site"
                                 else f"xpos and xmat of {tgt.label} (its frame's origin)")
    return check.report("kinematics", parts, truth, attribution, source=source, user=user, warned=warned,
                        extra={"target": {"kind": tgt.kind, "name": tgt.name, "body": body_name(model, tgt.body)}})


def _exact_point(parts, hyp, alternatives, in_body, atol, rtol) -> bool:
    """The position is another point of the body, or off by a constant in its frame (said as such)."""
    if parts["position"].passed:
        return False
    scale = atol + rtol * max(parts["position"].scale, 1.0)
    return any(hyp.all(name) for name in alternatives) or in_body.constant(scale)


def _kept(source, user) -> tuple[np.ndarray, np.ndarray]:
    """The first :data:`~.slips.STATES` states and the user's values there, flattened as the slips' truth is."""
    (q,) = next(iter(source.chunks()))
    q = q[: slips.STATES]
    outs = user(q)
    flat = outs[0] if len(outs) == 1 else np.concatenate([outs[0], outs[1].reshape(q.shape[0], 9)], axis=1)
    return q, flat


def _attribute(model, tgt, parts, hyp, alternatives, in_body, in_world, right, left, atol, rtol) -> list[str]:
    out = []
    body = body_name(model, tgt.body)
    if not parts["position"].passed:
        scale = atol + rtol * max(parts["position"].scale, 1.0)
        points = [name for name in alternatives if hyp.all(name)]
        if points:
            out.append(f"the position is {points[0]}, not {tgt.label}")
        elif in_body.constant(scale):
            d = in_body.middle
            out.append(f"the position is off by a constant [{', '.join(f'{v:.4g}' for v in d)}] m in body "
                       f"{body!r}'s frame: your point is elsewhere on the body (a site or link offset typed wrong)")
        elif in_world.constant(scale):
            d = in_world.middle
            out.append(f"the position is off by a constant [{', '.join(f'{v:.4g}' for v in d)}] m in the world: "
                       "your base or world origin sits elsewhere")
        else:
            out.append("the position error changes with the state and is no other point of the body: a joint "
                       "axis, a joint offset or a link length differs")
    if "rotation" in parts and not parts["rotation"].passed:
        if hyp.all("transpose") and parts["position"].passed:  # with the position off too it is no layout slip:
            # a planar chain's angles measured the other way turn its rotation into the transpose as well
            out.append("the rotation is the transpose of MuJoCo's: you return the world-to-frame rotation; "
                       "MuJoCo's xmat maps the frame's axes to the world (its columns are the frame's axes)")
        elif tgt.kind == "site" and hyp.all("body frame"):
            offset = np.asarray(model.site_quat[tgt.index], dtype=float)
            out.append(f"the rotation is body {body!r}'s frame, not the site's: the site is turned against its "
                       f"body by {_angle_axis(quat_to_matrix(offset))}")
        elif right.constant(atol + rtol):
            out.append(f"the rotation is MuJoCo's turned by a constant {_angle_axis(_orthonormal(right.middle))} "
                       f"in the frame's own axes (R_yours = R_mujoco D)")
        elif left.constant(atol + rtol):
            out.append(f"the rotation is MuJoCo's turned by a constant {_angle_axis(_orthonormal(left.middle))} "
                       "in the world (R_yours = D R_mujoco): another world frame")
        else:
            out.append("the rotation error changes with the state: a joint axis or a joint's sign differs")
    return out


def _orthonormal(D: np.ndarray) -> np.ndarray:
    """The nearest rotation to ``D`` (its polar factor), for naming a constant offset."""
    U, _, Vt = np.linalg.svd(D)
    return U @ Vt
