"""Commands to run on the robot for identification, and what their log would leave undetermined.

``crossdyn excite`` designs a multisine per actuator (a sum of sines of random
phases from 0.2 to 3 Hz, ramped in over half a second) within the actuator's
``ctrlrange``, simulates it on the model and shrinks it until every limited joint
stays inside 90 % of its range, then asks what such a log would tell: the
parameters named with ``--fit`` are judged from the sensitivities of the
simulated log at the model (the same windows, start corrections and intervals as
``crossdyn identify``, with the encoders' noise given).  A parameter whose interval
would be wider than a tenth of its own size is reported as poorly determined.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from . import sysid
from .fit import Problem
from .logs import Log
from .record import multisine
from .spec import Quantity

__all__ = ["design", "determinacy", "Determinacy", "RANGE_USE", "POOR"]

# The share of a limited joint's range the simulated excitation may use.
RANGE_USE = 0.9
# A parameter whose 95 % interval would be wider than this share of its own size is poorly determined.
POOR = 0.1
FREQUENCIES = (0.2, 3.0)  # Hz: slower than a second swing, faster than a robot's slowest modes


def _amplitudes(model: mujoco.MjModel) -> np.ndarray:
    """Per actuator: half its ctrlrange when limited, else a torque that gives 10 rad/s^2 to its dof."""
    out = np.zeros(model.nu)
    for a in range(model.nu):
        if model.actuator_ctrllimited[a]:
            low, high = model.actuator_ctrlrange[a]
            out[a] = 0.5 * (high - low) / 2
        else:
            dof = model.jnt_dofadr[model.actuator_trnid[a, 0]] if model.actuator_trntype[a] == 0 else 0
            inertia = 1.0 / max(float(model.dof_invweight0[dof]), 1e-12)
            out[a] = 10.0 * inertia / max(abs(float(model.actuator_gear[a, 0])), 1e-12)
    return out


def _simulate(model: mujoco.MjModel, time: np.ndarray, ctrl: np.ndarray) -> np.ndarray:
    """qpos at each sample time, (N, nq)."""
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    out = np.zeros((time.size, model.nq))
    for i in range(time.size):
        out[i] = data.qpos
        data.ctrl[:] = ctrl[i]
        mujoco.mj_step(model, data)
        if not np.all(np.isfinite(data.qpos)):
            out[i:] = np.inf
            break
    return out


def design(model: mujoco.MjModel, duration: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """A multisine per actuator that keeps the model's limited joints inside their ranges.

    Returns:
      ``(time (N,), ctrl (N, nu), qpos (N, nq) simulated, amplitude scale used)``.
    """
    rng = np.random.default_rng(seed)
    dt = model.opt.timestep
    time = np.arange(0.0, duration + dt / 2, dt)
    base = np.column_stack([multisine(time, 1.0, rng.uniform(*FREQUENCIES, 6), rng.uniform(0, 2 * np.pi, 6))
                            for _ in range(model.nu)]) if model.nu else np.zeros((time.size, 0))
    amplitude = _amplitudes(model)
    centre = np.array([model.actuator_ctrlrange[a].mean() if model.actuator_ctrllimited[a] else 0.0
                       for a in range(model.nu)])
    limited = [j for j in range(model.njnt) if model.jnt_limited[j]]
    scale = 1.0
    for _ in range(12):
        ctrl = centre + scale * amplitude * base
        for a in range(model.nu):
            if model.actuator_ctrllimited[a]:
                ctrl[:, a] = np.clip(ctrl[:, a], *model.actuator_ctrlrange[a])
        qpos = _simulate(model, time, ctrl)
        inside = np.all(np.isfinite(qpos))
        for j in limited:
            low, high = model.jnt_range[j]
            margin = (1 - RANGE_USE) / 2 * (high - low)
            q = qpos[:, model.jnt_qposadr[j]]
            inside &= bool(np.all((q >= low + margin) & (q <= high - margin)))
        if inside:
            return time, ctrl, qpos, scale
        scale *= 0.6
    return time, ctrl, qpos, scale


@dataclass
class Determinacy:
    """How well a log would pin each requested parameter (sensitivities at the model)."""

    target: Quantity
    half_width: np.ndarray
    moved: float

    @property
    def poor(self) -> bool:
        return bool(self.moved <= 1e-3 or not np.all(np.isfinite(self.half_width))
                    or np.any(self.half_width > POOR * self.target.scale))

    def sentence(self) -> str:
        t = self.target
        who = "commands" if t.kind == "delay" else f"{t.kind} {t.element!r}"
        if self.moved <= 1e-3:
            return f"{who}: {t.attr} poorly determined (this log would never move it)"
        word = "poorly determined" if self.poor else "determined"
        scale, unit = (1e3, "ms") if t.kind == "delay" else (1.0, t.unit)
        spread = ", ".join(f"{h * scale:.2g}" for h in self.half_width)
        return f"{who}: {t.attr} {word}: 95 % interval about ± {spread} {unit}".rstrip()


def determinacy(spec: mujoco.MjSpec, targets: list[Quantity], log: Log, noise: float) -> list[Determinacy]:
    """Intervals the log would give each target, from the Jacobian at the model with ``noise`` on every reading."""
    problem = Problem(spec, targets, [log], noise={"*": noise})  # the noise assumed, stated
    try:
        x = problem.x0()
        r = problem.predict(x)
        jac = problem.jacobian(x, r)
        # the noise is given, not estimated: residuals of exactly unit variance
        unit = np.random.default_rng(0).standard_normal(r.size)
        _, half = sysid.calculate_intervals([unit / np.sqrt(np.mean(unit**2))], jac)
    finally:
        problem.close()
    out, i = [], 0
    for t in targets:
        cols = jac[:, i : i + t.size] * t.scale
        out.append(Determinacy(t, np.asarray(half[i : i + t.size], float), float(np.linalg.norm(cols))))
        i += t.size
    return out
