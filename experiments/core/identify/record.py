"""Logs made in simulation, as a robot's logger writes them: every reading at the instant it claims.

A model checked against a log it produced itself must pass; a model that differs from
the one that made the log must fail.  :func:`record` makes such logs.  Each sample, at
the state of that instant:

1. the logger reads every logged joint's position and velocity and every logged sensor,
   adding the noise stated for it (``noise``, else the MJCF sensor's ``noise``
   attribute, else none);
2. the controller turns those readings into a command (or the next row of a commands
   file is taken, linearly interpolated, as ``crossdyn excite`` writes them);
3. the motors act on the commands ``delay`` seconds late (linearly interpolated between
   the commands sent, the first one before the log starts), and the physics steps.

The logged sensors are evaluated at the sample's state with the command that acts over
the step that follows (what MuJoCo's rollouts, and so the replay of :mod:`.fit`, predict
for that sample): a position or velocity sensor reads the state itself, as an encoder
does; a sensor of accelerations or forces reads them under that command.  (In the closed
loop of ``simulate`` a sensor is as ``mj_step`` leaves it, one physics step behind the
state; a replay would count that step as error.)
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from pathlib import Path

import mujoco
import numpy as np

from .. import user_code
from ..errors import DerivationError, ParameterError
from ..limits import DURATION_MAX
from ..validate import seed as validate_seed
from .logs import load_log
from .noise import parse_noise

__all__ = ["record", "multisine", "Reading", "columns_of"]

_HINGE_SLIDE = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))


def multisine(t: np.ndarray, amplitude: float, frequencies: np.ndarray, phases: np.ndarray) -> np.ndarray:
    """A sum of sines, (N,): ``amplitude * mean_k sin(2 pi f_k t + phi_k)`` with a 0.5 s cosine ramp-in."""
    ramp = np.clip(t / 0.5, 0.0, 1.0)
    ramp = 0.5 - 0.5 * np.cos(np.pi * ramp)
    waves = np.sin(2 * np.pi * np.outer(t, frequencies) + phases)
    return amplitude * ramp * waves.mean(axis=1) * np.sqrt(2.0)


class Reading:
    """What the logger read at one sample, as a controller sees it (noisy; read-only views).

    Attributes:
      qpos: ``(nq,)`` joint positions, noisy where logged (rad, m).
      qvel: ``(nv,)`` joint velocities, noisy where logged (rad/s, m/s).
      sensordata: ``(nsensordata,)`` the sensors, noisy where logged.
    """

    __slots__ = ("qpos", "qvel", "sensordata", "_model")

    def __init__(self, model: mujoco.MjModel, qpos: np.ndarray, qvel: np.ndarray, sensordata: np.ndarray):
        self._model = model
        self.qpos, self.qvel, self.sensordata = (_readonly(a) for a in (qpos, qvel, sensordata))

    def sensor(self, name: str) -> np.ndarray:
        """One sensor's noisy reading, ``(dim,)``.

        Raises:
          KeyError: no sensor of that name.
        """
        sid = mujoco.mj_name2id(self._model, mujoco.mjtObj.mjOBJ_SENSOR, name)
        if sid < 0:
            raise KeyError(f"no sensor {name!r}")
        adr, dim = int(self._model.sensor_adr[sid]), int(self._model.sensor_dim[sid])
        return self.sensordata[adr : adr + dim]


def _readonly(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


def columns_of(model: mujoco.MjModel, signals=None) -> list[tuple[str, str, int, str]]:
    """The log's reading columns: ``(column, kind, index, signal)``; the index into qpos, qvel or sensordata.

    Every named joint's position and velocity (``qpos:<joint>``; ``qpos:<joint>:k`` for free and
    ball joints' components) and every named sensor's values (``sensor:<name>[:k]``), or those
    whose signal (the column without its component) matches one of ``signals`` (globs:
    ``qpos:*``, ``sensor:imu_*``).

    Raises:
      ParameterError: a ``signals`` pattern that matches no reading.
    """
    out: list[tuple[str, str, int, str]] = []
    free, ball = int(mujoco.mjtJoint.mjJNT_FREE), int(mujoco.mjtJoint.mjJNT_BALL)
    for kind in ("qpos", "qvel"):
        for j in range(model.njnt):
            name = model.joint(j).name
            if not name:
                continue
            jtype = int(model.jnt_type[j])
            adr = int(model.jnt_qposadr[j] if kind == "qpos" else model.jnt_dofadr[j])
            width = {free: 7, ball: 4}.get(jtype, 1) - (1 if kind == "qvel" and jtype in (free, ball) else 0)
            signal = f"{kind}:{name}"
            out += [(signal, kind, adr, signal)] if width == 1 else \
                [(f"{signal}:{k}", kind, adr + k, signal) for k in range(width)]
    for s in range(model.nsensor):
        name = model.sensor(s).name
        if not name:
            continue
        adr, dim, signal = int(model.sensor_adr[s]), int(model.sensor_dim[s]), f"sensor:{name}"
        out += [(signal, "sensor", adr, signal)] if dim == 1 else \
            [(f"{signal}:{k}", "sensor", adr + k, signal) for k in range(dim)]
    if signals is None:
        return out
    chosen: set[str] = set()
    for pattern in signals:
        hits = {c[3] for c in out if fnmatch.fnmatchcase(c[3], pattern)}
        if not hits:
            raise ParameterError(f"--signals {pattern}: matches no reading of the model (qpos:<joint>, "
                                 "qvel:<joint>, sensor:<sensor>)")
        chosen |= hits
    return [c for c in out if c[3] in chosen]


def _per_column(cols: list[tuple[str, str, int, str]], pairs: list[tuple[str, float]], what: str,
                default: Callable[[str, str], float]) -> np.ndarray:
    """Each column's value from ``SIGNAL=VALUE`` pairs (first match), else ``default(kind, signal)``."""
    out, used = np.zeros(len(cols)), set()
    for c, (_column, kind, _index, signal) in enumerate(cols):
        match = next(((p, v) for p, v in pairs if fnmatch.fnmatchcase(signal, p)), None)
        if match:
            used.add(match[0])
        out[c] = match[1] if match else default(kind, signal)
    unused = [p for p, _ in pairs if p not in used]
    if unused:
        raise ParameterError(f"{what} {unused[0]}: matches no logged reading")
    return out


def _mjcf_noise(model: mujoco.MjModel) -> Callable[[str, str], float]:
    """A reading's noise as the MJCF states it (a sensor's ``noise``; a jointpos/jointvel sensor's for a joint)."""
    by_joint = {}
    for s in range(model.nsensor):
        kind = {int(mujoco.mjtSensor.mjSENS_JOINTPOS): "qpos", int(mujoco.mjtSensor.mjSENS_JOINTVEL): "qvel"}.get(
            int(model.sensor_type[s]))
        if kind and model.sensor_noise[s] > 0:
            by_joint[f"{kind}:{model.joint(int(model.sensor_objid[s])).name}"] = float(model.sensor_noise[s])

    def noise(kind: str, signal: str) -> float:
        if kind == "sensor":
            return float(model.sensor_noise[model.sensor(signal.split(":", 1)[1]).id])
        return by_joint.get(signal, 0.0)

    return noise


def _commands(path: Path, model: mujoco.MjModel) -> Callable[[float], np.ndarray]:
    """A commands file (``time``, ``ctrl:<actuator>``) as a function of time: linear between rows, held outside."""
    log = load_log(path, model, "the model", readings=False)
    ctrl = log.ctrl(model)
    time = log.time - log.time[0]

    def command(t: float) -> np.ndarray:
        return np.array([np.interp(t, time, ctrl[:, a]) for a in range(model.nu)])

    return command


def record(model: mujoco.MjModel, controller: Callable | None = None, duration: float = 1.0, *,
           commands: str | Path | None = None, noise=None, delay: float = 0.0, seed: int = 0,
           qpos: np.ndarray | None = None, qvel: np.ndarray | None = None, signals=None,
           resolution=None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Run ``model`` under ``controller`` (or a commands file) and return a log: ``time`` (N,) and columns (N,).

    Args:
      model: the model standing in for the robot.
      controller: ``ctrl = controller(t, reading)``: the command ``(nu,)`` from the time (s) and the
        noisy :class:`Reading` of this sample.
      duration: seconds logged (one sample per time step).
      commands: instead of a controller, a commands file (``.csv``/``.npz``: ``time``, ``ctrl:<actuator>``,
        as ``crossdyn excite`` writes), linearly interpolated.
      noise: each reading's white noise, ``{signal pattern: std}`` or ``["qpos:*=5e-4"]`` in the signal's
        units; readings not named take their MJCF sensor's ``noise`` (a ``jointpos``/``jointvel`` sensor
        for a joint's position/velocity), else none.
      delay: seconds between sending a command and the motor acting on it.
      seed: the noise's seed.
      qpos, qvel: the initial state, (nq,) and (nv,); default the model's ``qpos0`` at rest.
      signals: the columns logged (globs over ``qpos:<joint>``, ``qvel:<joint>``, ``sensor:<name>``); default all.
      resolution: readings rounded to a grid, ``{signal pattern: step}`` (an encoder's count), after the noise.

    Returns:
      ``(time, columns)`` with ``ctrl:<actuator>`` (the commands sent) and every logged reading,
      ready for :func:`.logs.write_log`.

    Raises:
      ParameterError: a bad duration, delay, noise or signal; DerivationError: the controller raised or
        returned something that is not ``nu`` finite numbers (naming the time).
    """
    if (controller is None) == (commands is None):
        raise ParameterError("record: give a controller or a commands file (one of them)")
    if not (np.isfinite(duration) and 0 < duration <= DURATION_MAX):
        raise ParameterError(f"--duration {duration}: seconds in (0, {DURATION_MAX:g}]")
    if not (np.isfinite(delay) and 0 <= delay <= 1.0):
        raise ParameterError(f"--delay {delay}: seconds in [0, 1]")
    rng = np.random.default_rng(validate_seed(seed))
    cols = columns_of(model, signals)
    sigma = _per_column(cols, parse_noise(noise), "--noise", _mjcf_noise(model))
    steps = _per_column(cols, parse_noise(resolution), "--resolution", lambda kind, signal: 0.0)
    law = _commands(Path(commands), model) if commands is not None else None
    data = mujoco.MjData(model)
    data.qpos[:] = model.qpos0 if qpos is None else qpos
    if qvel is not None:
        data.qvel[:] = qvel
    mujoco.mj_forward(model, data)
    n = int(round(duration / model.opt.timestep)) + 1
    time, sent, read = np.zeros(n), np.zeros((n, model.nu)), np.zeros((n, len(cols)))
    kinds = np.array([{"qpos": 0, "qvel": 1, "sensor": 2}[c[1]] for c in cols], int)
    index = np.array([c[2] for c in cols], int)
    for i in range(n):
        time[i] = data.time
        # What the logger reads now: the sensors evaluated at this state (the last command still acting).
        mujoco.mj_forward(model, data)
        noisy = sigma * rng.standard_normal(len(cols))
        qpos_r, qvel_r, sens_r = data.qpos.copy(), data.qvel.copy(), data.sensordata.copy()
        for k, array in enumerate((qpos_r, qvel_r, sens_r)):
            array[index[kinds == k]] += noisy[kinds == k]
        if law is not None:
            sent[i] = law(data.time)
        elif controller is not None:
            sent[i] = _call(controller, data.time, Reading(model, qpos_r, qvel_r, sens_r), model.nu)
        if delay > 0:
            when = data.time - delay
            data.ctrl[:] = [np.interp(when, time[: i + 1], sent[: i + 1, j]) for j in range(model.nu)]
        else:
            data.ctrl[:] = sent[i]
        mujoco.mj_forward(model, data)  # the sensors at this state under the command acting over this step
        values = np.concatenate([data.qpos, data.qvel, data.sensordata])
        offsets = np.array([0, model.nq, model.nq + model.nv])
        read[i] = values[offsets[kinds] + index] + noisy
        mujoco.mj_step(model, data)
        if data.time <= time[i] or not np.all(np.isfinite(data.qpos)):  # MuJoCo resets a simulation that blows up
            raise ParameterError(f"the simulation diverged at t = {data.time:.3f} s (not finite): a controller or "
                                 "commands that the model cannot follow")
    grid = steps > 0
    read[:, grid] = np.round(read[:, grid] / steps[grid]) * steps[grid]
    columns = {f"ctrl:{model.actuator(a).name}": sent[:, a] for a in range(model.nu)}
    columns |= {c[0]: read[:, k] for k, c in enumerate(cols)}
    return time, columns


def _call(controller: Callable, t: float, reading: Reading, nu: int) -> np.ndarray:
    out = user_code.call(controller, t, reading, label="the controller")
    if out.shape != (nu,) or not np.all(np.isfinite(out)):
        raise DerivationError(f"the controller returned {out.shape if out.shape != (nu,) else 'non-finite values'} "
                              f"at t = {t:.4f} s; expected {nu} finite commands")
    return out
