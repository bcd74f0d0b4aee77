"""``crossdyn check bias``: hand-derived bias forces ``c(q, qd) + g(q)`` against ``mj_inverse`` at ``qacc = 0``.

On a mismatch both sides are split into gravity ``b(q, 0)`` and velocity parts, and the
report tests: gravity's sign, velocity terms missing or scaled, one of the model's
passive effects, a change of some bodies' inertial parameters (``b = Y(q, qd, 0) pi``)
or one geometric slip (a link length, a joint's sign, axis or ref, a body's turn).
"""

from __future__ import annotations

import functools
import os

import mujoco
import numpy as np

from ....analytic.regressor import regressor
from .. import user_code
from ..truth import inverse_dynamics
from . import inertial, slips
from .common import EntryStats, Hypotheses, UserFunction, model_warnings, progress
from .mass_matrix import INERTIAL_STATES
from .names import dof_names
from .options import SAMPLED, begin
from .passive import PassiveEffects
from .report import CheckReport, Part
from .tree import rigid_tree

__all__ = ["check_bias"]

_TRUTH = {"rigid-body": "qfrc_bias (Coriolis, centrifugal and gravity forces; mj_inverse at qacc = 0)",
          "as-modeled": "qfrc_bias - qfrc_passive (mj_inverse at qacc = 0: with the model's damping, springs and "
                        "gravity compensation)"}
# Factors a velocity term is commonly off by (a missing 1/2 of a Christoffel symbol, a doubled one).
_FACTORS = (0.0, 0.5, 2.0, -1.0)


def _bias(model: mujoco.MjModel, q: np.ndarray, qd: np.ndarray, data=None) -> np.ndarray:
    return inverse_dynamics(model, q, qd, np.zeros_like(qd), data=data)


@user_code.quiet_arithmetic
def check_bias(fn, model: mujoco.MjModel | str | os.PathLike, *, gravity_only: bool = False,
               **options) -> CheckReport:
    """Check ``fn(q, qd) -> c + g`` (or ``fn(q) -> g`` with ``gravity_only``) against MuJoCo.

    ``fn``, ``model``, the ``options`` (``dynamics`` and the sampling ones, with ``qd_range``)
    and the errors are every check's (:class:`~crossdyn.experiments.core.checks.options.CheckOptions`).

    Args:
      fn: returns ``(nv,)`` generalized forces (N m, N).
      gravity_only: ``fn(q)`` is the gravity force alone, compared at zero velocity.

    Returns:
      The :class:`~crossdyn.experiments.core.checks.report.CheckReport`, part ``bias`` (``gravity``).
    """
    check = begin("check_bias", fn, model, options, (*SAMPLED, "dynamics", "qd_range"))
    model, label, o = check.model, check.label, check.options
    truth = check.truth()
    source = check.source(("q",) if gravity_only else ("q", "qd"))
    nv = model.nv
    user = UserFunction(check.fn, label, [((nv,),)], f"({nv},) generalized forces")
    call = (lambda q, qd: user(q)[0]) if gravity_only else (lambda q, qd: user(q, qd)[0])  # noqa: E731
    data = mujoco.MjData(truth)
    stats = EntryStats((nv,))
    name = "gravity" if gravity_only else "bias"
    with model_warnings() as warned:
        for chunk in progress(source.chunks(), source.total, f"checking {label}"):
            q = chunk[0]
            qd = np.zeros((q.shape[0], nv)) if gravity_only else chunk[1]
            b_user, b = call(q, qd), _bias(truth, q, qd, data)
            stats.add(b_user - b, b, o.atol, o.rtol)
        part = Part.from_stats(name, "g" if gravity_only else "b", (dof_names(model),), stats)
        attribution = [] if part.passed else _attribute(model, truth, o.dynamics, call, source, gravity_only, o.atol,
                                                        o.rtol, label)
    truth_text = _TRUTH[o.dynamics] + (" at zero velocity" if gravity_only else "")
    return check.report("bias", {name: part}, truth_text, attribution, source=source, user=user, warned=warned,
                        extra={"gravity_only": gravity_only})


def _attribute(model, truth, dynamics, call, source, gravity_only, atol, rtol, label) -> list[str]:
    nv = model.nv
    passive = PassiveEffects(model, dynamics, ("damping", "stiffness", "gravcomp"), atol, rtol)
    hyp = Hypotheses()
    tree = rigid_tree(model)
    kept = None
    for chunk in progress(source.chunks(), source.total, f"explaining {label}"):
        q = chunk[0]
        qd = np.zeros((q.shape[0], nv)) if gravity_only else chunk[1]
        zero = np.zeros_like(qd)
        g_user, g = call(q, zero), _bias(truth, q, zero)
        hyp.test("gravity", g_user, g, atol, rtol, axis=None)
        hyp.test("gravity sign", g_user, -g, atol, rtol, axis=None)
        if not gravity_only:
            b_user, b = call(q, qd), _bias(truth, q, qd)
            c_user, c = b_user - g_user, b - g
            hyp.test("velocity", c_user, c, atol, rtol, axis=None)
            for factor in _FACTORS:
                hyp.test(f"velocity x{factor:g}", c_user, factor * c, atol, rtol, axis=None)
        else:
            b_user, b, c_user, c = g_user, g, zero, zero
        if passive:
            passive.add({"velocity": c_user - c, "gravity": g_user - g},
                        functools.partial(_terms, q=q, qd=qd))
        if kept is None:
            k = min(INERTIAL_STATES, q.shape[0])
            kept = (q[:k], qd[:k], b_user[:k] - b[:k], b[:k])
    out = passive.sentences() if passive else []
    if out:
        return out
    if not gravity_only:
        if hyp.all("gravity") and not hyp.all("velocity"):
            out.append("the gravity part b(q, 0) agrees; the velocity part b(q, qd) - b(q, 0) (Coriolis and "
                       "centrifugal forces) is off")
        elif hyp.all("velocity") and not hyp.all("gravity"):
            out.append("the velocity part b(q, qd) - b(q, 0) (Coriolis and centrifugal forces) agrees; the "
                       "gravity part b(q, 0) is off")
        found = next((f for f in _FACTORS if hyp.all(f"velocity x{f:g}")), None)
        if found == 0.0:
            out.append("your velocity terms are zero: the Coriolis and centrifugal forces are missing")
        elif found is not None:
            out.append(f"your velocity terms are {found:g} times MuJoCo's (a factor in the Christoffel symbols "
                       "c_k = qd^T C_k qd, C_k = 1/2 (dM_k/dq + dM_k/dq^T - dM/dq_k)?)")
    if hyp.all("gravity sign") and not hyp.all("gravity"):
        out.append("your gravity force has the opposite sign of MuJoCo's: gravity points the other way, or the "
                   "potential's gradient entered with the wrong sign (g(q) = +dU/dq)")
    if kept is not None and not out:
        out = _parameters(tree, truth, *kept, atol, rtol)
    return out


def _parameters(tree, truth, q, qd, err, ref, atol, rtol) -> list[str]:
    """The bodies' inertial parameters and the model's geometric slips (a link length, a joint's sign ...),
    each tried on the kept states; a slip first where both explain (gravity alone cannot tell a link's
    length from its parent's centre of mass)."""
    found = []
    if tree is not None:
        Y = regressor(tree, q, qd, np.zeros_like(qd))
        found = inertial.explain(tree, Y.reshape(-1, Y.shape[-1]), err.ravel(), ref.ravel(), atol, rtol)
    k = min(slips.STATES, q.shape[0])
    slip = slips.explain(truth, slips.dynamics_truth(qd[:k]), q[:k], err[:k] + ref[:k], atol, rtol)
    if not slip:
        return found + ([slips.NONE_ALONE] if not inertial.explains(found) else [])
    return slip + slips.also(found) if inertial.explains(found) else slip


def _terms(model: mujoco.MjModel, q: np.ndarray, qd: np.ndarray) -> dict[str, np.ndarray]:
    g = _bias(model, q, np.zeros_like(qd))
    return {"velocity": _bias(model, q, qd) - g, "gravity": g}
