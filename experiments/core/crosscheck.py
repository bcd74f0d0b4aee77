"""Compare two inverse-dynamics functions and say *which term* disagrees.

The comparison evaluates both functions at seeded random states and, besides the
torque error, splits each function into its terms by the unit-vector idea of
seed 000 §10.3 (SPEC §2):

- gravity            g(q)     = ID(q, 0, 0)
- velocity terms     c(q, qd) = ID(q, qd, 0) - g(q)
- mass-matrix column M e_i    = ID(q, 0, e_i) - g(q)

Each term is compared separately, so a report reads "mass matrix off by up to X on
entry (i, j); velocity and gravity agree to 1e-15" rather than "torques differ".
Errors are always ``candidate - reference``.

An inverse-dynamics function here takes batched MuJoCo-layout states
``(qpos (N, nq), qvel (N, nv), qacc (N, nv))`` and returns ``(N, nv)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import mujoco
import numpy as np

from crossdyn.experiments.core.errors import DerivationError
from crossdyn.experiments.core.truth import as_state_batch, check_exact_dynamics, inverse_dynamics

__all__ = [
    "TermReport",
    "Report",
    "compare",
    "check",
    "sample_states",
    "dof_names",
    "batched",
    "TERMS",
]

IDFunction = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]

TERMS = ("mass_matrix", "velocity", "gravity")
_TERM_LABEL = {"mass_matrix": "mass matrix", "velocity": "velocity terms", "gravity": "gravity"}


@dataclass
class TermReport:
    """How one term of the candidate compares with the reference.

    Attributes:
      name: ``"mass_matrix"``, ``"velocity"`` or ``"gravity"``.
      passed: every entry within ``atol + rtol |reference|``.
      max_abs_error: largest ``|candidate - reference|`` over samples and entries.
      scale: largest ``|reference|`` of the term (for a relative reading).
      worst_entry: index of the worst entry: ``(i, j)`` for the mass matrix, ``(i,)``
        otherwise.
      worst_sample: row of the sampled states where the worst error occurs.
      mean_error: mean error over the samples, per entry (nested lists).  A
        constant offset, like a missing inertia, shows up here exactly.
      spread: largest deviation of the error from ``mean_error``; zero (to
        round-off) when the error is a constant offset.
    """

    name: str
    passed: bool
    max_abs_error: float
    scale: float
    worst_entry: tuple[int, ...]
    worst_sample: int
    mean_error: list
    spread: float

    def describe(self, names: list[str]) -> str:
        label = _TERM_LABEL[self.name]
        if self.name == "mass_matrix":
            i, j = self.worst_entry
            where = f"entry M[{i},{j}] ({names[i]}, {names[j]})"
        else:
            where = f"{names[self.worst_entry[0]]}"
        if self.passed:
            return f"{label} agree to {self.max_abs_error:.1e}"
        # An error that varies by under a millionth of its size across the samples
        # is a constant offset (a missing or extra constant parameter).
        kind = "a constant offset" if self.spread <= 1e-6 * self.max_abs_error else "state-dependent"
        return f"{label} off by up to {self.max_abs_error:.3e} on {where} ({kind})"


@dataclass
class Report:
    """Result of a cross-check; ``to_dict()`` is what ``metrics.json`` stores.

    Attributes:
      passed: torques and all three terms agree within tolerance.
      max_abs_error: largest torque error over samples and joints.
      max_rel_error: ``max_abs_error`` relative to the largest reference torque.
      per_joint: per dof ``{"name", "max_abs_error", "max_rel_error"}``.
      terms: one :class:`TermReport` per entry of ``TERMS``.
      worst_state: ``{"index", "q", "qd", "qdd"}`` of the worst torque error.
      atol, rtol: the tolerance, ``|error| <= atol + rtol |reference|``.
      samples, seed: how the states were drawn.
      names: dof names used in messages.
      per_sample: per term, the largest error at each sample ``(N,)``, for plots.
    """

    passed: bool
    max_abs_error: float
    max_rel_error: float
    per_joint: list[dict]
    terms: dict[str, TermReport]
    worst_state: dict
    atol: float
    rtol: float
    samples: int
    seed: int | None
    names: list[str]
    per_sample: dict[str, np.ndarray] = field(repr=False, default_factory=dict)

    @property
    def failing_terms(self) -> list[str]:
        return [name for name in TERMS if not self.terms[name].passed]

    @property
    def diagnosis(self) -> str:
        """One line: what agrees, what does not, by how much and where."""
        if self.passed:
            return (
                f"agree: max |error| {self.max_abs_error:.1e} over {self.samples} states "
                f"(mass matrix, velocity and gravity terms each within tolerance)"
            )
        parts = [self.terms[t].describe(self.names) for t in self.failing_terms]
        clean = [_TERM_LABEL[t] for t in TERMS if self.terms[t].passed]
        worst = max((self.terms[t].max_abs_error for t in TERMS if self.terms[t].passed), default=None)
        text = "; ".join(parts)
        if clean:
            text += f"; {' and '.join(clean)} agree to {worst:.1e}"
        if not self.failing_terms:
            text = f"torques differ by up to {self.max_abs_error:.3e} although each term agrees"
        q = np.array(self.worst_state["q"])
        return f"{text} (worst torque error {self.max_abs_error:.3e} at q = {np.array2string(q, precision=3)})"

    def to_dict(self) -> dict:
        return {
            "passed": bool(self.passed),
            "max_abs_error": float(self.max_abs_error),
            "max_rel_error": float(self.max_rel_error),
            "per_joint": self.per_joint,
            "terms": {
                name: {
                    "passed": bool(t.passed),
                    "max_abs_error": float(t.max_abs_error),
                    "scale": float(t.scale),
                    "worst_entry": list(t.worst_entry),
                    "worst_sample": int(t.worst_sample),
                    "mean_error": t.mean_error,
                    "spread": float(t.spread),
                }
                for name, t in self.terms.items()
            },
            "failing_terms": self.failing_terms,
            "diagnosis": self.diagnosis,
            "worst_state": self.worst_state,
            "tolerance": {"atol": self.atol, "rtol": self.rtol},
            "samples": self.samples,
            "seed": self.seed,
        }


def dof_names(model: mujoco.MjModel) -> list[str]:
    """A readable name per dof: the joint name, with a suffix on multi-dof joints."""
    suffixes = {
        mujoco.mjtJoint.mjJNT_FREE: ["x", "y", "z", "rx", "ry", "rz"],
        mujoco.mjtJoint.mjJNT_BALL: ["rx", "ry", "rz"],
    }
    names = []
    for j in range(model.njnt):
        base = model.joint(j).name or f"joint{j}"
        extra = suffixes.get(int(model.jnt_type[j]))  # int: numpy ints do not match the enum keys
        names.extend([f"{base}.{s}" for s in extra] if extra else [base])
    return names


def sample_states(
    model: mujoco.MjModel,
    samples: int,
    seed: int,
    q_max: float = np.pi,
    qd_max: float = 10.0,
    qdd_max: float = 50.0,
    slide_max: float = 0.5,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seeded random states in MuJoCo's layout.

    Hinges are uniform in ``[-q_max, q_max]`` rad (or their range if limited),
    slides in ``[-slide_max, slide_max]`` m (or their range), free joints get a
    position in a 1 m cube and a uniformly random unit quaternion, ball joints a
    random unit quaternion.  Velocities are uniform in ``[-qd_max, qd_max]`` and
    accelerations in ``[-qdd_max, qdd_max]`` on every dof.

    Returns:
      ``qpos (samples, nq)``, ``qvel (samples, nv)``, ``qacc (samples, nv)``.
    """
    if samples < 1:
        raise ValueError(f"samples must be at least 1, got {samples}")
    rng = np.random.default_rng(seed)
    qpos = np.zeros((samples, model.nq))
    for j in range(model.njnt):
        adr, kind = model.jnt_qposadr[j], model.jnt_type[j]
        limited = bool(model.jnt_limited[j])
        lo, hi = model.jnt_range[j]
        if kind == mujoco.mjtJoint.mjJNT_HINGE:
            qpos[:, adr] = rng.uniform(lo, hi, samples) if limited else rng.uniform(-q_max, q_max, samples)
        elif kind == mujoco.mjtJoint.mjJNT_SLIDE:
            qpos[:, adr] = rng.uniform(lo, hi, samples) if limited else rng.uniform(-slide_max, slide_max, samples)
        else:
            quat_adr = adr
            if kind == mujoco.mjtJoint.mjJNT_FREE:
                qpos[:, adr : adr + 3] = rng.uniform(-1.0, 1.0, (samples, 3))
                quat_adr = adr + 3
            quat = rng.normal(size=(samples, 4))
            qpos[:, quat_adr : quat_adr + 4] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    qvel = rng.uniform(-qd_max, qd_max, (samples, model.nv))
    qacc = rng.uniform(-qdd_max, qdd_max, (samples, model.nv))
    return qpos, qvel, qacc


def batched(fn: Callable, nv: int, label: str = "derivation") -> IDFunction:
    """Wrap a user's ``tau = fn(q, qd, qdd)`` so it takes and returns batches.

    The function may be written for one state (1-D arrays) or for a batch along
    the leading axis.  A probe on two different states decides which: the batch
    call is used only if it returns ``(2, nv)`` equal to the two single calls.

    Raises:
      DerivationError: the function raises, or returns the wrong shape or NaN.
    """

    def call(q, qd, qdd):
        try:
            out = fn(q, qd, qdd)
        except Exception as exc:  # the user's code: any exception is theirs to see
            raise DerivationError(f"{label} raised {type(exc).__name__}: {exc}") from None
        return np.asarray(out, dtype=float)

    def single(q, qd, qdd):
        rows = []
        for k in range(q.shape[0]):
            out = call(q[k], qd[k], qdd[k])
            if out.shape != (nv,):
                raise DerivationError(
                    f"{label} returned shape {out.shape} for one state; expected ({nv},) torques"
                )
            rows.append(out)
        return np.array(rows)

    mode: dict[str, Callable] = {}

    def wrapped(q, qd, qdd):
        if "fn" not in mode:
            probe = slice(0, min(2, q.shape[0]))
            reference = single(q[probe], qd[probe], qdd[probe])
            try:
                out = np.asarray(fn(q[probe], qd[probe], qdd[probe]), dtype=float)
                vectorized = out.shape == reference.shape and np.allclose(out, reference, rtol=1e-12, atol=1e-12)
            except Exception:
                vectorized = False
            mode["fn"] = (lambda a, b, c: call(a, b, c)) if vectorized else single
        out = mode["fn"](q, qd, qdd)
        if out.shape != (q.shape[0], nv):
            raise DerivationError(f"{label} returned shape {out.shape}; expected ({q.shape[0]}, {nv})")
        if not np.isfinite(out).all():
            row = int(np.flatnonzero(~np.isfinite(out).all(axis=1))[0])
            raise DerivationError(f"{label} returned a non-finite torque at state {row}: {out[row]}")
        return out

    return wrapped


def _term_report(name, cand, ref, atol, rtol) -> tuple[TermReport, np.ndarray]:
    """Compare one term, arrays ``(N, ...)``; returns the report and per-sample max error."""
    err = cand - ref
    abs_err = np.abs(err)
    flat = abs_err.reshape(abs_err.shape[0], -1)
    per_sample = flat.max(axis=1)
    sample = int(np.argmax(per_sample))
    entry = np.unravel_index(int(np.argmax(abs_err[sample])), abs_err.shape[1:])
    mean = err.mean(axis=0)
    report = TermReport(
        name=name,
        passed=bool(np.all(abs_err <= atol + rtol * np.abs(ref))),
        max_abs_error=float(abs_err.max()),
        scale=float(np.abs(ref).max()),
        worst_entry=tuple(int(i) for i in entry),
        worst_sample=int(sample),
        mean_error=mean.tolist(),
        spread=float(np.abs(err - mean).max()),
    )
    return report, per_sample


def _terms(id_fn: IDFunction, qpos, qvel, nv) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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


def compare(
    candidate: IDFunction,
    reference: IDFunction,
    qpos: np.ndarray,
    qvel: np.ndarray,
    qacc: np.ndarray,
    *,
    atol: float = 1e-9,
    rtol: float = 1e-9,
    names: list[str] | None = None,
    seed: int | None = None,
) -> Report:
    """Compare two batched inverse-dynamics functions at the given states.

    Args:
      candidate: the derivation under test.
      reference: the ground truth (usually MuJoCo's ``mj_inverse``).
      qpos, qvel, qacc: states, ``(N, nq)``, ``(N, nv)``, ``(N, nv)``.
      atol, rtol: an entry passes if ``|candidate - reference| <= atol + rtol |reference|``
        (units of the term: N m or N for torques, kg m^2 or kg for M entries).
      names: dof names for messages.
      seed: recorded in the report.

    Returns:
      A :class:`Report` with the torque comparison and the three terms.
    """
    nv = qvel.shape[1]
    names = names or [f"dof{i}" for i in range(nv)]
    tau_c, tau_r = candidate(qpos, qvel, qacc), reference(qpos, qvel, qacc)
    err = np.abs(tau_c - tau_r)
    scale = np.abs(tau_r).max(axis=0)
    tiny = np.finfo(float).tiny
    per_joint = [
        {
            "name": names[i],
            "max_abs_error": float(err[:, i].max()),
            "max_rel_error": float(err[:, i].max() / max(scale[i], tiny)),
        }
        for i in range(nv)
    ]
    worst = int(np.argmax(err.max(axis=1)))

    terms, per_sample = {}, {"torque": err.max(axis=1)}
    for name, cand, ref in zip(TERMS, _terms(candidate, qpos, qvel, nv), _terms(reference, qpos, qvel, nv)):
        terms[name], per_sample[name] = _term_report(name, cand, ref, atol, rtol)

    torque_ok = bool(np.all(err <= atol + rtol * np.abs(tau_r)))
    return Report(
        passed=torque_ok and all(t.passed for t in terms.values()),
        max_abs_error=float(err.max()),
        max_rel_error=float(err.max() / max(float(np.abs(tau_r).max()), tiny)),
        per_joint=per_joint,
        terms=terms,
        worst_state={
            "index": worst,
            "q": qpos[worst].tolist(),
            "qd": qvel[worst].tolist(),
            "qdd": qacc[worst].tolist(),
        },
        atol=atol,
        rtol=rtol,
        samples=int(qpos.shape[0]),
        seed=seed,
        names=names,
        per_sample=per_sample,
    )


def check(
    tau_fn: Callable,
    model: mujoco.MjModel,
    samples: int = 1000,
    seed: int = 0,
    *,
    atol: float = 1e-9,
    rtol: float = 1e-9,
    states: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    label: str = "derivation",
) -> Report:
    """Check a hand derivation ``tau_fn(q, qd, qdd)`` against ``mj_inverse``.

    Args:
      tau_fn: the user's inverse dynamics, for one state or a batch (both work;
        see :func:`batched`); MuJoCo's coordinate layout.
      model: the MuJoCo model it claims to describe; it must have no armature,
        damping, stiffness, frictionloss or active equality constraints.
      samples, seed: how many seeded random states (:func:`sample_states`).
      atol, rtol: tolerance; the default ``1e-9 (1 + |tau|)`` is round-off with
        room to spare for double precision.
      states: explicit ``(qpos, qvel, qacc)`` instead of random ones.
      label: how the function is named in error messages.

    Raises:
      ModelError: the model has passive or constraint forces.
      DerivationError: ``tau_fn`` raises or returns the wrong shape.
      StateError: ``states`` has the wrong shape or NaN.
    """
    check_exact_dynamics(model)
    if states is None:
        states = sample_states(model, samples, seed)
    qpos, qvel, qacc = as_state_batch(model, *states)
    data = mujoco.MjData(model)
    reference = lambda q, qd, qdd: inverse_dynamics(model, q, qd, qdd, data=data, unconstrained=True)  # noqa: E731
    return compare(
        batched(tau_fn, model.nv, label),
        reference,
        qpos,
        qvel,
        qacc,
        atol=atol,
        rtol=rtol,
        names=dof_names(model),
        seed=seed,
    )
