"""Each logged reading's noise: stated by the user, stated by the MJCF, or estimated only where the log can tell.

Every verdict of :mod:`.check_model` and every interval of :mod:`.fit` is in units of
a reading's noise, so the noise is looked up, first to last:

1. ``option``: what the user states, ``--noise SIGNAL=VALUE`` (``noise={"qpos:*": 5e-4}`` in
   Python), in the signal's own units, the signal named as the log names it, globs allowed
   (``qpos:*``, ``sensor:imu_*``); the first pattern that matches wins.
2. ``mjcf``: the ``noise`` attribute of the model's sensor that reads the signal (a
   ``sensor:<name>`` column; for ``qpos:<joint>`` / ``qvel:<joint>`` a ``jointpos`` /
   ``jointvel`` sensor on that joint).  MuJoCo stores it and never applies it: it is the
   modeller's statement of the sensor's noise.
3. ``quantization``: readings that sit on a grid (an encoder's counts) carry at least the
   rounding error of the grid, uniform over one step: ``step / sqrt(12)``.  The step is
   found from the readings themselves.
4. ``estimated``: white noise from the log's own differences.  The k-th difference of
   white noise of deviation s has deviation ``s * sqrt(C(2k, k))`` (sqrt 6, sqrt 20,
   sqrt 70 for k = 2, 3, 4), while a smooth motion's k-th difference shrinks as
   ``(omega dt)^k``.  So the three estimates agree when the differences are noise, and
   fall with k when they are the motion (a log sampled too slowly for its motion, or a
   filtered signal).  They must agree within :data:`AGREEMENT`, or nothing is guessed.

When none applies -- a reading that shows no noise at all (a simulated log written
without any), one that repeats its value on most samples without sitting on a grid, or
one whose differences are its motion -- :func:`resolve` refuses with one line asking
for ``--noise``: a check judged against a guessed noise can pass a wrong model or fail
a right one.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping
from dataclasses import dataclass

import mujoco
import numpy as np

from .logs import Log, LogError

__all__ = ["Noise", "NoiseError", "parse_noise", "resolve", "estimate", "grid_step", "SOURCES", "AGREEMENT"]

SOURCES = ("option", "mjcf", "estimated", "quantization")
# Largest ratio between the noise estimated from 2nd, 3rd and 4th differences for them to count as one noise:
# their medians' sampling spread is about 1.6 / sqrt(N) each, so 1.3 holds at N = 200 samples with margin;
# a motion sampled at 20 Hz gives ratios of 3 and more, a filtered signal 1.5 and more.
AGREEMENT = 1.3
# Fewest samples that estimate a noise at all (the agreement test needs them).
MIN_SAMPLES = 200
# A reading whose differences vanish on more than this share of its samples repeats itself (held, not noisy).
REPEATS = 0.5
# Readings count as on a grid when every one is within this share of a step from it (round-off of the
# count times the step, written with 17 digits).
ON_GRID = 1e-6
# Fewest distinct grid levels that make a grid: fewer is a reading that barely moves (a noise-free 0/1 is no grid).
MIN_LEVELS = 3
# A reading whose smallest difference-estimate is below this share of its size shows no noise at all (a
# nanoradian on a radian: far below any sensor's resolution, a smooth motion's 4th differences at 1 kHz):
# a log written without noise.
NO_NOISE = 1e-9
_SENSOR_OF = {"qpos": mujoco.mjtSensor.mjSENS_JOINTPOS, "qvel": mujoco.mjtSensor.mjSENS_JOINTVEL}


class NoiseError(LogError):
    """A reading's noise is neither stated nor estimable from the log."""


@dataclass(frozen=True)
class Noise:
    """One reading's noise.

    Attributes:
      value: per component, (w,), the signal's units (rad, m, rad/s, the sensor's).
      source: ``option``, ``mjcf``, ``quantization`` or ``estimated`` (:data:`SOURCES`).
      detail: where the figure came from, in words (the option, the sensor, the grid, the estimate).
    """

    value: np.ndarray
    source: str
    detail: str

    def as_json(self) -> dict:
        value = [float(v) for v in self.value]
        return {"value": value[0] if len(value) == 1 else value, "source": self.source, "detail": self.detail}


def parse_noise(items) -> list[tuple[str, float]]:
    """``--noise`` values (``["qpos:*=5e-4", ...]``) or a mapping (``{"qpos:*": 5e-4}``) as ``(pattern, value)``.

    Raises:
      NoiseError: not ``SIGNAL=VALUE``, or a value that is not a positive finite number.
    """
    pairs: list[tuple[str, object]] = []
    if isinstance(items, Mapping):
        pairs = [(str(k), v) for k, v in items.items()]
    else:
        for text in items or []:
            pattern, sep, value = str(text).rpartition("=")
            if not sep or not pattern.strip():
                raise NoiseError(f"--noise {text!r}: expected SIGNAL=VALUE (qpos:elbow=5e-4, 'qpos:*=5e-4')")
            pairs.append((pattern.strip(), value.strip()))
    out: list[tuple[str, float]] = []
    for name, given in pairs:
        try:
            number = float(given)  # type: ignore[arg-type]  # a number or its text; anything else is refused
        except (TypeError, ValueError):
            raise NoiseError(f"--noise {name}={given}: {given!r} is not a number") from None
        if not (math.isfinite(number) and number > 0):
            raise NoiseError(f"--noise {name}={given}: a noise is a positive standard deviation in the "
                             "signal's units (an error of 0 noise would be infinitely many of it)")
        out.append((str(name), number))
    return out


def _mjcf_noise(model: mujoco.MjModel, key: str, kind: str, name: str, width: int) -> Noise | None:
    if kind == "sensor":
        sid = model.sensor(name).id
        noise = float(model.sensor_noise[sid])
        if noise > 0:
            return Noise(np.full(width, noise), "mjcf", f"the noise of sensor {name!r} in the model")
        return None
    if kind in _SENSOR_OF:
        jid = model.joint(name).id
        for sid in range(model.nsensor):
            if model.sensor_type[sid] == _SENSOR_OF[kind] and model.sensor_objid[sid] == jid \
                    and model.sensor_noise[sid] > 0:
                sensor = model.sensor(sid).name or f"sensor {sid}"
                return Noise(np.full(width, float(model.sensor_noise[sid])), "mjcf",
                             f"the noise of {kind == 'qpos' and 'jointpos' or 'jointvel'} sensor {sensor!r} "
                             f"on joint {name!r} in the model")
    return None


def grid_step(values: np.ndarray) -> float | None:
    """The step of the grid a reading's values sit on (an encoder's count), or None.

    Args:
      values: one reading, (N,).

    Returns:
      The step, the signal's units, when at least :data:`MIN_LEVELS` distinct values all lie on
      multiples of it (within :data:`ON_GRID` of a step) from the smallest; else None.
    """
    levels = np.unique(values)
    if levels.size < MIN_LEVELS:
        return None
    gaps = np.diff(levels)
    step = float(np.min(gaps))
    if step <= 0 or step <= 64 * np.finfo(float).eps * float(np.max(np.abs(levels))):
        return None
    # The smallest gap may be a multiple of the true step if some levels were never visited: refine it
    # by the gaps' common divisor (a handful of candidates).
    for divisor in (1, 2, 3, 4, 5):
        candidate = step / divisor
        counts = gaps / candidate
        if np.all(np.abs(counts - np.round(counts)) <= ON_GRID * np.maximum(counts, 1.0)):
            offsets = (levels - levels[0]) / candidate
            if np.all(np.abs(offsets - np.round(offsets)) <= ON_GRID * np.maximum(np.abs(offsets), 1.0)):
                return candidate
    return None


def _difference_noise(x: np.ndarray) -> tuple[np.ndarray, float]:
    """White-noise estimates from the 2nd, 3rd and 4th differences (robust: the median absolute deviation), (3,);
    and the share of second differences that are exactly 0."""
    out = []
    for k, norm in ((2, 6.0), (3, 20.0), (4, 70.0)):
        d = np.diff(x, n=k)
        mad = float(np.median(np.abs(d - np.median(d))))
        out.append(1.4826 * mad / math.sqrt(norm))
    still = float(np.mean(np.diff(x, n=2) == 0.0))
    return np.array(out), still


def estimate(key: str, values: np.ndarray) -> Noise:
    """A reading's noise from the log alone: its grid, or its differences where they are noise.

    Args:
      key: the signal (``qpos:elbow``), for messages.
      values: (N, w), the signal's units.

    Raises:
      NoiseError: the log cannot tell (one line: why, and ``--noise`` to state it).
    """
    values = np.asarray(values, float).reshape(values.shape[0], -1)
    sigmas, details, sources = [], [], []
    for c in range(values.shape[1]):
        x = values[:, c]
        label = key if values.shape[1] == 1 else f"{key}[{c}]"
        step = grid_step(x)
        if step is not None:
            floor = step / math.sqrt(12.0)
            sigma, still = _difference_noise(x)
            white = float(np.median(sigma))
            if x.size >= MIN_SAMPLES and still < REPEATS and np.max(sigma) <= AGREEMENT * np.min(sigma) \
                    and white > 2 * floor:
                sigmas.append(white)
                sources.append("estimated")
                details.append(f"readings on a grid of {step:.4g}, with white noise of {white:.3g} beyond it "
                               f"(2nd/3rd/4th differences agree)")
            else:
                sigmas.append(floor)
                sources.append("quantization")
                details.append(f"readings on a grid of {step:.4g}: its rounding error, step/sqrt(12)")
            continue
        if x.size < MIN_SAMPLES:
            raise NoiseError(f"{label}: {x.size} samples are too few to estimate its noise (at least "
                             f"{MIN_SAMPLES}); state it: --noise {key}=VALUE (the signal's units)")
        sigma, still = _difference_noise(x)
        if still > REPEATS:
            raise NoiseError(f"{label}: the reading repeats its value on {still:.0%} of its samples (held, not "
                             f"noisy, and on no grid), so its noise cannot be estimated; state it: "
                             f"--noise {key}=VALUE (the signal's units)")
        size = max(float(np.max(np.abs(x))), 1.0)
        if np.min(sigma) <= NO_NOISE * size:
            raise NoiseError(f"{label}: the readings show no noise at all (their 4th differences are "
                             f"{np.min(sigma):.2g}: a log written without noise), so the check has nothing to "
                             f"judge against; state the sensor's resolution: "
                             f"--noise {key}=VALUE (the signal's units)")
        if np.max(sigma) > AGREEMENT * np.min(sigma):
            raise NoiseError(f"{label}: its differences are its motion, not noise (noise estimated from the 2nd, "
                             f"3rd and 4th differences: {sigma[0]:.2g}, {sigma[1]:.2g}, {sigma[2]:.2g}; sampled too "
                             f"slowly for the motion, or filtered), so its noise cannot be estimated; state it: "
                             f"--noise {key}=VALUE (the signal's units)")
        white = float(np.median(sigma))
        sigmas.append(white)
        sources.append("estimated")
        details.append(f"estimated from the log: 2nd, 3rd and 4th differences agree ({sigma[0]:.3g}, "
                       f"{sigma[1]:.3g}, {sigma[2]:.3g})")
    source = "estimated" if "estimated" in sources else "quantization"
    detail = details[0] if len(set(details)) == 1 else "; ".join(details)
    return Noise(np.array(sigmas), source, detail)


def resolve(model: mujoco.MjModel, logs: list[Log], options=None) -> list[dict[str, Noise]]:
    """Every logged reading's noise, per log: ``[{signal: Noise}]`` (see the module docstring for the order).

    Args:
      model: the model the logs were read against.
      logs: the logs.
      options: ``--noise`` as :func:`parse_noise` takes it (strings or a mapping), or pairs it returned.

    Raises:
      NoiseError: a reading whose noise is neither stated nor estimable (one line: which, why, the fix);
        an option that matches no reading of any log.
    """
    pairs = options if (isinstance(options, list) and all(isinstance(p, tuple) for p in options)) \
        else parse_noise(options)
    used = set()
    out = []
    for log in logs:
        noises: dict[str, Noise] = {}
        for key, (kind, name, values, _ids) in log.signals.items():
            if kind == "ctrl":
                continue
            width = values.shape[1]
            match = next(((p, v) for p, v in pairs if fnmatch.fnmatchcase(key, p)), None)
            if match is not None:
                used.add(match[0])
                noises[key] = Noise(np.full(width, match[1]), "option", f"--noise {match[0]}={match[1]:g}")
                continue
            stated = _mjcf_noise(model, key, kind, name, width)
            if stated is not None:
                noises[key] = stated
                continue
            try:
                noises[key] = estimate(key, values)
            except NoiseError as exc:
                raise NoiseError(f"{log.path.name}: {exc}") from None
        out.append(noises)
    unused = [p for p, _ in pairs if p not in used]
    if unused:
        signals = sorted({k for log in logs for k, s in log.signals.items() if s[0] != "ctrl"})
        raise NoiseError(f"--noise {unused[0]}: matches no reading of the logs ({', '.join(signals[:8])}"
                         f"{', ...' if len(signals) > 8 else ''})")
    return out
