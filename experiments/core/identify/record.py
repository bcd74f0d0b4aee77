"""Logs made in simulation: what a robot would log, from a model standing in for it.

A model checked against a log it produced itself must pass; a model that differs
from the one that made the log must fail.  :func:`record` makes such logs: it runs
a model under a control law that sees noisy encoders, sends its commands late if
asked, and writes what a robot's logger would: the time, the commands sent and
the encoder readings (with their noise).
"""

from __future__ import annotations

from collections.abc import Callable

import mujoco
import numpy as np

__all__ = ["record", "multisine"]


def multisine(t: np.ndarray, amplitude: float, frequencies: np.ndarray, phases: np.ndarray) -> np.ndarray:
    """A sum of sines, (N,): ``amplitude * mean_k sin(2 pi f_k t + phi_k)`` with a 0.5 s cosine ramp-in."""
    ramp = np.clip(t / 0.5, 0.0, 1.0)
    ramp = 0.5 - 0.5 * np.cos(np.pi * ramp)
    waves = np.sin(2 * np.pi * np.outer(t, frequencies) + phases)
    return amplitude * ramp * waves.mean(axis=1) * np.sqrt(2.0)


def record(model: mujoco.MjModel, law: Callable[[float, np.ndarray], np.ndarray], duration: float, *,
           encoder_noise: float = 0.0, delay: float = 0.0, seed: int = 0, joints: list[str] | None = None,
           qpos0: np.ndarray | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Run ``model`` under ``law`` and return a log: ``time`` (N,) and its columns (N,) each.

    Args:
      model: the model standing in for the robot.
      law: ``ctrl = law(t, encoders)``: the command (nu,) from the time (s) and the
        noisy joint positions of ``joints`` (rad).
      duration: seconds logged (one sample per time step).
      encoder_noise: the encoders' white noise, rad (or m), standard deviation.
      delay: seconds between sending a command and the motor acting on it (linear
        interpolation between the commands sent, the first one before the log starts).
      seed: the noise's seed.
      joints: the hinge/slide joints logged (``qpos:<joint>``); default every hinge and slide.
      qpos0: the initial joint positions, (nq,); default the model's ``qpos0``.

    Returns:
      ``(time, columns)`` with ``ctrl:<actuator>`` (the commands sent) and ``qpos:<joint>``
      (the noisy readings) columns, ready for :func:`.logs.write_log`.
    """
    rng = np.random.default_rng(seed)
    data = mujoco.MjData(model)
    if qpos0 is not None:
        data.qpos[:] = qpos0
    mujoco.mj_forward(model, data)
    if joints is None:
        joints = [model.joint(j).name for j in range(model.njnt)
                  if int(model.jnt_type[j]) in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))]
    adr = np.array([model.jnt_qposadr[model.joint(j).id] for j in joints], int)
    n = int(round(duration / model.opt.timestep)) + 1
    time = np.zeros(n)
    sent = np.zeros((n, model.nu))
    read = np.zeros((n, adr.size))
    for i in range(n):
        time[i] = data.time
        read[i] = data.qpos[adr] + encoder_noise * rng.standard_normal(adr.size)
        sent[i] = law(data.time, read[i])
        if delay > 0:
            when = data.time - delay
            data.ctrl[:] = [np.interp(when, time[: i + 1], sent[: i + 1, j]) for j in range(model.nu)]
        else:
            data.ctrl[:] = sent[i]
        mujoco.mj_step(model, data)
    columns = {f"ctrl:{model.actuator(a).name}": sent[:, a] for a in range(model.nu)}
    columns |= {f"qpos:{j}": read[:, k] for k, j in enumerate(joints)}
    return time, columns
