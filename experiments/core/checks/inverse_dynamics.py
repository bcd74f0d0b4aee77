"""Compare two inverse-dynamics functions and say *which term* disagrees.

Both functions are evaluated at seeded random states and split into their terms
by the unit-vector method: gravity ``g(q) = ID(q, 0, 0)``, velocity terms
``c(q, qd) = ID(q, qd, 0) - g(q)`` and mass-matrix columns ``M e_i = ID(q, 0, e_i)
- g(q)``.  Each term is compared separately, so a report reads "mass matrix off on
entry (i, j)" rather than "torques differ".  Errors are ``candidate - reference``.
States stream through in chunks of :data:`CHUNK` with running per-entry
statistics, so memory does not grow with the number of states.  An
inverse-dynamics function takes ``(qpos (N, nq), qvel (N, nv), qacc (N, nv))``
and returns ``(N, nv)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import mujoco
import numpy as np

from ....analytic.regressor import regressor
from .. import truth_scope, user_code, validate
from ..attribution import SPRINGREF, Attribution, springref_model
from ..errors import DerivationError, StateError
from ..limits import STATES_MAX
from ..ranges import Ranges
from ..truth import (
    ConstraintTally,
    as_state_batch,
    effects_present,
    inverse_dynamics,
    truth_model,
)
from . import inertial, slips
from .common import (
    CHUNK,
    EntryStats,
    model_warnings,
    progress,
    sampling_lines,
    state_chunks,
    warning_lines,
)
from .names import conventions, dof_names
from .options import ATOL, RTOL
from .report import INVERSE_DYNAMICS, TERMS, CheckReport, Part
from .tree import rigid_tree

__all__ = [
    "check",
                "batched",
    "split_terms",
        "chunks_of",
                        ]

IDFunction = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
Chunks = Callable[[], Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]]]


_MODE = {
    "rigid-body": "rigid-body dynamics M(q) qdd + c(q, qd) + g(q): armature, damping, stiffness and "
                  "gravity compensation removed",
    "as-modeled": "as modeled: rigid-body dynamics plus armature, damping, stiffness and gravity compensation",
}


def batched(fn: Callable, nv: int, label: str = "derivation") -> IDFunction:
    """Wrap a user's ``tau = fn(q, qd, qdd)`` so it takes and returns batches.

    The function may be written for one state or for a batch along the leading
    axis: the batch call is used only if, on two states, it returns ``(2, nv)``
    equal to the two single calls.  The wrapper's ``note()`` says, once, when the
    function had to be called state by state (None otherwise).

    Raises:
      DerivationError: the function raises, exits, or returns anything but real
        numbers of the right shape.
    """

    def call(q, qd, qdd, copied=False):
        state["calls"] += 1
        given = (q, qd, qdd) if copied else user_code.given_copies((q, qd, qdd))  # crossdyn's states stay as drawn
        with user_code.users_errstate():
            out = user_code.call(fn, *given, label=label)
        if not copied:
            user_code.refuse_writes(label, ("q", "qd", "qdd"), (q, qd, qdd), given)
        return out

    state = {"calls": 0, "per_state": False}

    def single(q, qd, qdd):
        out = np.empty((q.shape[0], nv))
        given = user_code.given_copies((q, qd, qdd))  # one copy of the batch; each call gets its rows
        for k in range(q.shape[0]):
            row = call(given[0][k], given[1][k], given[2][k], copied=True)
            if row.shape != (nv,):
                raise DerivationError(
                    f"{label} returned shape {row.shape} for one state; expected ({nv},) torques"
                )
            out[k] = row
        user_code.refuse_writes(label, ("q", "qd", "qdd"), (q, qd, qdd), given)
        return out

    mode: dict[str, Callable] = {}

    def wrapped(q, qd, qdd):
        if "fn" not in mode:
            probe = slice(0, min(2, q.shape[0]))
            reference = single(q[probe], qd[probe], qdd[probe])
            try:
                out = call(q[probe], qd[probe], qdd[probe])
                vectorized = out.shape == reference.shape and np.allclose(out, reference, rtol=1e-12, atol=1e-12)
            except user_code.UserExit:
                raise
            except DerivationError:  # written for one state: it may fail on a batch
                vectorized = False
            mode["fn"] = call if vectorized else single
            state["per_state"] = not vectorized
        out = mode["fn"](q, qd, qdd)
        if out.shape != (q.shape[0], nv):
            raise DerivationError(f"{label} returned shape {out.shape}; expected ({q.shape[0]}, {nv})")
        if not np.isfinite(out).all():
            row = int(np.flatnonzero(~np.isfinite(out).all(axis=1))[0])
            raise DerivationError(f"{label} returned a non-finite torque at state {row}: {out[row]}")
        return out

    def note() -> str | None:
        if not state["per_state"] or state["calls"] <= 2:
            return None
        return (f"{label} takes one state at a time, so it was called {state['calls']:,} times, state by state; "
                "written for a batch (states along the first axis) it would run faster")

    wrapped.note = note  # type: ignore[attr-defined]  # said once in the report
    return wrapped


def _minus(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    """Term by term ``a - b`` of two :func:`split_terms` results."""
    return tuple(x - y for x, y in zip(a, b, strict=True))


def split_terms(id_fn: IDFunction, qpos, qvel, nv) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split an inverse-dynamics function into (M (N, nv, nv), c (N, nv), g (N, nv))."""
    n = qpos.shape[0]
    zeros = np.zeros((n, nv))
    g = id_fn(qpos, zeros, zeros)
    c = id_fn(qpos, qvel, zeros) - g
    M = np.empty((n, nv, nv))
    for i in range(nv):
        unit = np.zeros((n, nv))
        unit[:, i] = 1.0
        M[:, :, i] = id_fn(qpos, zeros, unit) - g
    return M, c, g


def chunks_of(model: mujoco.MjModel, samples: int, seed: int, states,
              ranges: Ranges | None = None) -> tuple[Chunks, int]:
    """A re-startable source of state chunks (random or given) and its length.

    Raises:
      StateError: given states of the wrong shape, non-finite or none at all.
      ParameterError: a bad ``samples`` or ``seed``.
    """
    samples = validate.count(samples, 1, STATES_MAX, "samples")
    seed = validate.seed(seed)
    if states is None:
        return (lambda: state_chunks(model, samples, seed, ranges)), samples
    if not isinstance(states, (tuple, list)) or len(states) != 3:
        raise StateError("states must be three arrays (qpos, qvel, qacc)")
    qpos, qvel, qacc = as_state_batch(model, *states)
    n = qpos.shape[0]
    if n == 0:
        raise StateError("states has no rows: give at least one state (qpos (N, nq), qvel and qacc (N, nv))")
    return (lambda: ((qpos[a : a + CHUNK], qvel[a : a + CHUNK], qacc[a : a + CHUNK]) for a in range(0, n, CHUNK))), n


@user_code.quiet_arithmetic
def check(
    tau_fn: Callable,
    model: mujoco.MjModel,
    samples: int = 1000,
    seed: int = 0,
    *,
    atol: float = ATOL,
    rtol: float = RTOL,
    states: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    label: str = "derivation",
    dynamics: str = "rigid-body",
    ranges: Ranges | None = None,
) -> CheckReport:
    """Check a hand derivation ``tau_fn(q, qd, qdd)`` against ``mj_inverse``, term by term.

    The truth is ``mj_inverse`` on :func:`~crossdyn.experiments.core.truth.truth_model`
    (``dynamics="rigid-body"``: without armature, damping, stiffness, gravity
    compensation).  The report says what that left out and, on a mismatch that
    equals some of the model's passive effects, which ones.

    Args:
      tau_fn: the user's inverse dynamics, one state or a batch (:func:`batched`), MuJoCo's layout.
      model: the MuJoCo model it claims to describe, as it comes.
      samples, seed: how many seeded random states (:func:`state_chunks`).
      atol, rtol: tolerance, ``|error| <= atol + rtol |reference|`` (default :data:`ATOL`, :data:`RTOL`).
      states: explicit ``(qpos, qvel, qacc)`` instead of random ones.
      label: how the function is named in error messages.
      dynamics: ``"rigid-body"`` or ``"as-modeled"``.
      ranges: where random states are drawn (default :class:`~crossdyn.experiments.core.ranges.Ranges`).

    Raises:
      ParameterError: unknown ``dynamics``; a tolerance, seed or sample count
        out of range (:mod:`crossdyn.experiments.core.validate`).
      DerivationError: ``tau_fn`` raises or returns the wrong shape or type.
      StateError: ``states`` has the wrong shape or NaN.
    """
    atol, rtol = validate.tolerances(atol, rtol)
    ranges = Ranges() if ranges is None else ranges
    truth = truth_model(model, dynamics)
    chunks, total = chunks_of(model, samples, seed, states, ranges)
    nv = model.nv
    candidate = batched(tau_fn, nv, label)
    data = mujoco.MjData(truth)
    reference = lambda q, qd, qdd: inverse_dynamics(truth, q, qd, qdd, data=data, unconstrained=True)  # noqa: E731

    torque = EntryStats((nv,))
    stats = {"mass_matrix": EntryStats((nv, nv)), "velocity": EntryStats((nv,)), "gravity": EntryStats((nv,))}
    tally = ConstraintTally(model)
    with model_warnings() as warned:
        # kept: the first states' errors, for the inertial-parameter fit
        worst, kept = _passes(candidate, reference, chunks, total, label, nv, torque, stats, tally, atol, rtol)
        passed = bool(torque.ok.all()) and all(s.ok.all() for s in stats.values())
        explanation, parameters = [], []
        if not passed and effects_present(model):
            explanation = _explain(candidate, model, dynamics, chunks, total, atol, rtol, label)
        if not passed and not explanation:
            parameters = _parameters(model, truth, kept, atol, rtol)
    names = dof_names(model)
    tiny = np.finfo(float).tiny
    per_joint = [
        {"name": names[i], "max_abs_error": float(torque.max_abs[i]),
         "max_rel_error": float(torque.max_abs[i] / max(torque.scale[i], tiny))}
        for i in range(nv)
    ]
    labels = {"mass_matrix": (names, names), "velocity": (names,), "gravity": (names,)}
    symbols = {"mass_matrix": "M", "velocity": "c", "gravity": "g"}
    return CheckReport(
        quantity=INVERSE_DYNAMICS, label=label, passed=passed, truth=_MODE[dynamics],
        parts={name: Part.from_stats(name, symbols[name], labels[name], stats[name]) for name in TERMS},
        torque=Part.from_stats("torque", "tau", (names,), torque), per_joint=per_joint, worst_state=worst[1],
        atol=atol, rtol=rtol, samples=int(total), seed=seed if states is None else None, dynamics=dynamics,
        left_out=truth_scope.elements(model, dynamics), switched_off=truth_scope.switched_off(model, tally),
        attribution=explanation, parameters=parameters, conventions=conventions(model),
        notes=[n for n in [candidate.note()] if n],  # type: ignore[attr-defined]
        warnings=warning_lines(warned), sampling=sampling_lines(model, total, seed, states, ranges),
        ranges=ranges.to_dict() if states is None else {},
    )


# States whose torque errors the inertial-parameter fit uses (nv equations each).
PARAMETER_STATES = 64


def _passes(candidate, reference, chunks, total, label, nv, torque, stats, tally, atol, rtol):
    """The main pass over the states: running statistics of the torque and of each term."""
    worst, kept = (-1.0, None), None
    for qpos, qvel, qacc in progress(chunks(), total, f"checking {label}"):
        tau_c, tau_r = candidate(qpos, qvel, qacc), reference(qpos, qvel, qacc)
        err = tau_c - tau_r
        row = int(np.argmax(np.abs(err).max(axis=1)))
        if np.abs(err[row]).max() > worst[0]:
            worst = (float(np.abs(err[row]).max()), {"index": torque.n + row, "q": qpos[row].tolist(),
                                                     "qd": qvel[row].tolist(), "qdd": qacc[row].tolist()})
        torque.add(err, tau_r, atol, rtol)
        for name, cand, ref in zip(TERMS, split_terms(candidate, qpos, qvel, nv),
                                   split_terms(reference, qpos, qvel, nv), strict=False):
            stats[name].add(cand - ref, ref, atol, rtol)
        tally.add(qpos)
        if kept is None:
            k = min(PARAMETER_STATES, qpos.shape[0])
            kept = (qpos[:k], qvel[:k], qacc[:k], err[:k], tau_r[:k])
    return worst, kept


def _parameters(model: mujoco.MjModel, truth: mujoco.MjModel, kept, atol: float, rtol: float) -> list[str]:
    """Is the torque error a change of some bodies' inertial parameters (crossdyn's own regressor), or else
    one geometric slip of the model (a link length, a joint's sign, axis or ref, a body's turn)?"""
    if kept is None:
        return []
    qpos, qvel, qacc, err, ref = kept
    tree = rigid_tree(model)
    found = []
    if tree is not None:
        Y = regressor(tree, qpos, qvel, qacc)
        found = inertial.explain(tree, Y.reshape(-1, Y.shape[-1]), err.ravel(), ref.ravel(), atol, rtol)
    if inertial.explains(found):
        return found
    k = min(slips.STATES, qpos.shape[0])
    slip = slips.explain(truth, slips.dynamics_truth(qvel[:k], qacc[:k]), qpos[:k], err[:k] + ref[:k], atol, rtol)
    return slip or found + [slips.NONE_ALONE]


def _explain(candidate: IDFunction, model, dynamics: str, chunks: Chunks, total: int, atol: float, rtol: float,
             label: str) -> list[str]:
    """Second pass: does the mismatch equal some of the model's passive effects?

    Each effect's contribution to each term is MuJoCo's own: the terms of
    ``truth_model(model, keep=(effect,))`` minus those of the rigid-body truth.
    """
    nv = model.nv
    base = truth_model(model, "rigid-body")
    mode_truth = truth_model(model, dynamics)
    effects = effects_present(model)
    one = {e: truth_model(model, keep=(e,)) for e in effects}

    def id_of(m):
        data = mujoco.MjData(m)
        return lambda q, qd, qdd: inverse_dynamics(m, q, qd, qdd, data=data)

    shifted = springref_model(mode_truth) if dynamics == "as-modeled" else None
    attribution = Attribution(model, dynamics, effects, atol, rtol, springref=shifted is not None)
    base_fn, mode_fn = id_of(base), id_of(mode_truth)
    effect_fns = {e: id_of(m) for e, m in one.items()}
    spring_fn = id_of(shifted) if shifted is not None else None
    for qpos, qvel, _ in progress(chunks(), total, f"explaining {label}"):
        cand = split_terms(candidate, qpos, qvel, nv)
        ref = split_terms(mode_fn, qpos, qvel, nv)
        rigid = split_terms(base_fn, qpos, qvel, nv)
        contributions = {e: _minus(split_terms(fn, qpos, qvel, nv), rigid) for e, fn in effect_fns.items()}
        if spring_fn is not None:
            contributions[SPRINGREF] = _minus(split_terms(spring_fn, qpos, qvel, nv), ref)
        attribution.add(dict(zip(TERMS, _minus(cand, ref), strict=True)), dict(zip(TERMS, ref, strict=True)),
                        {e: dict(zip(TERMS, parts, strict=True)) for e, parts in contributions.items()})
    return attribution.sentences()
