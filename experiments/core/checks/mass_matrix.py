"""``crossdyn check mass-matrix``: a hand-derived joint-space inertia ``M(q)`` against ``mj_fullM``.

On a mismatch the report tests, at every state: exactly the armature on the diagonal, a
free joint in Pinocchio's convention (``M_yours = T^T M T``), a change of some bodies'
inertial parameters (:mod:`.inertial`), or a geometric slip (:mod:`.slips`).
"""

from __future__ import annotations

import dataclasses
import functools
import os

import mujoco
import numpy as np

from ....analytic.regressor import regressor
from ....analytic.rotation import quat_to_matrix
from .. import user_code
from . import inertial, slips
from .common import (
    EntryStats,
    Hypotheses,
    UserFunction,
    mass_matrices,
    model_warnings,
    progress,
)
from .names import dof_names, joint_name
from .options import SAMPLED, begin
from .passive import PassiveEffects
from .report import CheckReport, Part
from .tree import rigid_tree

__all__ = ["check_mass_matrix", "free_joints", "INERTIAL_STATES"]

# States whose errors the inertial-parameter fit uses: each gives nv^2 equations
# (nv for a vector quantity), far more than the 10 unknowns per body.
INERTIAL_STATES = 32

_DYNAMICS_WORDS = {"rigid-body": "armature removed", "as-modeled": "the model's armature on the diagonal"}


def free_joints(model: mujoco.MjModel) -> list[tuple[str, int, int]]:
    """``(name, first dof, first qpos)`` of each free joint."""
    return [(joint_name(model, j), int(model.jnt_dofadr[j]), int(model.jnt_qposadr[j]))
            for j in range(model.njnt) if int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_FREE)]


def pinocchio_velocity_map(model: mujoco.MjModel, q: np.ndarray, free) -> np.ndarray:
    """``T (n, nv, nv)`` with ``qvel_mujoco = T qvel_pinocchio``: a free joint's linear velocity rotated
    from the body frame (Pinocchio's free flyer) to the world (MuJoCo's)."""
    T = np.broadcast_to(np.eye(model.nv), (q.shape[0], model.nv, model.nv)).copy()
    for _, da, qa in free:
        T[:, da : da + 3, da : da + 3] = quat_to_matrix(q[:, qa + 3 : qa + 7])
    return T


@user_code.quiet_arithmetic
def check_mass_matrix(fn, model: mujoco.MjModel | str | os.PathLike, **options) -> CheckReport:
    """Check ``fn(q) -> M (nv, nv)`` against MuJoCo's joint-space inertia.

    ``fn``, ``model``, the ``options`` (``dynamics`` and the sampling ones) and the errors are
    every check's (:class:`~crossdyn.experiments.core.checks.options.CheckOptions`).

    Returns:
      The :class:`~crossdyn.experiments.core.checks.report.CheckReport`, part ``mass matrix``.
    """
    check = begin("check_mass_matrix", fn, model, options, (*SAMPLED, "dynamics"))
    model, label, o = check.model, check.label, check.options
    truth = check.truth()
    source = check.source(("q",))
    nv = model.nv
    user = UserFunction(check.fn, label, [((nv, nv),)], f"a ({nv}, {nv}) mass matrix")
    data = mujoco.MjData(truth)
    stats = EntryStats((nv, nv))
    with model_warnings() as warned:
        for (q,) in progress(source.chunks(), source.total, f"checking {label}"):
            (M_user,) = user(q)
            M = mass_matrices(truth, q, data)
            stats.add(M_user - M, M, o.atol, o.rtol)
        names = dof_names(model)
        part = Part.from_stats("mass matrix", "M", (names, names), stats)
        attribution = [] if part.passed else _attribute(model, truth, o.dynamics, user, source, o.atol, o.rtol, label)
    truth_text = f"mj_fullM ({o.dynamics}: {_DYNAMICS_WORDS[o.dynamics]})"
    return check.report("mass-matrix", {"mass matrix": part}, truth_text,
                        attribution, source=source, user=user, warned=warned, symmetric=("mass matrix",))


def _attribute(model, truth, dynamics, user, source, atol, rtol, label) -> list[str]:
    """Second pass over the states: armature, a free-joint convention, inertial parameters."""
    passive = PassiveEffects(model, dynamics, ("armature",), atol, rtol)
    hyp = Hypotheses()
    free = free_joints(model)
    tree = rigid_tree(model)
    kept = None
    for (q,) in progress(source.chunks(), source.total, f"explaining {label}"):
        (M_user,) = user(q)
        M = mass_matrices(truth, q)
        if passive:
            passive.add({"mass_matrix": M_user - M}, functools.partial(_terms, q=q))
        if free:
            T = pinocchio_velocity_map(model, q, free)
            hyp.test("pinocchio", M_user, np.swapaxes(T, 1, 2) @ M @ T, atol, rtol, axis=None)
        if kept is None:
            k = min(INERTIAL_STATES, q.shape[0])
            kept = (q[:k], M_user[:k] - M[:k], M[:k])
    out = passive.sentences() if passive else []
    if out:
        return out
    if free and hyp.all("pinocchio"):
        names = ", ".join(repr(name) for name, _, _ in free)
        return [f"free joint {names}: your matrix takes the linear velocity in the body frame (Pinocchio's free "
                "flyer, M = T^T M_mujoco T); MuJoCo's qvel[0:3] is the world-frame linear velocity"]
    if tree is not None and kept is not None:
        out += _inertial(tree, *kept, atol, rtol)
    if kept is not None and (not out or out[0].startswith("not explained")):
        # Not a mass, centre of mass or inertia: one geometric slip (a body's pos, a joint's ref ...) may be.
        q = kept[0][: slips.STATES]
        found = slips.explain(truth, slips.mass_matrix_truth, q, kept[1][: q.shape[0]] + kept[2][: q.shape[0]],
                              atol, rtol)
        out = found or [*out, slips.NONE_ALONE]
    return out


def _terms(model: mujoco.MjModel, q: np.ndarray) -> dict[str, np.ndarray]:
    return {"mass_matrix": mass_matrices(model, q)}


def _inertial(tree, q, error, M, atol, rtol) -> list[str]:
    """Fit ``M_yours e_i - M e_i = Y(q, 0, e_i) delta_pi`` over the kept states and every column ``i``."""

    still = dataclasses.replace(tree, gravity=np.zeros(3))
    n, nv = q.shape[0], tree.nv
    qs = np.repeat(q, nv, axis=0)
    unit = np.tile(np.eye(nv), (n, 1))
    Y = regressor(still, qs, np.zeros((n * nv, nv)), unit)  # (n nv, nv, P): row k nv + i is column i of state k
    err = np.swapaxes(error, 1, 2).reshape(n * nv, nv)  # column i of state k
    ref = np.swapaxes(M, 1, 2).reshape(n * nv, nv)
    return inertial.explain(tree, Y.reshape(-1, Y.shape[-1]), err.ravel(), ref.ravel(), atol, rtol,
                            unit="kg m^2, kg")
