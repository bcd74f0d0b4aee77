"""What a log can tell about a model: the replay's sensitivity to the model's own parameters.

A check that a model reproduces a log is a statistical test, and a test that cannot
fail says nothing.  So for every parameter of the model itself -- each body's mass, each
hinge and slide joint's damping, armature and friction, each actuator's gear and a delay
of the commands (:func:`own_quantities`) -- the replay's sensitivity is computed at the
model's values (one batched rollout per parameter), with each window's start allowed to
take up what it can at the price its own misfit sets (:meth:`.fit.Problem.without_starts`).
From that column ``j`` (the normalized residual per unit of the parameter) and the
residual ``r`` left by the replay:

- the log's own estimate of the parameter's error, ``delta = -j.r / j.j``, and its
  standard error: ``1 / |j|`` when the residuals are the stated noise (checked:
  :func:`.fit.residual_checks`), else the windows' spread (each window one draw, the
  errors within it free to run together; Student's t with one degree of freedom per
  window less one);
- a test: the model's value is rejected when ``|delta| / se`` exceeds the critical value of
  a family-wise error rate :data:`ALPHA` over all parameters tested (Bonferroni), one-sided
  for a parameter the model has at 0 and that cannot be negative (a friction, a delay);
- what the log could have caught: the smallest change the test (or the readings' RMS
  limit) would have rejected, ``critical * se``, as a share of the model's value.

A wrong model thus fails even when each reading stays within its noise (a heavier link
whose error each short window hides), and a log that could not have caught a sizable
change of anything is called inconclusive rather than passed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from .fit import START_RCOND, Problem, residual_checks
from .spec import Quantity, parse_fit

__all__ = ["Sensitivity", "Explanation", "physical", "own_quantities", "sensitivities", "explain", "refit",
           "critical", "ALPHA", "RELEVANT"]

# Family-wise false-alarm rate of the parameter tests: one check in a thousand of a right model fails.
ALPHA = 1e-3
# The change a useful log must be able to catch: 20 % of a parameter's value.
RELEVANT = 0.2
# Attributes whose model value 0 is also their lower bound: a one-sided test.
_NON_NEGATIVE = {"damping", "armature", "frictionloss", "delay"}


def physical(attr: str, value: float) -> bool:
    """Whether ``value`` is one a parameter ``attr`` can have: a mass above 0; an inertia, damping, armature,
    friction or delay at or above 0 (a gear, a bias, a centre of mass: any)."""
    if attr == "mass":
        return value > 0
    if attr in _NON_NEGATIVE or attr == "inertia":
        return value >= 0
    return True


@dataclass
class Sensitivity:
    """One parameter as this log sees it.

    Attributes:
      quantity: the parameter (``body:link2:mass``), its model value in ``quantity.nominal``.
      estimate: the log's estimate of its change from the model's value, its unit.
      se: that estimate's standard error, its unit (inf: the log never moves it).
      z: ``estimate / se``.
      critical: the test's critical value for this parameter.
      detectable: the smallest change this check would have rejected, its unit (inf: none).
      known_starts: the same were every window's start known exactly (inf: none), its unit;
        much smaller than ``detectable`` when the windows' starts absorb the change.
      explained: the share of the replay's misfit beyond the noise that the estimated change removes (0..1).
    """

    quantity: Quantity
    estimate: float
    se: float
    z: float
    critical: float
    detectable: float
    known_starts: float
    explained: float

    @property
    def one_sided(self) -> bool:
        return self.quantity.attr in _NON_NEGATIVE and float(self.quantity.nominal[0]) == 0.0

    @property
    def rejected(self) -> bool:
        """The log says the model's value is wrong (at the family-wise rate :data:`ALPHA`).

        Not where the estimate itself is a value no robot has (a damping, armature, friction or delay below 0,
        a mass at or below 0): that is the estimator's bias (a cart-pole balancing at rest had its hinge's
        damping of 2e-6 'rejected' at -0.73, 4.4 standard errors, in 28 of 40 logs of the model itself), not
        a finding; what is wrong then shows in the readings' RMS, which is tested on its own."""
        if self.one_sided:
            return self.z > self.critical
        if not physical(self.quantity.attr, float(self.quantity.nominal[0]) + self.estimate):
            return False
        return abs(self.z) > self.critical

    @property
    def relative(self) -> float | None:
        """:attr:`detectable` as a share of the model's value (None for a value of 0)."""
        nominal = abs(float(self.quantity.nominal[0]))
        return self.detectable / nominal if nominal > 0 else None

    def as_json(self) -> dict:
        return {"model": float(self.quantity.nominal[0]), "unit": self.quantity.unit, "estimate": self.estimate,
                "se": self.se, "z": self.z, "critical": self.critical, "rejected": self.rejected,
                "detectable": self.detectable, "detectable_fraction": self.relative,
                "detectable_known_starts": self.known_starts, "explained": self.explained}


def own_quantities(model: mujoco.MjModel, spec: mujoco.MjSpec, model_name: str,
                   skip: set[str] | None = None) -> list[Quantity]:
    """The model's own parameters a check can speak of, as scalar quantities (``spec`` gets explicit inertials).

    Every body that moves (not welded to the world) with a mass, every hinge and slide
    joint's damping, armature and frictionloss, every actuator's gear (not 0) and, with
    actuators, the delay of the commands; less ``skip`` (``--fit`` names, fitted already).
    """
    skip = skip or set()
    names = []
    for b in range(1, model.nbody):
        if model.body_weldid[b] != 0 and model.body_mass[b] > 0 and model.body(b).name:
            names.append(f"body:{model.body(b).name}:mass")
    hinge_or_slide = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
    for j in range(model.njnt):
        if int(model.jnt_type[j]) in hinge_or_slide and model.joint(j).name:
            names += [f"joint:{model.joint(j).name}:{a}" for a in ("damping", "armature", "frictionloss")]
    for a in range(model.nu):
        if model.actuator_gear[a, 0] != 0 and model.actuator(a).name:
            names.append(f"actuator:{model.actuator(a).name}:gear")
    if model.nu:
        names.append("delay")
    names = [n for n in names if n not in skip]
    return parse_fit(names, model, spec, model_name) if names else []


def critical(tests: int, one_sided: bool, df: float | None = None) -> float:
    """The critical value of one of ``tests`` tests at family-wise rate :data:`ALPHA` (Student's t at ``df``)."""
    from scipy import stats  # late: SciPy's stats costs every command's start-up ~0.5 s (``crossdyn list`` included)

    tail = ALPHA / max(tests, 1) / (1 if one_sided else 2)
    return float(stats.t.isf(tail, df) if df is not None else stats.norm.isf(tail))


def sensitivities(problem: Problem, x: np.ndarray, tested: list[int], limits: dict[str, float],
                  r: np.ndarray | None = None) -> list[Sensitivity]:
    """Each tested target's :class:`Sensitivity` at ``x`` (starts refined), from one rollout per target.

    Args:
      problem: the replay, its targets including the tested ones.
      x: its unknowns, the windows' starts refined (:meth:`.fit.Problem.refine_starts`).
      tested: indices (into ``problem.targets``, each of size 1) of the parameters to test.
      limits: each reading's largest RMS error, in units of its noise (``{signal: limit}``): a change
        that pushes a reading past it also fails the check.
      r: the residual at ``x``, if computed.

    Returns:
      One :class:`Sensitivity` per tested target, in order.
    """
    r = problem.predict(x) if r is None else r
    offsets = np.cumsum([0] + [t.size for t in problem.targets])
    h = problem.steps_of(x)
    starts = problem.start_columns(x, r)
    columns = np.zeros((r.size, len(tested)))
    for c, k in enumerate(tested):
        i = int(offsets[k])
        xi = x.copy()
        xi[i] += h[i]
        columns[:, c] = (problem.predict(xi) - r) / h[i]
    reduced = problem.without_starts(columns, starts)
    rows = problem.window_rows()
    windows = len(rows)
    dof = max(r.size - problem.na * windows, 1)
    excess = max(float(r @ r) - dof, 1e-12)
    signal_rows = _signal_rows(problem)
    level = {key: float(np.mean(r[idx] ** 2)) for key, idx in signal_rows.items()}  # each reading's mean square
    # Residuals that are the stated noise (each reading's RMS about 1, neighbouring errors independent) make
    # 1/|j| the standard error; otherwise each window counts as one draw (the errors within it may run
    # together), with Student's t at W - 1 degrees of freedom, never narrower than the noise's.
    white = residual_checks(problem, r)["supported"]
    scale = math.sqrt(float(r @ r) / dof)
    out = []
    for c, k in enumerate(tested):
        target = problem.targets[k]
        j, full = reduced[:, c], columns[:, c]
        jj = float(j @ j)
        one_sided = target.attr in _NON_NEGATIVE and float(target.nominal[0]) == 0.0
        if not (jj > 0 and math.isfinite(jj)):
            out.append(Sensitivity(target, 0.0, math.inf, 0.0, critical(len(tested), one_sided), math.inf, math.inf,
                                   0.0))
            continue
        estimate = -float(j @ r) / jj
        se, df = 1.0 / math.sqrt(jj), None
        if not white:
            se *= max(scale, 1.0)
            if windows >= 2:
                # The sandwich with the residual left once the estimated change is made: under a wrong model
                # the change itself is not counted as spread.
                left = r + j * estimate
                scores = np.array([j[a:b] @ left[a:b] for a, b in rows])
                se = max(se, math.sqrt(float(scores @ scores) * windows / (windows - 1)) / jj)
                df = windows - 1
        crit = critical(len(tested), one_sided, df)
        # The change that takes a reading's RMS from where the log leaves it to its limit: from about 1 when the
        # noise is the reading's whole error, from far below when an allowance widens it (0.5 rad over 0.5 mrad of
        # noise left the RMS at 0.001, and a sum that assumed 1 claimed a 0.38 % change of a mass would fail).
        by_rms = min((math.sqrt(max(limits.get(key, 2.0) ** 2 - level[key], 0.0) * idx.size)
                      / max(float(np.linalg.norm(j[idx])), 1e-300) for key, idx in signal_rows.items()),
                     default=math.inf)
        full_norm = float(np.linalg.norm(full))
        known = crit / full_norm if full_norm > 0 else math.inf
        out.append(Sensitivity(target, estimate, se, estimate / se, crit, min(crit * se, by_rms), known,
                               min(float(j @ r) ** 2 / jj / excess, 1.0)))
    return out


def _signal_rows(problem: Problem) -> dict[str, np.ndarray]:
    """Row indices of each reading in the residual (all logs together), by signal key."""
    out: dict[str, list[np.ndarray]] = {}
    for win, (a, _b) in zip(problem.windows, problem.window_rows(), strict=True):
        n = win.stop - win.start
        for sig in problem.signals[win.log]:
            size = n * sig.sigma.size
            out.setdefault(sig.key, []).append(np.arange(a, a + size))
            a += size
    return {k: np.concatenate(v) for k, v in out.items()}


@dataclass
class Explanation:
    """The one parameter whose change explains most of a replay's misfit.

    Attributes:
      quantity: the parameter.
      value: the value that explains it, its unit (the others refitted with it).
      share: the share of the misfit beyond the noise that it removes (0..1).
    """

    quantity: Quantity
    value: float
    share: float


# Gauss-Newton steps of the refit that sizes the best candidates, and how many candidates get one.
REFIT_STEPS = 10
# The refit stops once a step lowers the misfit by less than this share of it.
REFIT_TOL = 1e-3
REFIT_CANDIDATES = 2
# A second candidate is refitted only when its first-order share is at least this share of the first's.
RIVAL = 0.5


def explain(problem: Problem, x: np.ndarray, candidates: list[int], free: list[int] | None = None
            ) -> Explanation | None:
    """Which one of ``candidates`` (target indices), changed alone, explains most of the replay's misfit at ``x``?

    The candidates are ranked by how much of the misfit each removes to first order with the
    ``free`` targets (the parameters fitted already) and the windows' starts refitted with it
    (its column's part that neither explains), then the best :data:`REFIT_CANDIDATES` are refitted
    with them by damped Gauss-Newton (:func:`refit`), for the changes a first-order step cannot
    reach (a gear of 0.7 where the model has 1): the one that leaves the least misfit wins.

    Returns:
      The :class:`Explanation`, or None when no candidate removes any of the misfit.
    """
    free = list(free or [])
    offsets = np.cumsum([0] + [t.size for t in problem.targets])
    r0 = problem.predict(x)
    cost0 = float(r0 @ r0)
    dof = max(r0.size - problem.na * len(problem.windows) - len(free), 1)
    excess = cost0 - dof
    if excess <= 0 or not candidates:
        return None
    h = problem.steps_of(x)
    index = [int(offsets[k]) for k in free + candidates]
    columns = np.column_stack([(problem.predict(_moved(x, i, h[i])) - r0) / h[i] for i in index])
    starts = problem.start_columns(x, r0)
    reduced = problem.without_starts(columns, starts)
    rest = problem.without_starts(r0[:, None], starts)[:, 0]
    held, tried = reduced[:, : len(free)], reduced[:, len(free) :]
    if free:  # each candidate's part that the fitted parameters could not take up
        basis = np.linalg.qr(held)[0]
        tried = tried - basis @ (basis.T @ tried)
        rest = rest - basis @ (basis.T @ rest)
    norms = np.einsum("ij,ij->j", tried, tried)
    gains = np.where(norms > 0, (tried.T @ rest) ** 2 / np.where(norms > 0, norms, 1.0), 0.0)
    outcome = None
    for c in np.argsort(-gains)[:REFIT_CANDIDATES]:
        if gains[c] <= 0 or gains[c] < RIVAL * gains.max():
            continue
        k = candidates[int(c)]
        xi, cost = refit(problem, x, free + [k])
        share = min(max((cost0 - cost) / excess, 0.0), 1.0)
        if outcome is None or share > outcome.share:
            outcome = Explanation(problem.targets[k], float(xi[int(offsets[k])]), share)
    return outcome


def refit(problem: Problem, x: np.ndarray, free: list[int], steps: int = REFIT_STEPS) -> tuple[np.ndarray, float]:
    """``x`` with the ``free`` targets (scalar) and every window's start refitted by damped Gauss-Newton.

    Each step solves for the targets with the starts eliminated (:meth:`.fit.Problem.without_starts`),
    then for each window's start given the targets' step: ``len(free) + 2 d + 1`` batched rollouts.

    Returns:
      ``(x, cost)``: the refitted unknowns and their misfit (the squared norm of the residual).
    """
    offsets = np.cumsum([0] + [t.size for t in problem.targets])
    index = [int(offsets[k]) for k in free]
    low, high = problem.bounds()
    rows = problem.window_rows()
    r = problem.predict(x)
    cost, damping = float(r @ r), 1e-6
    for _ in range(steps):
        h = problem.steps_of(x)
        columns = np.column_stack([(problem.predict(_moved(x, i, h[i])) - r) / h[i] for i in index])
        starts = problem.start_columns(x, r)
        reduced = problem.without_starts(columns, starts)
        rest = problem.without_starts(r[:, None], starts)[:, 0]
        normal = reduced.T @ reduced
        step = -np.linalg.solve(normal + damping * np.diag(np.diag(normal) + 1e-300), reduced.T @ rest)
        trial = x.copy()
        trial[index] = np.clip(x[index] + step, low[index], high[index])
        moved = r + columns @ (trial[index] - x[index])
        for w, (a, b) in enumerate(rows):  # each window's start, given the targets' step
            idx = problem.p + w * problem.na + np.arange(problem.na)
            shift = np.linalg.lstsq(starts[a:b], -moved[a:b], rcond=START_RCOND)[0]
            trial[idx] = np.clip(x[idx] + shift, low[idx], high[idx])
        r_trial = problem.predict(trial)
        cost_trial = float(r_trial @ r_trial) if np.all(np.isfinite(r_trial)) else np.inf
        if cost_trial < cost:
            converged = cost - cost_trial < REFIT_TOL * cost
            x, r, cost, damping = trial, r_trial, cost_trial, damping / 10
            if converged:
                break
        else:
            damping *= 100
    return x, cost


def _moved(x: np.ndarray, i: int, h: float) -> np.ndarray:
    out = x.copy()
    out[i] += h
    return out
