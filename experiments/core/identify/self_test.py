"""How often ``check model`` is wrong on logs like the user's: its false alarms and its power, counted.

A verdict states two rates: a right model fails at most one time in a thousand
(:data:`.power.ALPHA`, family-wise), and a change of each parameter by its stated
detectable size fails the check about half the time (the size is ``critical * se``: where
the estimate's expected z reaches the critical value).  Both rest on assumptions a log may
break: white noise of the stated size, windows whose starts the log pins, commands the
replay applies as the robot did.  The self-test does not assume them; it counts:

1. the *truth* is the model itself, started from the check's own refined estimate of the
   robot's state and driven by the log's own commands, applied as the replay applies them
   (so the self-test measures the statistics of the check, not whether the command model is
   right): one continuous simulation per log when it stays within :data:`DEPART` noise levels
   of the check's replay of the log, else re-anchored at every window's start as the replay
   is (a balancing robot whose commands, replayed without its feedback, let it fall);
2. each repeat adds the stated noise to the truth's readings at the log's own sample times
   (white, of each reading's stated deviation; rounded to the grid where the noise is an
   encoder's quantization), with its own seed;
3. each repeat is checked exactly as the log was: the same windows, noise figures,
   tolerance, ``--detect`` and ``--start-only``; a failure of the model itself is a false
   alarm;
4. the same with the truth changed, one parameter at a time, by the size the check says it
   can detect: a failure is a catch.

Each count comes with its 95 % Clopper-Pearson interval.  A stated rate outside its
interval is contradicted: :mod:`.check_model` then turns its verdict into ``inconclusive``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import mujoco
import numpy as np

from ..errors import CrossdynError, ParameterError
from ..limits import REPEATS_MAX
from ..validate import seed as validate_seed
from .fit import FitResult, Problem, fit
from .logs import Log
from .noise import Noise
from .power import ALPHA, Sensitivity, own_quantities
from .spec import parse_fit

__all__ = ["Rate", "SelfTest", "Coverage", "run_self_test", "run_coverage_test", "validate_runs", "RUNS", "FIT_RUNS",
           "POWER_RUNS", "STATED_POWER", "DEPART", "binomial_interval"]

# Repeats of the right model by default (``--self-test`` alone): 0 false alarms in 100 bound the rate below 3.6 %.
RUNS = 100
# Refits of simulated repeats by default for identify's self-test (``identify --self-test`` alone): each is a
# whole fit (seconds for a small arm); 40 contradict a stated 95 % coverage that is in truth 80 % or less.
FIT_RUNS = 40
# Repeats per changed parameter: at least this many (never more than the null's), enough to contradict a stated
# 50 % power that is in truth 25 % or less (5 of 20: interval 8.7 % .. 49 %).
POWER_RUNS = 20
# The power a check states at a parameter's detectable size: the estimate's expected z reaches the critical value.
STATED_POWER = 0.5
# A continuous simulation of the model that stays within this many noise levels of the check's replay of the log
# is the truth; beyond it (a balancing robot falls without its feedback) the truth is re-anchored at every window.
DEPART = 3.0
# Confidence of the intervals on the counted rates.
LEVEL = 0.95


def validate_runs(runs, seed) -> tuple[int, int]:
    """``(runs, seed)`` checked before any work: a whole number of repeats in 1 .. :data:`REPEATS_MAX`, a seed.

    Raises:
      ParameterError: naming ``--self-test`` or ``--seed``.
    """
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or not 1 <= runs <= REPEATS_MAX:
        raise ParameterError(f"--self-test {runs!r}: a whole number of repeats in 1 .. {REPEATS_MAX}")
    return int(runs), validate_seed(seed, "--seed")


def binomial_interval(k: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Clopper-Pearson interval of a rate from ``k`` events in ``n`` runs (exact, never narrower than ``level``)."""
    from scipy import stats  # late: SciPy's stats costs every command's start-up ~0.5 s

    tail = (1 - level) / 2
    low = 0.0 if k == 0 else float(stats.beta.ppf(tail, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.ppf(1 - tail, k + 1, n - k))
    return low, high


@dataclass
class Rate:
    """A rate counted over repeats, beside the rate the check states.

    Attributes:
      count: runs in which the event happened (a failure of the right model; a catch of a change).
      runs: repeats.
      stated: the rate the check states (a share, 0..1).
    """

    count: int
    runs: int
    stated: float

    @property
    def measured(self) -> float:
        return self.count / self.runs if self.runs else math.nan

    @property
    def interval(self) -> tuple[float, float]:
        return binomial_interval(self.count, self.runs)

    @property
    def contradicts(self) -> bool:
        """The interval excludes the stated rate."""
        low, high = self.interval
        return not low <= self.stated <= high

    def shown(self) -> str:
        low, high = self.interval
        return f"{self.count} of {self.runs} (95 % interval {_percent(low)} .. {_percent(high)})"


@dataclass
class Power:
    """One parameter changed by its stated detectable size: how often the check caught it.

    Attributes:
      spec: the parameter (``body:link2:mass``).
      change: the change made to the truth, in the parameter's unit.
      unit: that unit.
      relative: the change as a share of the model's value (None for a value of 0).
      rate: catches (failed checks) over repeats, stated :data:`STATED_POWER`.
    """

    spec: str
    change: float
    unit: str
    relative: float | None
    rate: Rate

    def as_json(self) -> dict:
        low, high = self.rate.interval
        return {"change": self.change, "unit": self.unit, "change_fraction": self.relative, "caught": self.rate.count,
                "runs": self.rate.runs, "stated": self.rate.stated, "interval": [low, high],
                "contradicted": self.rate.contradicts}


@dataclass
class SelfTest:
    """The check's rates counted on simulated repeats of the user's own logs.

    Attributes:
      false_alarms: failures of the model itself (stated :data:`.power.ALPHA`); a repeat whose check
        could not run counts as one.
      power: per parameter tested, its :class:`Power`.
      seed: the seed of the repeats' noise (repeat ``k`` draws from ``SeedSequence([seed, k])``).
      truth: how the truth was simulated: ``continuous`` or ``re-anchored at every window``.
      errors: the first few repeats whose check could not run, one sentence each.
      verdicts: the null repeats' verdicts, in order (``pass``, ``fail``, ``inconclusive``, ``error``).
    """

    false_alarms: Rate
    power: list[Power] = field(default_factory=list)
    seed: int = 0
    truth: str = "continuous"
    errors: list[str] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)

    @property
    def contradicted(self) -> list[str]:
        """Each stated rate the counts contradict, one sentence each (empty: none)."""
        out = []
        if self.false_alarms.contradicts and self.false_alarms.measured > self.false_alarms.stated:
            out.append(f"the self-test failed the model itself on {self.false_alarms.shown()} simulated repeats of "
                       f"this log, against the stated {_percent(self.false_alarms.stated)}: a failure here is as "
                       "likely a false alarm as a wrong model")
        blind = [p for p in self.power if p.rate.contradicts and p.rate.measured < p.rate.stated]
        if blind:
            low, high = blind[0].rate.interval
            out.append("the self-test caught the changes this log is said to catch half the time far less often: "
                       + ", ".join(f"{p.spec} {_size(p)} in {p.rate.count} of {p.rate.runs}" for p in blind)
                       + f" (95 % interval of the first: {_percent(low)} .. {_percent(high)}): this log is blinder "
                       "than stated")
        return out

    def text(self) -> str:
        runs = self.false_alarms.runs
        line = (f"  self-test ({runs} simulated repeats of this log, seed {self.seed}, truth {self.truth}): false "
                f"alarms {self.false_alarms.shown()}, stated {_percent(self.false_alarms.stated)}")
        if self.power:
            line += "; a change of the stated size caught: " + ", ".join(
                f"{p.spec} {_size(p)} in {p.rate.count} of {p.rate.runs}" for p in self.power)
        return line

    def as_json(self) -> dict:
        low, high = self.false_alarms.interval
        return {"false_alarms": self.false_alarms.count, "runs": self.false_alarms.runs,
                "stated": self.false_alarms.stated, "interval": [low, high],
                "contradicted": bool(self.contradicted), "seed": self.seed, "truth": self.truth,
                "verdicts": {v: self.verdicts.count(v) for v in ("pass", "fail", "inconclusive", "error")},
                "errors": self.errors, "power": {p.spec: p.as_json() for p in self.power}}


def _percent(share: float) -> str:
    percent = 100 * share
    return f"{percent:.2g} %" if percent < 10 else f"{percent:.0f} %"


def _size(p: Power) -> str:
    return _percent(p.relative) if p.relative is not None else f"{p.change:.2g} {p.unit}".rstrip()


def _quantities(problem: Problem, spec: mujoco.MjSpec, name: str, fitted: bool) -> list:
    """``problem``'s targets anew on ``spec``: the model's own parameters (a check) or the fitted ones (identify)."""
    if fitted:
        return parse_fit([t.spec for t in problem.targets], spec.compile(), spec, name)
    return own_quantities(spec.compile(), spec, name)


def _truth_problem(problem: Problem, pristine: mujoco.MjSpec, name: str, window: float, fitted: bool = False
                   ) -> Problem:
    """A replay of ``problem``'s logs whose every reading is predicted (none start-only), in windows of ``window`` s."""
    spec = pristine.copy()
    return Problem(spec, _quantities(problem, spec, name, fitted), problem.logs, window=window, threads=1,
                   noise=[dict(n) for n in problem.noise], start_only=(), commands=problem.commands,
                   start=problem.start)


def _map_starts(source: Problem, x: np.ndarray, target: Problem) -> np.ndarray:
    """``target``'s unknowns: ``source``'s targets' values, and each window's start correction from the ``source``
    window that starts at the same sample (every window of ``target`` starts where one of ``source`` does)."""
    out = target.x0()
    out[: target.p] = x[: source.p]
    starts = {(w.log, w.start): i for i, w in enumerate(source.windows)}
    for i, win in enumerate(target.windows):
        j = starts[(win.log, win.start)]
        out[target.p + i * target.na : target.p + (i + 1) * target.na] = \
            x[source.p + j * source.na : source.p + (j + 1) * source.na]
    return out


def _truth(problem: Problem, x: np.ndarray, pristine: mujoco.MjSpec, name: str, window: float,
           fitted: bool = False):
    """The truth's simulator: ``(problem, x, mode)``: a replay whose predictions are the truth's readings."""
    longest = max(log.duration for log in problem.logs)
    continuous = _truth_problem(problem, pristine, name, 2 * longest + 1.0, fitted)
    xc = _map_starts(problem, x, continuous)
    replayed = problem.predictions(x)
    with np.errstate(invalid="ignore", over="ignore"):
        simulated = continuous.predictions(xc)
    departure = 0.0
    for li, sigs in enumerate(problem.signals):
        for sig in sigs:
            gap = np.abs(simulated[li][sig.key] - replayed[li][sig.key]) / sig.sigma
            departure = max(departure, float(np.max(gap)) if np.all(np.isfinite(gap)) else math.inf)
    if departure <= DEPART:
        return continuous, xc, "continuous"
    continuous.close()
    windowed = _truth_problem(problem, pristine, name, window, fitted)
    return windowed, _map_starts(problem, x, windowed), "re-anchored at every window"


def _noisy(log: Log, truth: dict[str, np.ndarray], noise: dict[str, Noise], rng: np.random.Generator,
           label: str) -> Log:
    """A repeat of ``log``: its commands, the truth's readings with the stated noise, at the log's sample times."""
    signals, columns = {}, {}
    for key, (kind, name, values, ids) in log.signals.items():
        if kind != "ctrl":
            clean = truth[key]
            sigma = np.broadcast_to(np.asarray(noise[key].value, float), clean.shape[1:])
            if noise[key].source == "quantization":  # an encoder: the grid's rounding is the noise
                step = sigma * math.sqrt(12.0)
                offset = rng.uniform(0.0, 1.0, size=step.shape) * step  # where the grid sits: unknown, drawn
                values = np.round((clean - offset) / step) * step + offset
            else:
                values = clean + rng.standard_normal(clean.shape) * sigma
        signals[key] = (kind, name, values, ids)
        if values.shape[1] == 1:
            columns[key] = values[:, 0]
        else:
            columns |= {f"{key}:{k}": values[:, k] for k in range(values.shape[1])}
    path = log.path.with_name(f"{log.path.stem}~{label}{log.path.suffix}")
    return Log(path=path, time=log.time, columns=columns, signals=signals)


def run_self_test(problem: Problem, x: np.ndarray, sensitivities: list[Sensitivity], pristine: mujoco.MjSpec, *,
                  name: str, runs: int = RUNS, seed: int = 0, window: float, tolerance, detect, start_only,
                  stated_noise: list[dict[str, Noise]], power: list[str], judge: Callable,
                  threads: int | None = None, progress: Callable[[int], None] | None = None) -> SelfTest:
    """Count the check's false alarms and power on simulated repeats of ``problem``'s logs.

    Args:
      problem: the check's replay of the user's logs (its noise as stated, before any allowance).
      x: its unknowns, the windows' starts refined.
      sensitivities: the check's :class:`.power.Sensitivity` per parameter (their detectable sizes).
      pristine: the user's model, unchanged (each repeat checks a copy).
      name: how the model is named (its file name).
      runs: repeats of the right model; each changed parameter gets ``min(runs, max(POWER_RUNS, runs // 5))``.
      seed: the repeats' seed.
      window, tolerance, detect, start_only: the check's own options, applied to every repeat.
      stated_noise: per log, each reading's noise as the check stated it (the repeats' noise).
      power: the parameters (``body:link2:mass``) whose stated detectable size is tested.
      judge: the check's verdict on a replay, ``judge(problem, x, tested, tolerance=, detect=, explain=)``
        (:func:`.check_model.judge`, which imports this module).
      threads: repeats checked at once (default: the machine's cores, at most 4).
      progress: called with the number of repeats finished so far (a progress bar's update), or None.

    Returns:
      The :class:`SelfTest`.

    Raises:
      ParameterError: ``runs`` not a whole number in 1 .. :data:`REPEATS_MAX`, or a bad ``seed``.
    """
    runs, seed = validate_runs(runs, seed)
    truth, xt, mode = _truth(problem, x, pristine, name, window)
    by_spec = {s.quantity.spec: s for s in sensitivities}
    offsets = np.cumsum([0] + [t.size for t in truth.targets])
    index = {t.spec: int(offsets[k]) for k, t in enumerate(truth.targets)}
    plans: list[tuple[str, float]] = [("", 0.0)]  # the model itself, then each parameter changed
    for spec in power:
        s = by_spec[spec]
        if spec in index and math.isfinite(s.detectable) and s.detectable > 0:
            plans.append((spec, s.detectable))
    try:
        clean = []
        for spec, change in plans:
            xs = xt.copy()
            if spec:
                xs[index[spec]] += change
            with np.errstate(invalid="ignore", over="ignore"):
                clean.append(truth.predictions(xs))
    finally:
        truth.close()
    power_runs = min(runs, max(POWER_RUNS, runs // 5))
    jobs = [(0, k) for k in range(runs)] + [(p, k) for p in range(1, len(plans)) for k in range(power_runs)]

    def check(job: tuple[int, int]) -> tuple[str, str]:
        plan, k = job
        rng = np.random.default_rng(np.random.SeedSequence([seed, plan, k]))
        if not all(np.all(np.isfinite(v)) for per_log in clean[plan] for v in per_log.values()):
            return "error", "the model's simulation of the log diverges (not finite)"
        logs = [_noisy(log, clean[plan][li], stated_noise[li], rng, f"self-test-{plan}-{k}")
                for li, log in enumerate(problem.logs)]
        copy = pristine.copy()
        try:
            quantities = own_quantities(copy.compile(), copy, name)
            replica = Problem(copy, quantities, logs, window=window, threads=1,
                              noise=[dict(n) for n in stated_noise], start_only=start_only,
                              commands=problem.commands, start=problem.start)
            try:
                xr = replica.refine_starts(replica.x0())
                verdict = judge(replica, xr, list(range(len(quantities))), tolerance=tolerance, detect=detect,
                                explain=False)
            finally:
                replica.close()
        except (CrossdynError, ValueError, np.linalg.LinAlgError) as exc:
            return "error", " ".join(str(exc).split())
        return verdict.verdict, ""

    workers = threads if threads is not None else min(os.cpu_count() or 1, 4)
    results: list[tuple[str, str]] = []
    with ThreadPoolExecutor(max_workers=max(int(workers), 1)) as pool:
        for outcome in pool.map(check, jobs):
            results.append(outcome)
            if progress is not None:
                progress(len(results))
    null = [v for v, _ in results[:runs]]
    errors = [f"repeat {k}: {why}" for k, (v, why) in enumerate(results[:runs]) if v == "error"][:3]
    alarms = Rate(sum(v in ("fail", "error") for v in null), runs, ALPHA)
    tested = []
    for p, (changed, change) in enumerate(plans[1:], start=1):
        chunk = results[runs + (p - 1) * power_runs : runs + p * power_runs]
        s = by_spec[changed]
        tested.append(Power(changed, change, s.quantity.unit, s.relative,
                            Rate(sum(v == "fail" for v, _ in chunk), power_runs, STATED_POWER)))
    return SelfTest(alarms, tested, seed, mode, errors, null)


@dataclass
class Coverage:
    """identify's intervals counted on refits of simulated repeats of the logs from the fitted model.

    Attributes:
      rates: per fitted parameter (its ``--fit`` name), the repeats whose 95 % interval held the value
        the repeats were simulated with, over the repeats that identified it (stated 0.95).
      unidentified: per parameter, the repeats that called it "not identified".
      seed: the repeats' seed; truth: how the truth was simulated (:class:`SelfTest`'s).
      errors: the first few repeats whose fit could not run.
    """

    rates: dict[str, Rate]
    unidentified: dict[str, int]
    seed: int = 0
    truth: str = "continuous"
    errors: list[str] = field(default_factory=list)

    @property
    def contradicted(self) -> list[str]:
        """Each parameter whose counted coverage excludes 95 %, one sentence each."""
        return [f"{spec}'s intervals held the value the repeats were simulated with in {rate.shown()}, not 95 %"
                for spec, rate in self.rates.items() if rate.contradicts and rate.measured < rate.stated]

    def text(self) -> str:
        runs = max((r.runs + self.unidentified[s] for s, r in self.rates.items()), default=0)
        shown = ", ".join(f"{spec} {rate.count} of {rate.runs}" + (f" ({self.unidentified[spec]} not identified)"
                                                                 if self.unidentified[spec] else "")
                          for spec, rate in self.rates.items())
        return (f"  self-test ({runs} refits of simulated repeats of the logs from the fitted model, seed {self.seed}, "
                f"truth {self.truth}): intervals that held the truth: {shown}; stated 95 %")

    def as_json(self) -> dict:
        return {"seed": self.seed, "truth": self.truth, "stated": 0.95, "errors": self.errors,
                "contradicted": bool(self.contradicted),
                "coverage": {spec: {"covered": r.count, "runs": r.runs, "interval": list(r.interval),
                                    "not_identified": self.unidentified[spec], "contradicted": r.contradicts
                                    and r.measured < r.stated} for spec, r in self.rates.items()}}


def run_coverage_test(problem: Problem, result: FitResult, pristine: mujoco.MjSpec, *, name: str,
                      runs: int = FIT_RUNS, seed: int = 0, window: float, start_only,
                      stated_noise: list[dict[str, Noise]], threads: int | None = None,
                      progress: Callable[[int], None] | None = None) -> Coverage:
    """Count how often identify's 95 % intervals hold the truth, on refits of simulated repeats of the logs.

    The truth is the model with the fitted values (:attr:`.fit.FitResult.x`: every target, identified or
    not, at its fitted value, and the windows' starts where the fit put them), simulated as
    :func:`run_self_test` simulates; each repeat gets the stated noise and is fitted exactly as the
    logs were; an interval holds the truth when the repeat identified the parameter and its interval
    (:meth:`.fit.FitResult.bounds`) contains the value simulated.

    Raises:
      ParameterError: ``runs`` not a whole number in 1 .. :data:`REPEATS_MAX`, or a bad ``seed``.
    """
    runs, seed = validate_runs(runs, seed)
    truth, xt, mode = _truth(problem, np.asarray(result.x, float), pristine, name, window, fitted=True)
    try:
        with np.errstate(invalid="ignore", over="ignore"):
            clean = truth.predictions(xt)
    finally:
        truth.close()
    values = problem.theta(np.asarray(result.x, float))

    def refit(k: int) -> list[str] | str:
        rng = np.random.default_rng(np.random.SeedSequence([seed, k]))
        if not all(np.all(np.isfinite(v)) for per_log in clean for v in per_log.values()):
            return "the fitted model's simulation of the log diverges (not finite)"
        logs = [_noisy(log, clean[li], stated_noise[li], rng, f"self-test-{k}") for li, log in enumerate(problem.logs)]
        copy = pristine.copy()
        try:
            replica = Problem(copy, _quantities(problem, copy, name, True), logs, window=window, threads=1,
                              noise=[dict(n) for n in stated_noise], start_only=start_only, commands=problem.commands,
                              start=problem.start)
            try:
                refitted = fit(replica)
            finally:
                replica.close()
        except (CrossdynError, ValueError, np.linalg.LinAlgError) as exc:
            return " ".join(str(exc).split())
        out = []
        for j, value in enumerate(values):
            if not refitted.identified[j]:
                out.append("unidentified")
                continue
            low, high = refitted.bounds(j)
            out.append("covered" if np.all((low <= value) & (value <= high)) else "missed")
        return out

    workers = threads if threads is not None else min(os.cpu_count() or 1, 4)
    outcomes: list[list[str] | str] = []
    with ThreadPoolExecutor(max_workers=max(int(workers), 1)) as pool:
        for outcome in pool.map(refit, range(runs)):
            outcomes.append(outcome)
            if progress is not None:
                progress(len(outcomes))
    done = [o for o in outcomes if isinstance(o, list)]
    errors = [f"repeat {k}: {o}" for k, o in enumerate(outcomes) if isinstance(o, str)][:3]
    rates, unidentified = {}, {}
    for j, target in enumerate(problem.targets):
        column = [o[j] for o in done]
        unidentified[target.spec] = column.count("unidentified")
        # a repeat whose fit could not run counts as a miss: an interval that was never given held nothing
        judged = len(column) - unidentified[target.spec] + (len(outcomes) - len(done))
        rates[target.spec] = Rate(column.count("covered"), judged, 0.95)
    return Coverage(rates, unidentified, seed, mode, errors)
