"""Does this model reproduce this log?  The model as it is, replayed against a robot's log.

Each window of the log (:mod:`.fit`) is rolled out from the log's own state, the
start corrected to its window (the state read from a log is noisy), and every
reading is compared with the log in units of its own noise (estimated from the
log itself).  The model passes when every reading's RMS error is within
``tolerance`` times that noise: a model checked against a log it produced itself,
encoder noise and all, scores about 1.  When one does not, the verdict names the
reading, how far the model is off, and from when.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mujoco
import numpy as np

from crossdyn import renamed
from crossdyn.experiments.core.identify.fit import WINDOW, Problem
from crossdyn.experiments.core.identify.logs import Log

__all__ = ["TOLERANCE", "ModelVerdict", "check_model", "replay", "model_matches_log"]

# Largest RMS error in units of the reading's own noise: at 2 the model's own error is
# already sqrt(3) times the noise (errors add in quadrature), far beyond what a model
# that reproduces the log leaves (about 1), far below what a wrong mass or gear leaves (tens).
TOLERANCE = 2.0


@dataclass
class ModelVerdict:
    """The answer.

    Attributes:
      passed: every reading within ``tolerance`` times its noise.
      text: one line per log (and the failing reading's details).
      rms: RMS error per log and reading, in units of its noise (``{log: {signal: rms}}``).
      worst: the worst reading: ``{"log", "signal", "rms", "max_error", "unit", "from_s"}``.
      tolerance: the bound used.
    """

    passed: bool
    text: str
    rms: dict[str, dict[str, float]]
    worst: dict = field(default_factory=dict)
    tolerance: float = TOLERANCE

    @property
    def diagnosis(self) -> str:
        """The verdict's first line (what an assertion helper says first)."""
        return self.text.splitlines()[-1] if not self.passed else self.text.splitlines()[0]

    @property
    def explanation(self) -> list[str]:
        if self.passed:
            return []
        return ["each window of the log was replayed from the log's own state; the reading named drifted from "
                "the log beyond its noise: a mass, a gear, a friction or a delay of the MJCF is not the robot's "
                "(crossdyn identify says which)"]

    def as_json(self) -> dict:
        return {"passed": self.passed, "tolerance": self.tolerance, "rms": self.rms, "worst": self.worst,
                "text": self.text}


def _unit(problem: Problem, key: str) -> tuple[float, str]:
    kind, name = key.split(":", 1)
    m = problem.model
    if kind in ("qpos", "qvel"):
        slide = m.jnt_type[m.joint(name).id] == mujoco.mjtJoint.mjJNT_SLIDE
        base = "m" if slide else "rad"
        return (1e3, f"m{base}") if kind == "qpos" else (1.0, f"{base}/s")
    return 1.0, "(sensor units)"


def check_model(mjcf, logs, *, tolerance: float = TOLERANCE, window: float = WINDOW,
                threads: int | None = None) -> ModelVerdict:
    """Does the model ``mjcf`` reproduce the robot's ``logs``?  (``crossdyn check model``.)

    Args:
      mjcf: the model: an MJCF path or a built-in model's name.
      logs: log files (``.csv`` or ``.npz``, :mod:`.logs`), or one.
      tolerance: largest RMS error, in units of each reading's own noise.
      window: seconds per re-anchored rollout.
      threads: rollout threads.

    Returns:
      The :class:`ModelVerdict` (``.passed``, ``.text``).

    Raises:
      ModelError, LogError: a model or a log that cannot be used (one line).
    """
    from pathlib import Path

    from crossdyn.experiments.core.identify.logs import load_log
    from crossdyn.experiments.core.models import load_model, model_path

    path = model_path(mjcf)
    model = load_model(path)
    files = [logs] if isinstance(logs, (str, Path)) else list(logs)
    loaded = [load_log(f, model, path.name) for f in files]
    return replay(mujoco.MjSpec.from_file(str(path)), loaded, tolerance=tolerance, window=window, threads=threads)


def model_matches_log(name: str, mjcf, logs, *, tolerance: float = TOLERANCE, window: float = WINDOW) -> None:
    """Register experiment ``name``: :func:`check_model` of ``mjcf`` against ``logs``, for ``crossdyn run``.

    In a file given to ``crossdyn run --from`` (or an installed package's experiments),
    ``model_matches_log("arm-is-the-robot", "arm.xml", ["robot.csv"])`` makes the check
    part of every run, its baselines, JUnit file and HTML report: a commit that edits
    the MJCF away from the robot fails.  Relative paths are the caller's, resolved now.
    """
    from pathlib import Path

    from crossdyn.experiments.core.registry import experiment

    files = [logs] if isinstance(logs, (str, Path)) else list(logs)
    mjcf_text = str(mjcf) if not Path(mjcf).exists() else str(Path(mjcf).resolve())
    files = [str(Path(f).resolve()) for f in files]
    shown = ", ".join(Path(f).name for f in files)

    @experiment(name, summary=f"does {Path(mjcf_text).name} reproduce the robot's log ({shown})?",
                expected=f"every reading within {tolerance:g} x its log's noise (RMS)")
    def run(ctx) -> dict:
        verdict = check_model(mjcf_text, files, tolerance=tolerance, window=window)
        worst = verdict.worst
        return {"passed": verdict.passed, "measured": f"worst {worst['signal']}: {worst['rms']:.3g} x its noise",
                "detail": verdict.diagnosis, "worst_rms": worst["rms"],
                "rms": {Path(log).stem: signals for log, signals in verdict.rms.items()}}


def replay(spec: mujoco.MjSpec, logs: list[Log], tolerance: float = TOLERANCE, window: float = WINDOW,
           threads: int | None = None) -> ModelVerdict:
    """Replay ``logs`` with the model of ``spec`` and judge each reading against its log's noise.

    Args:
      spec: the model.
      logs: logs read against it (:func:`.logs.load_log`).
      tolerance: largest RMS error, in units of each reading's own noise.
      window: seconds per re-anchored rollout.
      threads: rollout threads.

    Returns:
      The :class:`ModelVerdict`.
    """
    problem = Problem(spec, [], logs, window=window, threads=threads)
    try:
        problem.check_finite(problem.x0())
        x = problem.refine_starts(problem.x0())
        errors = problem.errors(x)
        windows = [(w.log, w.start, w.stop) for w in problem.windows]
    finally:
        problem.close()
    rms = {str(log.path): {key: float(np.sqrt(np.mean(e**2))) for key, e in errs.items()}
           for log, errs in zip(logs, errors, strict=True)}
    li, key = max(((li, key) for li, errs in enumerate(errors) for key in errs),
                  key=lambda lk: rms[str(logs[lk[0]].path)][lk[1]])
    worst_rms = rms[str(logs[li].path)][key]
    passed = worst_rms <= tolerance
    name = logs[li].path.name
    if passed:
        text = "\n".join(f"the model reproduces {log.path.name}: every reading within "
                         f"{max(rms[str(log.path)].values()):.2g} x its own noise (RMS; at most {tolerance:g})"
                         for log in logs)
        return ModelVerdict(True, text, rms, {"log": str(logs[li].path), "signal": key, "rms": worst_rms}, tolerance)
    err = errors[li][key]
    sigma = next(s.sigma for s in problem.signals[li] if s.key == key)
    scale, unit = _unit(problem, key)
    worst_error = float(np.max(np.abs(err * sigma))) * scale
    off = [logs[li].time[a] for (wl, a, b) in windows if wl == li and np.sqrt(np.mean(err[a:b] ** 2)) > tolerance]
    start = off[0] if off else logs[li].time[0]
    text = (f"{key}: the model does not reproduce {name}: off by up to {worst_error:.3g} {unit} "
            f"(RMS {worst_rms:.3g} x the log's noise of {float(np.max(sigma)) * scale:.2g} {unit}) "
            f"from t = {start - logs[li].time[0]:.2f} s")
    worst = {"log": str(logs[li].path), "signal": key, "rms": worst_rms, "max_error": worst_error, "unit": unit,
             "from_s": float(start - logs[li].time[0])}
    return ModelVerdict(False, text, rms, worst, tolerance)


__getattr__ = renamed(__name__, {"Verdict": "ModelVerdict"}, globals())
