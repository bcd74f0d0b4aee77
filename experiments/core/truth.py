"""MuJoCo as ground truth: batched ``mj_inverse``, ``mj_fullM`` and ``qfrc_bias``, and the truth's model.

:func:`truth_model` makes the copy of a model as it comes whose ``mj_inverse`` a
check compares with (constraints off); :class:`ConstraintTally` counts what
switching the constraints off left out.
"""

from __future__ import annotations

import mujoco
import numpy as np

from .errors import ModelError, ParameterError, StateError
from .models import with_options

__all__ = [
    "inverse_dynamics",
    "mass_matrix",
    "bias_force",
    "EFFECTS",
    "DYNAMICS",
    "effects_present",
    "truth_model",
    "ConstraintTally",
    "as_state_batch",
    "as_rows",
]


def as_rows(name: str, value, size: int) -> np.ndarray:
    """One state array as rows of finite numbers: ``(N, size)`` (a single state ``(size,)`` is one row).

    Raises:
      StateError: the wrong trailing size, or a NaN/inf entry (naming the array and the row).
    """
    a = np.asarray(value, dtype=float)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.shape[1] != size:
        raise StateError(f"{name} must have shape (N, {size}) or ({size},) for this model, got {np.shape(value)}")
    bad = ~np.isfinite(a).all(axis=1)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise StateError(f"{name} has a non-finite entry in row {row}: {a[row]}")
    return a


def as_state_batch(model: mujoco.MjModel, qpos, qvel, qacc) -> tuple[np.ndarray, ...]:
    """Validate a state and broadcast it to a batch: ``(N, nq), (N, nv), (N, nv)`` (a single state: a batch of one).

    Raises:
      StateError: wrong trailing sizes, or NaN/inf entries (naming the array and the row).
    """
    arrays = [as_rows(name, value, size)
              for name, value, size in (("q", qpos, model.nq), ("qd", qvel, model.nv), ("qdd", qacc, model.nv))]
    n = np.broadcast_shapes(*(a.shape[:1] for a in arrays))
    return tuple(np.broadcast_to(a, n + a.shape[1:]) for a in arrays)


# What MuJoCo adds to the rigid-body dynamics that a hand derivation can model
# exactly, by the model arrays that carry it (names missing from a MuJoCo version
# are skipped).  ``--dynamics rigid-body`` zeroes all of them in the truth's copy,
# ``as-modeled`` keeps them.  Armature lands on M's diagonal, damping in the
# velocity terms, stiffness (about ``qpos_spring``) and gravity compensation in
# the gravity term: each in one term of the term-wise report.
EFFECTS: dict[str, tuple[str, ...]] = {
    "armature": ("dof_armature", "tendon_armature", "actuator_armature"),
    "damping": ("dof_damping", "dof_dampingpoly", "tendon_damping", "tendon_dampingpoly",
                "actuator_damping", "actuator_dampingpoly"),
    "stiffness": ("jnt_stiffness", "jnt_stiffnesspoly", "tendon_stiffness", "tendon_stiffnesspoly"),
    "gravcomp": ("body_gravcomp",),
}
DYNAMICS = ("rigid-body", "as-modeled")

# Always off in the truth: constraint forces (contacts, joint and tendon limits,
# equality constraints) and dry friction, which is a constraint in MuJoCo and not
# a function of (q, qd, qdd).  Fluid forces are zeroed through opt (no flag).
_CONSTRAINTS_OFF = (mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
                    | mujoco.mjtDisableBit.mjDSBL_EQUALITY | mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS)


def effects_present(model: mujoco.MjModel) -> tuple[str, ...]:
    """The entries of :data:`EFFECTS` this model carries (some array nonzero), in order."""
    return tuple(effect for effect, names in EFFECTS.items()
                 if any(np.any(getattr(model, name, 0) != 0) for name in names))


def truth_model(model: mujoco.MjModel, dynamics: str = "rigid-body",
                keep: tuple[str, ...] | None = None) -> mujoco.MjModel:
    """The copy of ``model`` whose ``mj_inverse`` is the truth of a check.

    Its ``qfrc_inverse = M qacc + bias - qfrc_passive`` with no constraint force:
    contacts, limits, equality constraints and frictionloss are switched off by
    ``opt.disableflags`` and fluid forces by zero density, viscosity and wind.

    Args:
      model: the model as it comes (left unchanged).
      dynamics: ``"rigid-body"`` (armature, damping, stiffness and gravity
        compensation removed: ``M(q) qdd + c(q, qd) + g(q)``) or ``"as-modeled"``
        (all of :data:`EFFECTS` kept).
      keep: instead of ``dynamics``, exactly which :data:`EFFECTS` to keep.

    Raises:
      ParameterError: unknown ``dynamics``.
    """
    if keep is None:
        if dynamics not in DYNAMICS:
            raise ParameterError(f"unknown dynamics {dynamics!r}; choose from {', '.join(DYNAMICS)}")
        keep = tuple(EFFECTS) if dynamics == "as-modeled" else ()
    fields = {name: 0.0 for effect, names in EFFECTS.items() if effect not in keep for name in names}
    return with_options(model, fields=fields, disableflags=int(model.opt.disableflags) | int(_CONSTRAINTS_OFF),
                        density=0.0, viscosity=0.0, wind=np.zeros(3))


_KIND = {
    int(mujoco.mjtConstraint.mjCNSTR_EQUALITY): "equality",
    int(mujoco.mjtConstraint.mjCNSTR_FRICTION_DOF): "frictionloss",
    int(mujoco.mjtConstraint.mjCNSTR_FRICTION_TENDON): "frictionloss",
    int(mujoco.mjtConstraint.mjCNSTR_LIMIT_JOINT): "limits",
    int(mujoco.mjtConstraint.mjCNSTR_LIMIT_TENDON): "limits",
}


class ConstraintTally:
    """Count, state by state, the constraint rows the model *as it comes* has active (the truth switches them off).

    Kinds: ``contacts``, ``limits``, ``equality``, ``frictionloss``.

    Attributes:
      first: per kind, ``(state index, rows)`` of the first state with rows active.
      states: per kind, how many states had rows active.
      total: states seen.
    """

    def __init__(self, model: mujoco.MjModel):
        self.model, self.data = model, mujoco.MjData(model)
        self.first: dict[str, tuple[int, int]] = {}
        self.states: dict[str, int] = {}
        self.total = 0

    def add(self, qpos: np.ndarray) -> None:
        """Tally a chunk of positions ``(N, nq)`` (rows depend on q only)."""
        for q in qpos:
            self.data.qpos[:] = q
            mujoco.mj_fwdPosition(self.model, self.data)
            if self.data.nefc:
                kinds = [_KIND.get(int(t), "contacts") for t in self.data.efc_type[: self.data.nefc]]
                for kind in set(kinds):
                    self.first.setdefault(kind, (self.total, kinds.count(kind)))
                    self.states[kind] = self.states.get(kind, 0) + 1
            self.total += 1


def inverse_dynamics(model: mujoco.MjModel, qpos, qvel, qacc, data: mujoco.MjData | None = None,
                     unconstrained: bool = False) -> np.ndarray:
    """MuJoCo's inverse dynamics ``qfrc_inverse`` row by row.

    Args:
      model: compiled model.
      qpos, qvel, qacc: ``(N, nq)``, ``(N, nv)``, ``(N, nv)``, or one state.
      data: optional scratch ``MjData`` to reuse.
      unconstrained: refuse any state at which a constraint is active.

    Returns:
      Generalized forces, ``(N, nv)`` (N m for hinges, N for slides), with whatever
      passive and constraint forces the model has (see :func:`truth_model`).

    Raises:
      ModelError: with ``unconstrained``, a state with active constraints (named).
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
                f"({', '.join(kinds)}): mj_inverse then includes constraint forces; check on "
                "truth_model(model), which switches them off (see docs/guides/real-models.md)."
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
