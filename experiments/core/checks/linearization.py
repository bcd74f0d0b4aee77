"""``crossdyn check linearization``: a hand-derived ``(A, B)`` against ``linearize``, at one operating point.

Continuous time, state ``x = [dq, dqd]`` in MuJoCo's tangent space, input ``du = ctrl - ctrl_op``;
a hand model with fewer states is mapped by a :class:`Reduction`.  On a mismatch the report names
the block and entries and tests: a block of the opposite sign, a discrete-time ``(A, B)``, an input
column off by its actuator's gear, a passive effect left out.
"""

from __future__ import annotations

import os

import mujoco
import numpy as np

from .. import user_code
from ..errors import ParameterError
from ..linearize import linearize
from ..models import with_options
from ..reduction import Reduction, tightened
from . import slips
from .common import EntryStats, UserFunction, model_warnings
from .names import conventions
from .options import begin
from .report import CheckReport, Part

__all__ = ["check_linearization", "ATOL", "RTOL", "TOLERANCE_REASON"]

# linearize's central differences (step 1e-6) err by ~1e-12 |f'''| and by round-off
# ~1e-16 |qacc| / 1e-6 = 1e-10 of the acceleration scale; 1e-6 leaves two orders
# of magnitude above that and is far below any modelling error.
ATOL = 1e-6
RTOL = 1e-6
TOLERANCE_REASON = "linearize's central differences err by ~1e-10 of the scale; two orders to spare"


def _parse_point(model, keyframe, qpos, qvel, ctrl, reduction=None):
    if keyframe is None and qpos is None and getattr(reduction, "declared", None) is None:
        raise ParameterError("give the operating point: a keyframe (--keyframe NAME) or a pose (--qpos ...)")


# A linearization whose entries move, when every finite-difference step is cut to STEP_CUT of itself, by more
# than the check's tolerance and than STEP_RTOL of its largest entry depends on its step: it is no slope of
# MuJoCo's dynamics (a contact made or broken, dry friction switching, a limit crossed), which moves entries by
# a constraint's whole stiffness.  A slope moves by round-off, ~1e-16 |qacc| / 1e-7 (measured up to 5e-8 of the
# largest entry), and truncation, ~1e-12.
STEP_CUT = 0.1
STEP_RTOL = 1e-6


@user_code.quiet_arithmetic
def check_linearization(
    fn,
    model: mujoco.MjModel | str | os.PathLike,
    *,
    keyframe: str | int | None = None,
    qpos=None,
    qvel=None,
    ctrl=None,
    reduction: Reduction | None = None,
    eps=None,
    **options,
) -> CheckReport:
    """Check ``fn(q, qd, u) -> (A, B)`` against :func:`~crossdyn.experiments.core.linearize.linearize`.

    ``fn``, ``model`` and the errors are every check's
    (:class:`~crossdyn.experiments.core.checks.options.CheckOptions`); the ``options`` are
    ``atol`` and ``rtol`` (defaults :data:`ATOL` and :data:`RTOL`).

    Args:
      fn: called once with the operating point ``q (nq,)``, ``qd (nv,)``, ``u (nu,)``; returns
        ``A (2nv, 2nv)`` and ``B (2nv, nu)`` (``(k, k)`` and ``(k, m)`` with a reduction).
      keyframe: a keyframe's name or index; qpos, qvel, ctrl: the point (override
        the keyframe's; ``ctrl="hold"``: the control that holds the pose; a declared reduction's own
        operating point when none is given).
      reduction: the hand model's reduced state and input (:class:`Reduction`).
      eps: ``linearize``'s finite-difference step (default: chosen per direction so that no contact or limit
        is made or broken).  The linearization is taken again with every step a tenth as long; if it moves by
        more than the tolerance, the answer depends on the step, and the check says so and fails.

    Returns:
      The :class:`~crossdyn.experiments.core.checks.report.CheckReport`, parts ``A`` and ``B``.
    """
    check = begin("check_linearization", fn, model, options, ("atol", "rtol"), atol=ATOL, rtol=RTOL)
    model, label, atol, rtol = check.model, check.label, check.options.atol, check.options.rtol
    _parse_point(model, keyframe, qpos, qvel, ctrl, reduction)
    declared = getattr(reduction, "declared", None)
    if declared is not None and keyframe is None and qpos is None:
        qpos = declared.qpos
        qvel = declared.qvel if qvel is None else qvel
        ctrl = declared.ctrl if ctrl is None else ctrl
    with model_warnings() as warned:
        lin = linearize(model, keyframe=keyframe, qpos=qpos, qvel=qvel, ctrl=ctrl, eps=eps,
                        reduction=reduction if declared is not None else None)
        # Converged tighter than MuJoCo's default: a warm-started solve may otherwise stop at the operating
        # point's answer for the shorter steps (reduction.SOLVER_TOLERANCE).
        shorter = linearize(tightened(model), qpos=lin.qpos, qvel=lin.qvel, ctrl=lin.ctrl, eps=lin.steps * STEP_CUT,
                            reduction=reduction if declared is not None else None)
    nv, nu = model.nv, model.nu
    A, B = lin.A, lin.B
    A_short, B_short = shorter.A, shorter.B
    states, inputs = lin.state_names, lin.input_names
    if reduction is not None and declared is None:
        reduction.validate(nv, nu)
        A, B = reduction.apply(A, B)
        A_short, B_short = reduction.apply(A_short, B_short)
        states, inputs = tuple(reduction.state_names), tuple(reduction.input_names)
    k, m = A.shape[0], B.shape[1]
    user = UserFunction(check.fn, label, [((k, k), (k, m))], f"(A ({k}, {k}), B ({k}, {m}))", inputs=("q", "qd", "u"))
    A_user, B_user = user._parse(user._call(lin.qpos.copy(), lin.qvel.copy(), lin.ctrl.copy()), None)
    user._finite([A_user[None], B_user[None]])
    stats_A = EntryStats((k, k))
    stats_A.add((A_user - A)[None], A[None], atol, rtol)
    parts = {"A": Part.from_stats("A", "A", (states, states), stats_A)}
    if m:  # a model without actuators has an empty B: nothing to compare
        stats_B = EntryStats((k, m))
        stats_B.add((B_user - B)[None], B[None], atol, rtol)
        parts["B"] = Part.from_stats("B", "B", (states, inputs), stats_B)
    passed = all(p.passed for p in parts.values())
    attribution = [] if passed else _attribute(model, lin, reduction, A_user, B_user, A, B, parts, states, inputs,
                                               atol, rtol)
    if not passed:  # a joint's damping, stiffness or armature left out is one cause, named per joint
        attribution = slips.linearization_effects(model, lin, reduction, A_user, B_user, atol, rtol) or attribution
    step = _step_dependence(A, B, A_short, B_short, states, inputs, atol, rtol)
    extra: dict = {}
    if step:  # the truth itself is in doubt: said first, and no verdict of agreement stands on it
        attribution = [step, *attribution]
        passed = False
    where = f"keyframe {keyframe!r}" if keyframe is not None else "the given pose"
    if declared is not None:
        where = "the reduction's operating point" if keyframe is None and qpos is declared.qpos else where
        truth = (f"linearize at {where} in your coordinates (continuous time; MuJoCo's forward dynamics as "
                 "simulated, soft contacts and loop closures included, differentiated along the reduction's "
                 "motions with the held coordinates held)")
        change = _largest_change(A, B, A_short, B_short)
        extra["finite_difference"] = {"steps": lin.steps.tolist(), "step_cut": STEP_CUT,
                                      "largest_change_relative": change}
    else:
        truth = (f"linearize at {where} (continuous time, x = [dq, dqd] in MuJoCo's tangent space, u = ctrl - ctrl_op"
                 + (", reduced by the given lift/read maps" if reduction is not None else "") + ")")
    notes = []
    if reduction is None and conventions(model):
        notes.append("dq is mj_differentiatePos of qpos: a free joint contributes 3 translations (world) and 3 "
                     "rotations (body frame), a ball joint 3 rotations (body frame)")
    if declared is not None:
        low, high = float(np.min(lin.steps)), float(np.max(lin.steps))
        span = f"{high:.0e}" if low == high else f"{low:.0e} to {high:.0e}"
        notes.append(f"finite-difference steps {span} (no contact or limit made or broken); every step a tenth as "
                     f"long moves A and B by at most {extra['finite_difference']['largest_change_relative']:.1e} of "
                     "their largest entry")
        if declared.free:
            notes.append(f"{declared.free} direction(s) that neither your coordinates, the held ones nor the "
                         "constraints fix (a symmetric robot's yaw, say) move least with them: by the least kinetic "
                         "energy")
    return check.report(
        "linearization", parts, truth, attribution, warned=warned, notes=notes, passed=passed,
        conventions=[] if declared is not None else conventions(model),
        extra={"operating_point": {"qpos": lin.qpos.tolist(), "qvel": lin.qvel.tolist(), "ctrl": lin.ctrl.tolist(),
                                   "qacc": lin.qacc.tolist()}, "state_names": list(states),
               "input_names": list(inputs), **extra})


def _largest_change(A, B, A_short, B_short) -> float:
    """The largest change of ``(A, B)`` between the two steps, relative to their largest entry."""
    scale = max(float(np.abs(A).max(initial=0.0)), float(np.abs(B).max(initial=0.0)), np.finfo(float).tiny)
    return max(float(np.abs(A - A_short).max(initial=0.0)), float(np.abs(B - B_short).max(initial=0.0))) / scale


def _step_dependence(A, B, A_short, B_short, states, inputs, atol, rtol) -> str:
    """A sentence when the linearization moves beyond the tolerance and round-off as the steps shrink tenfold,
    else ''."""
    moved = []
    scale = max(float(np.abs(A).max(initial=0.0)), float(np.abs(B).max(initial=0.0)))
    for name, full, short, rows, cols in (("A", A, A_short, states, states), ("B", B, B_short, states, inputs)):
        off = np.abs(full - short) > np.maximum(atol + rtol * np.abs(full), STEP_RTOL * scale)
        moved += [(float(abs(full[i, j] - short[i, j])), f"{name}[{rows[i]}, {cols[j]}]") for i, j in np.argwhere(off)]
    if not moved:
        return ""
    moved.sort(reverse=True)
    worst = ", ".join(f"{entry} by {size:.3g}" for size, entry in moved[:4])
    return (f"MuJoCo's linearization depends on the finite-difference step: with every step a tenth as long "
            f"{len(moved)} entr{'y' if len(moved) == 1 else 'ies'} move beyond the tolerance ({worst}): a step made or "
            "broke a contact, crossed a limit or switched dry friction, so no entry is a slope to check against; "
            "give eps or an operating point away from the switch")


def _close(a, b, atol, rtol) -> bool:
    return bool(np.all(np.abs(a - b) <= atol + rtol * np.abs(b)))


def _entries(part: Part, rows, cols, limit: int = 6) -> str:
    off = [(r, c) for r in rows for c in cols if not part.entry_passed[r, c]]
    names = [f"d({part.labels[0][r]})/d({part.labels[1][c]})" for r, c in off]
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _reversed_gravity(model, lin, reduction) -> np.ndarray:
    """The truth's ``A`` with gravity pointing the other way (same point), reduced like the truth."""
    flipped = with_options(model, gravity=-np.asarray(model.opt.gravity, dtype=float))
    if getattr(reduction, "declared", None) is not None:  # along its own motions, as the truth was
        return linearize(flipped, qpos=lin.qpos, qvel=lin.qvel, ctrl=lin.ctrl, reduction=reduction).A
    other = linearize(flipped, qpos=lin.qpos, qvel=lin.qvel, ctrl=lin.ctrl)
    return other.A if reduction is None else reduction.apply(other.A, other.B)[0]


def _attribute(model, lin, reduction, A_user, B_user, A, B, parts, states, inputs, atol, rtol) -> list[str]:
    out = []
    k = A.shape[0]
    # Gravity the other way lifts a robot off what it stands on: no hypothesis for a reduction keeping contacts.
    standing = bool(getattr(getattr(reduction, "declared", None), "contacts", ()))
    gravity = np.any(np.asarray(model.opt.gravity) != 0) and not np.all(parts["A"].entry_passed) and not standing
    A_flipped = _reversed_gravity(model, lin, reduction) if gravity else None
    if reduction is None:
        Ad, Bd = lin.discrete()
        if _close(A_user, Ad, atol, rtol) and (B.size == 0 or _close(B_user, Bd, atol, rtol)):
            return [f"your (A, B) is discrete time: one step of the model's integrator (dt = {lin.timestep:g} s); "
                    "the truth is continuous, d/dt x = A x + B u (continuous A = (A_d - I) / dt to first order)"]
        nv = lin.nv
        blocks = {"position rows d(dq)/dt, which must be [0, I]": (slice(0, nv), slice(0, 2 * nv), A_user, A, "A"),
                  "dq/dq block (d qdd / d q: the gravity and spring stiffness)": (slice(nv, 2 * nv), slice(0, nv),
                                                                                   A_user, A, "A"),
                  "dq/dqd block (d qdd / d qd: damping, Coriolis)": (slice(nv, 2 * nv), slice(nv, 2 * nv),
                                                                      A_user, A, "A"),
                  "input map B (d qdd / d u)": (slice(0, 2 * nv), slice(0, B.shape[1]), B_user, B, "B")}
        if "B" not in parts:
            del blocks["input map B (d qdd / d u)"]
    else:
        blocks = {"reduced A": (slice(0, k), slice(0, k), A_user, A, "A")}
        if "B" in parts:
            blocks["reduced B"] = (slice(0, k), slice(0, B.shape[1]), B_user, B, "B")
    for words, (rows, cols, mine, theirs, which) in blocks.items():
        part = parts[which]
        if np.all(part.entry_passed[rows, cols]):
            continue
        shape = part.entry_passed.shape
        entries = _entries(part, range(*rows.indices(shape[0])), range(*cols.indices(shape[1])))
        sentence = f"the {words} is off at {entries}"
        block_mine, block_theirs = mine[rows, cols], theirs[rows, cols]
        if which == "A" and A_flipped is not None and _close(block_mine, A_flipped[rows, cols], atol, rtol):
            sentence += ("; it is MuJoCo's with gravity pointing the other way: a gravity-sign slip (g enters the "
                         "stiffness d qdd / d q with the wrong sign)")
        elif np.abs(block_theirs).max() > atol and _close(block_mine, -block_theirs, atol, rtol):
            sentence += "; it is MuJoCo's with the opposite sign"
        out.append(sentence)
    if "B" not in parts:
        return out
    if reduction is None and model.nu and not np.all(parts["B"].entry_passed):
        gear = np.asarray(model.actuator_gear[:, 0])
        for i in range(model.nu):
            col_mine, col = B_user[:, i], B[:, i]
            if gear[i] not in (0.0, 1.0) and not np.all(parts["B"].entry_passed[:, i]) \
                    and _close(col_mine * gear[i], col, atol, rtol):
                out.append(f"input {inputs[i]!r}: your column is MuJoCo's divided by the actuator's gear "
                           f"{gear[i]:g}: the force is gear x ctrl")
    for i in range(B.shape[1]):
        if not np.all(parts["B"].entry_passed[:, i]) and np.abs(B[:, i]).max() > atol \
                and _close(B_user[:, i], -B[:, i], atol, rtol):
            out.append(f"input {inputs[i]!r}: your column has the opposite sign of MuJoCo's")
    return out

