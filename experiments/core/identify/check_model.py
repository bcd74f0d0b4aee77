"""Does this model reproduce this log?  A statistical test that states its noise and its power.

Each window of the log (:mod:`.fit`) is replayed with the model as it is, from a start
corrected within what the log's own readings allow (a start that departs from them
further is itself a misfit), and every reading is compared with the log in units of its
noise (:mod:`.noise`: stated, from the MJCF, or estimated only where the log can tell).
The verdict is one of three:

- **fail**: a reading's RMS error exceeds ``tolerance`` times its noise (the model drifts
  visibly), or the log says one of the model's own parameters is off beyond what the noise
  explains (:mod:`.power`: the test that catches an error each short window hides);
- **inconclusive**: nothing failed, but this log could not have caught a
  :data:`.power.RELEVANT` change of any of the model's parameters, or a change ``detect``
  asks for: a log of a robot at rest, or windows so short their starts absorb a heavier
  link.  Never a pass;
- **pass**: neither, and the log could have caught what it says it could.

Every figure the verdict rests on says where it came from: each reading's noise and its
source, each parameter's detectable change, the tolerance.
"""

from __future__ import annotations

import fnmatch
import inspect
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from ..errors import ParameterError
from ..models import load_model, model_path
from ..registry import experiment
from .fit import START, WINDOW, Problem
from .logs import Log, load_log, refuse_repeats
from .noise import Noise
from .power import RELEVANT, Sensitivity, own_quantities, physical, sensitivities
from .power import explain as explained
from .self_test import SelfTest, run_self_test, validate_runs
from .spec import Quantity, parse_fit

__all__ = ["TOLERANCE", "ModelVerdict", "check_model", "replay", "judge", "judge_fitted", "register_model_check",
           "parse_tolerance", "parse_detect", "VERDICTS", "ToleranceError"]

# Largest RMS error in units of the reading's own noise: at 2 the model's own error is
# already sqrt(3) times the noise (errors add in quadrature), far beyond what a model
# that reproduces the log leaves (about 1), far below what a wrong mass or gear leaves (tens).
TOLERANCE = 2.0
VERDICTS = ("pass", "fail", "inconclusive")
# A joint whose readings never spread beyond this many noise levels never moved in the log.
STILL = 10.0
# How many of the most sensitive parameters the text names (check-model.json has them all).
SHOWN = 6
# An explanation is named when the one parameter's change removes at least this share of the misfit.
EXPLAINS = 0.5
# How the text names a noise figure's source (check-model.json: "source" and "detail").
_SOURCE = {"option": "--noise", "mjcf": "the MJCF's sensor noise", "estimated": "estimated from the log",
           "quantization": "the readings' grid"}


class ToleranceError(ParameterError):
    """A ``--tolerance`` or ``--detect`` value that is malformed or names nothing."""


@dataclass
class ModelVerdict:
    """The answer.

    Attributes:
      verdict: ``pass``, ``fail`` or ``inconclusive`` (:data:`VERDICTS`).
      text: the verdict's line, then the figures it rests on (noise, power), one per line.
      rms: RMS error per log and reading, in units of its noise (``{log: {signal: rms}}``; ``start``: the
        windows' starts' own misfit).
      worst: the worst reading: ``{"log", "signal", "rms", "limit", "max_error", "unit", "from_s"}``.
      tolerance: the bound used, in units of the noise.
      noise: each reading's noise and where it came from (``{signal: {"value", "source", "detail"}}``).
      parameters: each of the model's parameters as the log sees it (:class:`.power.Sensitivity`).
      reasons: why the verdict is not a pass, one sentence each.
      limits: each reading's RMS limit in units of its noise (``tolerance``, or wider for a ``--tolerance``
        given in the signal's units).
      self_test: the false alarms and power counted on simulated repeats of the logs
        (:class:`.self_test.SelfTest`; ``self_test=N``), or None.
    """

    verdict: str
    text: str
    rms: dict[str, dict[str, float]]
    worst: dict = field(default_factory=dict)
    tolerance: float = TOLERANCE
    noise: dict[str, dict] = field(default_factory=dict)
    parameters: list[Sensitivity] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    limits: dict[str, float] = field(default_factory=dict)
    # Per log, the readings as logged and as the model replays them ({signal: (N, w)} each), for the plots.
    traces: list[tuple[dict, dict]] = field(default_factory=list, repr=False)
    # The rates counted on simulated repeats of the logs (``self_test=N``), or None.
    self_test: SelfTest | None = None

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def diagnosis(self) -> str:
        """The verdict's line (what an assertion helper says first)."""
        return self.text.splitlines()[0]

    @property
    def explanation(self) -> list[str]:
        if self.passed:
            return []
        return list(self.reasons) + ["each window of the log was replayed from the log's own state; a mass, a "
                                     "gear, a friction or a delay of the MJCF that is not the robot's shows as a "
                                     "reading that drifts or a parameter the log rejects (crossdyn identify says "
                                     "which)"]

    @property
    def detectable(self) -> dict[str, float | None]:
        """Per parameter, the smallest change this check would have rejected, as a share of the model's value."""
        return {s.quantity.spec: s.relative for s in self.parameters}

    def as_json(self) -> dict:
        out = {"verdict": self.verdict, "passed": self.passed, "tolerance": self.tolerance, "limits": self.limits,
               "rms": self.rms, "worst": self.worst, "noise": self.noise, "detectable": self.detectable,
               "parameters": {s.quantity.spec: s.as_json() for s in self.parameters}, "reasons": self.reasons,
               "text": self.text}
        if self.self_test is not None:
            out["self_test"] = self.self_test.as_json()
        return out


def _pairs(items, what: str) -> list[tuple[str, str]]:
    if isinstance(items, Mapping):
        return [(str(k), str(v)) for k, v in items.items()]
    out = []
    for text in items:
        pattern, sep, value = str(text).rpartition("=")
        if not sep or not pattern.strip():
            raise ToleranceError(f"{what} {text!r}: expected NAME=VALUE")
        out.append((pattern.strip(), value.strip()))
    return out


def parse_tolerance(tolerance) -> tuple[float, list[tuple[str, float]]]:
    """``tolerance`` as ``(multiple of the noise, [(signal pattern, allowance in the signal's units)])``.

    Accepts a number (the multiple), a mapping ``{signal: allowance}``, or ``--tolerance`` strings:
    ``"3"`` (the multiple) and ``"qpos:*=0.002"`` (an allowance in the signal's units, for what no
    model holds: servo chatter, a cable's pull), repeatable.

    Raises:
      ToleranceError: a multiple not above 1, an allowance not positive, a malformed entry.
    """
    if tolerance is None:
        return TOLERANCE, []
    if isinstance(tolerance, (int, float)) and not isinstance(tolerance, bool):
        items: list = [str(tolerance)]
    elif isinstance(tolerance, (str, Mapping)):
        items = [tolerance] if isinstance(tolerance, str) else [f"{k}={v}" for k, v in tolerance.items()]
    else:
        items = list(tolerance)
    multiple, allowances = TOLERANCE, []
    for item in items:
        text = str(item).strip()
        if "=" not in text:
            try:
                multiple = float(text)
            except ValueError:
                raise ToleranceError(f"--tolerance {text!r}: a multiple of the noise (2) or SIGNAL=VALUE in the "
                                     "signal's units ('qpos:*=0.002')") from None
            if not (math.isfinite(multiple) and 1.0 < multiple <= 1e6):
                raise ToleranceError(f"--tolerance {text}: a multiple of the noise above 1 (a model's own log "
                                     "scores about 1)")
            continue
        for pattern, value in _pairs([text], "--tolerance"):
            try:
                number = float(value)
            except ValueError:
                raise ToleranceError(f"--tolerance {text}: {value!r} is not a number") from None
            if not (math.isfinite(number) and number > 0):
                raise ToleranceError(f"--tolerance {text}: an allowance is a positive size in the signal's units")
            allowances.append((pattern, number))
    return multiple, allowances


def parse_detect(detect, quantities: list[Quantity]) -> list[tuple[Quantity, float, bool]]:
    """``--detect`` as ``(quantity, size, relative)``: each size a change the check must be able to catch.

    ``body:*:mass=10%`` asks for 10 % of every moving body's mass; ``joint:elbow:frictionloss=0.01``
    for 0.01 in the parameter's unit.

    Raises:
      ToleranceError: a malformed entry, or a pattern that names none of the model's parameters.
    """
    out = []
    for pattern, value in _pairs(detect or [], "--detect"):
        relative = value.endswith("%")
        try:
            size = float(value[:-1]) / 100 if relative else float(value)
        except ValueError:
            raise ToleranceError(f"--detect {pattern}={value}: a size (0.01 in the parameter's unit) or a share "
                                 "(10%)") from None
        if not (math.isfinite(size) and size > 0):
            raise ToleranceError(f"--detect {pattern}={value}: a positive size")
        matched = [q for q in quantities if fnmatch.fnmatchcase(q.spec, pattern)]
        if not matched:
            raise ToleranceError(f"--detect {pattern}: names none of the model's parameters (body:<name>:mass, "
                                 "joint:<name>:damping|armature|frictionloss, actuator:<name>:gear, delay)")
        out += [(q, size, relative) for q in matched]
    return out


def check_model(mjcf, logs, *, tolerance=TOLERANCE, window: float = WINDOW, threads: int | None = None,
                noise=None, detect=None, start_only=(), explain: bool = True, self_test: int | None = None,
                seed: int = 0, progress=None, commands: str = "hold", start: str | None = None) -> ModelVerdict:
    """Does the model ``mjcf`` reproduce the robot's ``logs``?  (``crossdyn check model``.)

    Args:
      mjcf: the model: an MJCF path or a built-in model's name.
      logs: log files (``.csv`` or ``.npz``, :mod:`.logs`), or one.
      tolerance: largest RMS error in units of each reading's noise, and/or allowances in the
        signals' units (:func:`parse_tolerance`).
      window: seconds per re-anchored rollout.
      threads: rollout threads.
      noise: each reading's noise, ``{signal pattern: value}`` in its units (:mod:`.noise`).
      detect: changes the check must be able to catch, ``{parameter pattern: "10%" or size}``.
      start_only: readings (globs) used for the windows' starts, not compared.
      explain: on a failure, look for the one parameter whose change explains most of it (refits of the best
        candidates: the slow part of a failing check; False skips it).
      self_test: repeats of the logs to simulate and check (:mod:`.self_test`): the false alarms and
        power counted on them are reported beside the stated ones, and a stated rate they contradict
        makes the verdict ``inconclusive``; None (the default) runs none.
      seed: the self-test's seed.
      progress: called with the self-test's repeats finished so far, or None.
      commands: how the logs' commands act between samples: ``hold`` (each until the next, as a controller at
        the log's rate holds it) or ``linear`` (:data:`.fit.COMMANDS`).
      start: a keyframe the joints no log reads start each window from (a floating base standing where the
        log stands); without it a floating base no log reads makes a failure ``inconclusive``.

    Returns:
      The :class:`ModelVerdict` (``.verdict``, ``.passed``, ``.text``, ``.self_test``).

    Raises:
      ModelError, LogError: a model or a log that cannot be used (one line); NoiseError: a reading
        whose noise is neither stated nor estimable; ToleranceError: a bad ``tolerance`` or ``detect``.
    """
    path = model_path(mjcf)
    model = load_model(path)
    files = [logs] if isinstance(logs, (str, Path)) else list(logs)
    loaded = refuse_repeats([load_log(f, model, path.name) for f in files])
    return replay(mujoco.MjSpec.from_file(str(path)), loaded, tolerance=tolerance, window=window, threads=threads,
                  noise=noise, detect=detect, start_only=start_only, explain=explain, self_test=self_test, seed=seed,
                  progress=progress, commands=commands, start=start)


def register_model_check(name: str, mjcf, logs, *, tolerance=TOLERANCE, window: float = WINDOW, noise=None,
                         detect=None) -> None:
    """Register experiment ``name``: :func:`check_model` of ``mjcf`` against ``logs``, for ``crossdyn run``.

    In a file given to ``crossdyn run --from`` (or an installed package's experiments),
    ``register_model_check("arm-is-the-robot", "arm.xml", ["robot.csv"], noise={"qpos:*": 5e-4})`` makes the
    check part of every run, its baselines, JUnit file and HTML report: a commit that edits the MJCF
    away from the robot fails, and a log that cannot decide does not pass.  Relative paths are the
    caller's, resolved now.
    """
    caller = inspect.currentframe()
    owner = caller.f_back.f_globals.get("__name__", "__main__") if caller and caller.f_back else "__main__"
    files = [logs] if isinstance(logs, (str, Path)) else list(logs)
    mjcf_text = str(mjcf) if not Path(mjcf).exists() else str(Path(mjcf).resolve())
    files = [str(Path(f).resolve()) for f in files]
    shown = ", ".join(Path(f).name for f in files)
    multiple, _ = parse_tolerance(tolerance)

    @experiment(name, summary=f"does {Path(mjcf_text).name} reproduce the robot's log ({shown})?",
                expected=f"every reading within {multiple:g} x its log's noise (RMS), no parameter rejected, and a "
                         "log able to catch a change")
    def run(ctx) -> dict:
        verdict = check_model(mjcf_text, files, tolerance=tolerance, window=window, noise=noise, detect=detect)
        worst = verdict.worst
        return {"passed": verdict.passed, "verdict": verdict.verdict,
                "measured": f"worst {worst['signal']}: {worst['rms']:.3g} x its noise ({verdict.verdict})",
                "detail": verdict.diagnosis, "worst_rms": worst["rms"],
                "rms": {Path(log).stem: signals for log, signals in verdict.rms.items()}}

    run.__module__ = owner  # the experiment is the file's that registered it, not crossdyn's own


def replay(spec: mujoco.MjSpec, logs: list[Log], tolerance=TOLERANCE, window: float = WINDOW,
           threads: int | None = None, noise=None, detect=None, start_only=(), explain: bool = True,
           self_test: int | None = None, seed: int = 0, progress=None, commands: str = "hold",
           start: str | None = None) -> ModelVerdict:
    """Replay ``logs`` with the model of ``spec`` and judge it (:func:`check_model`'s arguments).

    Returns:
      The :class:`ModelVerdict`, with ``traces``: the readings as logged and as replayed.
    """
    if self_test is not None:
        validate_runs(self_test, seed)  # refused before any work
    pristine = spec.copy()  # the model as given: each self-test repeat checks a copy of it
    model = spec.compile()
    name = spec.modelname or "the model"
    quantities = own_quantities(model, spec, name)
    problem = Problem(spec, quantities, logs, window=window, threads=threads, noise=noise, start_only=start_only,
                      commands=commands, start=start)
    try:
        problem.check_finite(problem.x0())
        x = problem.refine_starts(problem.x0())
        stated = [dict(n) for n in problem.noise]  # before an allowance widens them (judge)
        tested = list(range(len(quantities)))
        verdict = judge(problem, x, tested, tolerance=tolerance, detect=detect, explain=explain)
        if self_test is None:
            return verdict
        for li, noises in enumerate(stated):
            problem.noise[li] = noises
        for sig, noises in ((sig, stated[li]) for li, sigs in enumerate(problem.signals) for sig in sigs):
            sig.sigma = np.asarray(noises[sig.key].value, float)
        requested = {q.spec for q, _, _ in parse_detect(detect, quantities)}
        counted = run_self_test(problem, x, verdict.parameters, pristine, name=name, runs=self_test, seed=seed,
                                window=window, tolerance=tolerance, detect=detect, start_only=start_only,
                                stated_noise=stated, power=_stated(verdict.parameters, requested), judge=judge,
                                threads=threads, progress=progress)
        return _with_self_test(verdict, counted, ", ".join(log.path.name for log in logs))
    finally:
        problem.close()


def _stated(parameters: list[Sensitivity], requested: set[str]) -> list[str]:
    """The parameters whose detectable size the verdict's text states (and those ``--detect`` asks about)."""
    ranked = sorted((s for s in parameters if math.isfinite(s.detectable)),
                    key=lambda s: (s.relative if s.relative is not None else math.inf))
    shown = [s.quantity.spec for s in ranked[:SHOWN]]
    return shown + sorted(requested - set(shown))


def _with_self_test(verdict: ModelVerdict, counted: SelfTest, names: str) -> ModelVerdict:
    """``verdict`` with the self-test's counts, ``inconclusive`` where they contradict what it rests on.

    A pass rests on the stated power and on the stated false-alarm rate; a fail on the false-alarm
    rate alone (a measured power below the stated one makes a failure no less real).
    """
    verdict.self_test = counted
    lines = verdict.text.splitlines()
    contradicted = counted.contradicted
    alarms = [c for c in contradicted if c.startswith("the self-test failed the model itself")]
    against = contradicted if verdict.verdict == "pass" else alarms if verdict.verdict == "fail" else []
    if against:
        verdict.verdict = "inconclusive"
        verdict.reasons = list(against) + verdict.reasons
        lines[0] = f"{names} cannot decide whether the model is the robot: " + "; ".join(against)
    elif contradicted and verdict.verdict == "inconclusive":
        verdict.reasons += contradicted
    verdict.text = "\n".join(lines + [counted.text()])
    return verdict


def _noise_table(problem: Problem) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for log, noises in zip(problem.logs, problem.noise, strict=True):
        for key, noise in noises.items():
            if key not in out:
                out[key] = noise.as_json()
            elif out[key]["value"] != noise.as_json()["value"]:
                out[key].setdefault("logs", {})[log.path.name] = noise.as_json()["value"]
    return out


def _unit(model: mujoco.MjModel, key: str) -> tuple[float, str]:
    kind, _, rest = key.partition(":")
    if kind in ("qpos", "qvel"):
        name = rest.split(":")[0]
        slide = model.jnt_type[model.joint(name).id] == mujoco.mjtJoint.mjJNT_SLIDE
        base = "m" if slide else "rad"
        return (1e3, f"m{base}") if kind == "qpos" else (1.0, f"{base}/s")
    return 1.0, "(sensor units)"


def _who(q: Quantity) -> str:
    return "commands: delay" if q.kind == "delay" else f"{q.kind} {q.element!r}: {q.attr}"


def _change(s: Sensitivity) -> str:
    """``body 'link2': mass 0.512 where the model has 0.4 (+28 % ± 1.2 %)``."""
    q, nominal = s.quantity, float(s.quantity.nominal[0])
    scale, unit = (1e3, "ms") if q.kind == "delay" else (1.0, q.unit)
    value = (nominal + s.estimate) * scale
    unit = f" {unit}" if unit else ""
    share = f" ({'+' if s.estimate > 0 else '-'}{_share(abs(s.estimate) / abs(nominal))} ± " \
            f"{_share(s.se / abs(nominal))})" if nominal else \
        f" (± {s.se * scale:.2g}{unit})"
    return f"{_who(q)} {value:.4g}{unit} where the model has {nominal * scale:.4g}{share}"


def _size(s: Sensitivity) -> str:
    """The smallest change this check would catch: ``3.1 %`` of the model's value, or in the unit for a value of 0."""
    if not math.isfinite(s.detectable):
        return "none (the log never moves it)"
    if s.relative is not None:
        return _share(s.relative)
    scale, unit = (1e3, "ms") if s.quantity.kind == "delay" else (1.0, s.quantity.unit)
    return f"{s.detectable * scale:.2g} {unit}".rstrip()


def _share(fraction: float) -> str:
    """A share as a percentage with two significant digits (``3.1 %``, ``0.012 %``, ``140 %``)."""
    percent = 100 * fraction
    return f"{percent:.2g} %" if percent < 10 else f"{percent:.0f} %"


def _caught(s: Sensitivity) -> str:
    return f"{_who(s.quantity)} {_size(s)}"


def _still_joints(problem: Problem) -> list[str]:
    """Read joints whose readings never leave their noise in any log."""
    moved: dict[str, bool] = {}
    for log, noises in zip(problem.logs, problem.noise, strict=True):
        for key, (kind, name, values, _ids) in log.signals.items():
            if kind != "qpos" or values.shape[1] != 1:
                continue
            spread = float(np.ptp(values[:, 0]))
            moved[name] = moved.get(name, False) or spread > STILL * float(noises[key].value[0])
    return [name for name, ok in moved.items() if not ok]


def judge(problem: Problem, x: np.ndarray, tested: list[int], *, tolerance=TOLERANCE, detect=None,
          what: str = "the model", free: list[int] | None = None, explain: bool = True) -> ModelVerdict:
    """The verdict on ``problem``'s model at ``x`` (starts refined), testing the targets ``tested``.

    Args:
      problem: the replay (its targets: the model's parameters, fitted ones held at their values).
      x: its unknowns (the windows' starts refined).
      tested: indices of the targets to test (scalar quantities of the model's own).
      tolerance: :func:`parse_tolerance`'s argument.
      detect: :func:`parse_detect`'s argument.
      what: how the text names the model ("the model", "the fitted model").
      free: targets refitted with a candidate when the verdict looks for what explains a failure (the
        parameters fitted already).
      explain: look for what explains a failure (:func:`.power.explain`).

    Returns:
      The :class:`ModelVerdict`.
    """
    multiple, allowances = parse_tolerance(tolerance)
    keys = sorted({s.key for sigs in problem.signals for s in sigs})
    for pattern, _ in allowances:
        if not any(fnmatch.fnmatchcase(k, pattern) for k in keys):
            raise ToleranceError(f"--tolerance {pattern}=...: matches no compared reading ({', '.join(keys[:8])})")
    # A reading with an allowance: its errors count against sqrt(noise^2 + allowance^2), its limit widened
    # so that the RMS error may reach sqrt((multiple * noise)^2 + allowance^2).
    limits: dict[str, float] = {}
    widened: dict[str, float] = {}  # a reading's noise with its allowance, over its stated noise
    for li, sigs in enumerate(problem.signals):
        for sig in sigs:
            allowance = next((v for p, v in allowances if fnmatch.fnmatchcase(sig.key, p)), 0.0)
            if allowance:
                noise = np.array(sig.sigma, float)
                sig.sigma = np.sqrt(noise**2 + allowance**2)
                widened[sig.key] = float(np.max(sig.sigma / noise))
                limits[sig.key] = float(np.min(np.sqrt((multiple * noise) ** 2 + allowance**2) / sig.sigma))
                stated = problem.noise[li][sig.key]
                problem.noise[li][sig.key] = Noise(sig.sigma, stated.source, f"{stated.detail}; with the "
                                                   f"--tolerance allowance of {allowance:g} in quadrature")
            else:
                limits.setdefault(sig.key, multiple)
    if allowances:  # the starts' own misfits are in units of the same noise, the allowance included
        for win in problem.windows:
            win.prior = problem.start_noise(win.log, win)
        x = problem.refine_starts(x)
    requested = parse_detect(detect, [problem.targets[k] for k in tested])
    r, rms = problem.rms(x)
    sens = sensitivities(problem, x, tested, limits, r)
    still = _still_joints(problem)
    read = {name for log in problem.logs for kind, name, values, _ in log.signals.values()
            if kind == "qpos" and values.shape[1] == 1}
    if read and set(still) >= read and not any(s.kind == "sensor" for sigs in problem.signals for s in sigs):
        # A robot that never moved beyond its readings' noise: the replay's sensitivities come from starts fitted
        # to the noise, not from any motion, and claim changes the log cannot see (an arm hanging still "could
        # catch link2 mass 310 %"; changed by ten times that it still passed, 40 of 40).  None is claimed.
        for s in sens:
            s.detectable = s.known_starts = math.inf
    noise_table = _noise_table(problem)
    model = problem.model

    # The readings against their limits.
    worst_key, worst_log, worst_excess = None, None, -math.inf
    for li, log in enumerate(problem.logs):
        for key, value in rms[str(log.path)].items():
            excess = value / (multiple if key == START else limits[key])
            if excess > worst_excess:
                worst_key, worst_log, worst_excess = key, li, excess
    assert worst_key is not None and worst_log is not None
    worst_rms = rms[str(problem.logs[worst_log].path)][worst_key]
    worst_limit = multiple if worst_key == START else limits[worst_key]
    worst = {"log": str(problem.logs[worst_log].path), "signal": worst_key, "rms": worst_rms, "limit": worst_limit}
    rejected = sorted((s for s in sens if s.rejected), key=lambda s: -abs(s.z))
    lines, reasons = [], []
    names = ", ".join(log.path.name for log in problem.logs)
    if worst_excess > 1.0:
        verdict = "fail"
        lines.append(_drift(problem, x, worst_log, worst_key, worst_rms, what, worst))
        reasons.append(lines[0])
    elif rejected:
        verdict = "fail"
        top = rejected[0]
        # (a rejected estimate is a physical value: power.Sensitivity.rejected)
        lines.append(f"{what} does not reproduce {names}: the log says {_change(top)}, {abs(top.z):.1f} standard "
                     f"errors off (every reading within {max(worst_excess * worst_limit, 0):.2g} x its noise)")
        reasons.append(lines[0])
    else:
        verdict = "pass"
    if verdict == "fail" and problem.unpinned:
        # A base started where the robot was not fails any model: not a verdict on this one.
        verdict = "inconclusive"
        base = ", ".join(repr(name) for name in problem.unpinned)
        where = f"keyframe {problem.start!r}'s pose" if problem.start else "the model's default pose"
        advice = "log the base's pose" if problem.start else \
            "log the base's pose, or give --start KEYFRAME (a pose standing where the log does)"
        reasons.insert(0, f"the log does not read where the floating base ({base}) is (no pose; no IMU on it with a "
                          f"contact at every window's start), so windows start it at {where}, at rest, which a robot "
                          f"moving on its feet is not: a failure here cannot be told from a base started wrong; "
                          f"{advice}")
        lines[0] = f"{names} cannot decide whether {what} is the robot: {reasons[0]} (it fails as: {lines[0]})"
    if verdict == "fail":
        found = explained(problem, x, tested, free) if explain else None
        if found is not None and found.share >= EXPLAINS and _possible(found.quantity, found.value) and \
                not math.isclose(found.value, float(found.quantity.nominal[0]), rel_tol=1e-6, abs_tol=1e-12):
            q = found.quantity
            scale, unit = (1e3, " ms") if q.kind == "delay" else (1.0, f" {q.unit}" if q.unit else "")
            edge = any(math.isclose(found.value, float(b[0]), rel_tol=1e-6, abs_tol=1e-12) for b in (q.low, q.high))
            lines.append(f"  {_who(q)} {found.value * scale:.4g}{unit} where the model has "
                         f"{float(q.nominal[0]) * scale:.4g}{unit} would explain {_share(found.share)} of it"
                         + (" (at the edge of the range searched: the cause may be none of the model's own "
                            "parameters)" if edge else ""))
            reasons.append(lines[-1].strip())
        # Each a one-parameter estimate (the others held at the model's): shown where it is physical and, changed
        # alone, removes most of the misfit; otherwise it is a symptom of something else, not a finding.
        for s in [s for s in rejected if _possible(s.quantity, float(s.quantity.nominal[0]) + s.estimate)
                  and s.explained >= EXPLAINS][:3]:
            lines.append(f"  the log rejects {_change(s)} ({abs(s.z):.1f} standard errors; changed alone, the others "
                         f"held, it removes {_share(s.explained)} of the misfit)")
    # Power: what this log could have caught.
    relevant = [s for s in sens if s.relative is not None]
    caught = [s for s in relevant if (s.relative or 0.0) <= RELEVANT]
    if verdict == "pass":
        for q, size, relative in requested:
            s = next(s for s in sens if s.quantity is q)
            can = s.relative if relative else s.detectable
            if can is None or not can <= size:
                shown = f"{size:.0%}" if relative else f"{size:g} {q.unit}".rstrip()
                reasons.append(f"--detect: a {shown} change of {_who(q)} would not fail this check (the smallest "
                               f"it catches: {_size(s)})")
        if relevant and not caught:
            reasons += _why_blind(problem, relevant)
        elif not relevant:
            reasons.append(f"the model has no parameter with a value to judge a {RELEVANT:.0%} change of")
        if reasons:
            verdict = "inconclusive"
            lines.insert(0, f"{names} cannot decide whether {what} is the robot: " + "; ".join(reasons))
        else:
            within = max(rms[str(log.path)][k] for log in problem.logs for k in rms[str(log.path)] if k != START)
            if widened:  # said in the stated noise's units: an allowance is what lets it pass, not a small error
                in_stated = max(rms[str(log.path)][k] * widened.get(k, 1.0) for log in problem.logs
                                for k in rms[str(log.path)] if k != START)
                lines.insert(0, f"{what} reproduces {names} within the --tolerance allowance: every reading within "
                                f"{in_stated:.3g} x its stated noise (RMS), inside what the allowance admits, and no "
                                "parameter off by more than noise and allowance explain")
            else:
                lines.insert(0, f"{what} reproduces {names}: every reading within {within:.2g} x its noise (RMS; at "
                                f"most {multiple:g}) and no parameter off by more than the noise explains")
    lines.append("  noise: " + "; ".join(f"{k} {_figure(model, k, v['value'])} ({_SOURCE[v['source']]})"
                                          for k, v in noise_table.items()))
    ranked = sorted((s for s in sens if math.isfinite(s.detectable)),
                    key=lambda s: (s.relative if s.relative is not None else math.inf))
    if ranked:
        lines.append("  this log could catch a change of: " + ", ".join(_caught(s) for s in ranked[:SHOWN])
                     + (f" (and {len(ranked) - SHOWN} more in check-model.json)" if len(ranked) > SHOWN else ""))
    blind = _untested(sens)
    if blind:
        lines.append(f"  not tested, the log never moves them: {blind}")
    traces = list(zip(({s.key: s.measured for s in sigs} for sigs in problem.signals), problem.predictions(x),
                      strict=True))
    return ModelVerdict(verdict, "\n".join(lines), rms, worst, multiple, noise_table, sens, reasons, limits, traces)


def _possible(q: Quantity, value: float) -> bool:
    """Whether ``value`` is one the parameter ``q`` can have (:func:`.power.physical`)."""
    return physical(q.attr, value)


def _untested(sens: list[Sensitivity]) -> str:
    """The parameters no change of which would fail the check, grouped by element: ``body 'turntable' (mass)``."""
    groups: dict[str, list[str]] = {}
    for s in sens:
        if not math.isfinite(s.detectable):
            q = s.quantity
            who = "the commands" if q.kind == "delay" else f"{q.kind} {q.element!r}"
            groups.setdefault(who, []).append(q.attr)
    return ", ".join(f"{who} ({', '.join(attrs)})" for who, attrs in groups.items())


def _figure(model: mujoco.MjModel, key: str, value) -> str:
    scale, unit = _unit(model, key)
    values = value if isinstance(value, list) else [value]
    return ", ".join(f"{v * scale:.2g}" for v in values) + f" {unit}"


def _drift(problem: Problem, x: np.ndarray, li: int, key: str, rms: float, what: str, worst: dict) -> str:
    """The sentence for a reading (or the starts) beyond its limit: how far, and from when."""
    log = problem.logs[li]
    if key == START:
        worst.update(max_error=None, unit="", from_s=0.0)
        return (f"{what} does not reproduce {log.path.name}: each window's start must depart from the log's own "
                f"readings by {rms:.3g} x their noise (RMS) for the model to follow the log")
    errors = problem.errors(x)[li][key]
    sigma = next(s.sigma for s in problem.signals[li] if s.key == key)
    scale, unit = _unit(problem.model, key)
    worst_error = float(np.max(np.abs(errors * sigma))) * scale
    off = [log.time[w.start] for w in problem.windows
           if w.log == li and np.sqrt(np.mean(errors[w.start : w.stop] ** 2)) > worst["limit"]]
    start = off[0] if off else log.time[0]
    worst.update(max_error=worst_error, unit=unit, from_s=float(start - log.time[0]))
    return (f"{key}: {what} does not reproduce {log.path.name}: off by up to {worst_error:.3g} {unit} "
            f"(RMS {rms:.3g} x the log's noise of {float(np.max(sigma)) * scale:.2g} {unit}) "
            f"from t = {start - log.time[0]:.2f} s")


def _why_blind(problem: Problem, relevant: list[Sensitivity]) -> list[str]:
    """Why no parameter's :data:`.power.RELEVANT` change would fail the check: joints at rest, starts that absorb."""
    out = [f"the log never moves joint {name!r}" for name in _still_joints(problem)]
    best = min(relevant, key=lambda s: s.relative if s.relative is not None else math.inf)
    assert best.relative is not None
    nominal = abs(float(best.quantity.nominal[0]))
    if best.known_starts / nominal <= RELEVANT < best.relative:
        window = problem.windows[0]
        length = problem.logs[window.log].time[window.stop - 1] - problem.logs[window.log].time[window.start]
        out.append(f"windows of {length:.3g} s let the starts absorb a {RELEVANT:.0%} change of "
                   f"{_who(best.quantity)} (it could catch {_share(best.relative)}; with the starts known, "
                   f"{_share(best.known_starts / nominal)}): use longer --window")
    elif not out:
        out.append(f"no parameter's {RELEVANT:.0%} change would fail this check (the most visible, "
                   f"{_who(best.quantity)}, only at {_share(best.relative)}): the log moves the robot too little")
    return out


def judge_fitted(mjcf: Path, result, logs: list[Log], *, noise=None, start_only=(), window: float = WINDOW,
                 tolerance=TOLERANCE, threads: int | None = None, commands: str = "hold",
                 start: str | None = None) -> ModelVerdict:
    """The fitted model judged against ``logs`` as ``check model`` judges a model (``crossdyn identify``'s last step).

    The model of ``mjcf`` with every identified value of ``result`` (:class:`.fit.FitResult`; the
    others at the model's) replays the logs; every parameter of the model that was not fitted is
    tested as ``check model`` tests it.  A fitted model that still misses the log beyond its noise
    means something outside ``--fit`` is wrong: the verdict names the unfitted parameter whose
    change explains most of what is left.

    Returns:
      The :class:`ModelVerdict` of the fitted model ("the fitted model" in its text).
    """
    model = load_model(mjcf)
    spec = mujoco.MjSpec.from_file(str(mjcf))
    fitted = parse_fit([t.spec for t in result.targets], model, spec, mjcf.name)
    for q, v, ok in zip(fitted, result.value, result.identified, strict=True):
        if ok:
            q.nominal = np.asarray(v, float).copy()
    own = own_quantities(model, spec, mjcf.name, skip={t.spec for t in result.targets})
    problem = Problem(spec, fitted + own, logs, window=window, threads=threads, noise=noise, start_only=start_only,
                      commands=commands, start=start)
    try:
        x = problem.refine_starts(problem.x0())
        return judge(problem, x, list(range(len(fitted), len(fitted) + len(own))), tolerance=tolerance,
                     what="the fitted model", free=[k for k, ok in enumerate(result.identified) if ok])
    finally:
        problem.close()
