"""An Optuna sampler for two objectives: Bayesian optimisation of epsilon-constraint problems.

A study minimizes two objectives ``(f0, f1)``, for the gain search settling time
and effort, with Optuna constraints (``<= 0`` feasible).  After ``n_startup``
random trials, trial ``k`` solves one epsilon-constraint problem (Haimes, Lasdon
and Wismer 1971; Miettinen, *Nonlinear Multiobjective Optimization*, 1999, sec. 3.2):

    minimize f0(x)  subject to  f1(x) <= eps_k  and the trial constraints,
    eps_k = fractions[k mod len(fractions)] * f1(reference trial),

so the trials trace the Pareto front below the reference's ``f1`` (for the
search, the defaults' effort) at a few levels, the fastest end included.  Each
problem is a step of constrained Bayesian optimisation (Gardner et al., "Bayesian
optimization with inequality constraints", ICML 2014): the next ``x`` maximizes

    a(x) = EI(x) * P[f1(x) <= eps_k],
    EI(x) = s(x) (g Phi(g) + phi(g)),  g = (y* - m(x)) / s(x),

where ``m, s`` are the posterior mean and deviation of a Gaussian process of
``y = log f0`` (Jones, Schonlau and Welch 1998), ``y*`` the lowest ``y`` of a trial
feasible for ``eps_k``, and the probability comes from a second process, of
``log f1``.  With no such trial yet, ``a(x)`` is the probability alone.  Both
processes are scikit-learn's, with a Matern 5/2 kernel of one length scale per
parameter plus white noise, fit by maximum marginal likelihood, on the unit cube
of the float parameters (log-scaled ones in log).

``a`` is maximized over candidates drawn from the trial's own generator:
``a`` is maximized over ``n_candidates`` points from the trial's own generator:
uniform, half replaced, once a trial is feasible, by Gaussian steps (0.05 of each
range) from the three best feasible trials.  Trials asked before earlier ones are
told see those at their posterior mean (the "kriging believer" of Ginsbourger et
al. 2010), so a batch spreads.  TPE models each parameter apart, which misses
designs that fill a thin corner of the space against a constraint
(``benchmarks/search_vs_lhs.py`` compares them); Optuna's own Gaussian-process
sampler needs PyTorch.

The sampler is deterministic: the same trials told in the same order give the
same suggestions (the generator is seeded by ``(seed, trial number)``, the
processes' optimizer by a fixed state, BLAS runs on one thread).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import cast

import numpy as np
from optuna.distributions import BaseDistribution, FloatDistribution
from optuna.samplers import BaseSampler, RandomSampler
from optuna.search_space import intersection_search_space
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState
from scipy.stats import norm
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel
from threadpoolctl import threadpool_limits

__all__ = ["EpsilonConstraintSampler"]

LOCAL_STEP = 0.05  # Gaussian step of the local candidates, as a fraction of each parameter's range
LOCAL_CENTRES = 3  # the best feasible trials the local candidates step from


class EpsilonConstraintSampler(BaseSampler):
    """Minimize ``f0`` subject to ``f1 <= eps_k`` and the constraints, ``eps_k`` cycling (module docstring).

    Args:
      seed: seeds the start-up sampler and each trial's candidates.
      fractions: the levels ``eps_k / f1(reference)``, cycled over by trial number.
      reference: the trial whose ``f1`` the levels scale (it must be feasible;
        otherwise, and until it is told, ``eps = inf``: the constraints alone).
      failed: ``(f0, f1)`` scores of failed trials: trials at or above the ``f1``
        score are left out of the ``f1`` process (they carry no effort to model);
        ``f0`` scores stay in the ``f0`` process, as the bad outcomes they are.
      n_startup: complete trials before the processes take over (random until then).
      n_candidates: candidates per trial the acquisition is maximized over.
      levels: absolute ``eps_k`` cycled over instead of ``fractions`` (``(inf,)``: no
        level; then a single-objective study works too: constrained expected
        improvement of ``f0`` among trials meeting the trial constraints).
      log_objective: model ``log f0`` (positive objectives, such as times); False:
        ``f0`` itself (any sign).
    """

    def __init__(self, *, seed: int = 0, fractions: Sequence[float] = (1.0,), reference: int = 0,
                 failed: tuple[float, float] = (math.inf, math.inf), n_startup: int = 10,
                 n_candidates: int = 4096, levels: Sequence[float] | None = None,
                 log_objective: bool = True) -> None:
        if not fractions or any(not 0 < f <= 1 for f in fractions):
            raise ValueError(f"fractions must lie in (0, 1], got {fractions}")
        self._seed = int(seed)
        self._fractions = tuple(float(f) for f in fractions)
        self._levels = None if levels is None else tuple(float(v) for v in levels)
        self._log = log_objective
        self._reference = reference
        self._failed = failed
        self._n_startup = n_startup
        self._n_candidates = n_candidates
        self._random = RandomSampler(seed=seed)
        self._fitted: tuple = (None, None, None)  # (data key, process of log f0, process of log f1 or None)

    def reseed_rng(self) -> None:
        self._random.reseed_rng()

    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        return {name: d for name, d in intersection_search_space(complete).items()
                if isinstance(d, FloatDistribution) and d.step is None}

    def sample_relative(self, study: Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, float]:
        if not search_space:
            return {}
        trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.RUNNING))
        done = [t for t in trials if t.state == TrialState.COMPLETE and search_space.keys() <= t.params.keys()]
        if len(done) < self._n_startup:
            return {}
        pending = [t for t in trials if t.state == TrialState.RUNNING and t.number != trial.number
                   and search_space.keys() <= t.params.keys()]
        # Optuna passes back infer_relative_search_space's result: float ranges without a step only.
        space = cast(dict[str, FloatDistribution], search_space)
        names = sorted(space)
        x = np.array([_unit(t.params, space, names) for t in done])
        f0 = np.array([t.values[0] for t in done])
        f1 = np.array([t.values[1] if len(t.values) > 1 else 0.0 for t in done])
        eps = self._epsilon(done, trial.number)
        feasible = np.array([_feasible(t) for t in done]) & (f1 <= eps)
        y = np.log(np.maximum(f0, 1e-3)) if self._log else f0
        with threadpool_limits(limits=1, user_api="blas"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the fits' convergence notes: the kernel bounds are wide on purpose
            key = (study.study_name, tuple(t.number for t in done), math.isfinite(eps))
            if self._fitted[0] != key:  # a batch's later trials reuse its first trial's fits (the same data)
                modelled = f1 < self._failed[1]
                gp1 = _fit(x[modelled], np.log(f1[modelled])) if math.isfinite(eps) and modelled.sum() >= 2 else None
                self._fitted = (key, _fit(x, y), gp1)
            _, gp0, gp1 = self._fitted
            if pending:  # kriging believer: the batch's earlier trials at their posterior mean
                xp = np.array([_unit(t.params, space, names) for t in pending])
                gp0 = _fit(np.vstack([x, xp]), np.concatenate([y, gp0.predict(xp)]), kernel=gp0.kernel_)
            rng = np.random.default_rng([self._seed, trial.number])
            candidates = self._candidates(rng, x, y, feasible)
            p = np.ones(len(candidates))
            if gp1 is not None:
                m1, s1 = gp1.predict(candidates, return_std=True)
                p = norm.cdf((math.log(eps) - m1) / np.maximum(s1, 1e-9))
            if feasible.any():
                m0, s0 = gp0.predict(candidates, return_std=True)
                s0 = np.maximum(s0, 1e-9)
                g = (y[feasible].min() - m0) / s0
                p = p * s0 * (g * norm.cdf(g) + norm.pdf(g))
        best = candidates[int(np.argmax(p))]
        return _params(best, space, names)

    def sample_independent(self, study: Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution):
        return self._random.sample_independent(study, trial, param_name, param_distribution)

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        self._random.before_trial(study, trial)

    def after_trial(self, study: Study, trial: FrozenTrial, state: TrialState, values) -> None:
        self._random.after_trial(study, trial, state, values)

    def _epsilon(self, done: list[FrozenTrial], number: int) -> float:
        """``eps_k`` of trial ``number``: its fraction of the reference's ``f1`` (inf: no feasible reference),
        or the absolute ``levels`` in turn."""
        if self._levels is not None:
            return self._levels[number % len(self._levels)]
        ref = next((t for t in done if t.number == self._reference), None)
        if ref is None or not _feasible(ref) or not ref.values[1] < self._failed[1]:
            return math.inf
        return self._fractions[number % len(self._fractions)] * ref.values[1]

    def _candidates(self, rng: np.random.Generator, x: np.ndarray, y: np.ndarray, feasible: np.ndarray) -> np.ndarray:
        """Uniform candidates in the unit cube, half replaced by steps from the best feasible trials if any."""
        n_local = self._n_candidates // 2 if feasible.any() else 0
        uniform = rng.random((self._n_candidates - n_local, x.shape[1]))
        if not n_local:
            return uniform
        centres = x[feasible][np.argsort(y[feasible], kind="stable")[:LOCAL_CENTRES]]
        steps = centres[rng.integers(0, len(centres), n_local)] + rng.normal(0.0, LOCAL_STEP, (n_local, x.shape[1]))
        return np.vstack([uniform, np.clip(steps, 0.0, 1.0)])


def _feasible(trial: FrozenTrial) -> bool:
    return all(v <= 0 for v in trial.constraints.values())


def _fit(x: np.ndarray, y: np.ndarray, kernel=None):
    """A Gaussian process of ``y(x)``, x in the unit cube: Matern 5/2 (one length scale per axis) + noise.

    Given ``kernel`` (a fitted one), its hyperparameters are kept (no refit).
    """
    if kernel is not None:
        return GaussianProcessRegressor(kernel, normalize_y=True, optimizer=None).fit(x, y)
    kernel = (ConstantKernel(1.0, (1e-3, 1e3)) * Matern([0.3] * x.shape[1], (1e-2, 1e1), nu=2.5)
              + WhiteKernel(1e-3, (1e-6, 1e-1)))
    return GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=2, random_state=0).fit(x, y)


def _unit(params: dict, space: dict[str, FloatDistribution], names: list[str]) -> list[float]:
    """Parameters mapped into the unit cube (log-scaled ones in log)."""
    out = []
    for name in names:
        d, v = space[name], params[name]
        lo, hi = (math.log(d.low), math.log(d.high)) if d.log else (d.low, d.high)
        out.append(((math.log(v) if d.log else v) - lo) / (hi - lo) if hi > lo else 0.5)
    return out


def _params(u: np.ndarray, space: dict[str, FloatDistribution], names: list[str]) -> dict[str, float]:
    """The inverse of :func:`_unit`, clipped into each range."""
    out = {}
    for ui, name in zip(u, names, strict=False):
        d = space[name]
        lo, hi = (math.log(d.low), math.log(d.high)) if d.log else (d.low, d.high)
        v = lo + float(ui) * (hi - lo)
        out[name] = min(max(math.exp(v) if d.log else v, d.low), d.high)
    return out
