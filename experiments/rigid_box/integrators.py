"""MuJoCo's integrators stepping the free box into an analytic ``Trajectory``, so MuJoCo's runs and the
hand-written integrators are measured by the same functions; and how two trajectories are compared.
"""

from __future__ import annotations

import mujoco
import numpy as np

from ...analytic import rigid_box as rb
from ...analytic.rotation import matrix_to_quat
from .model import BODY, free_body

__all__ = ["INTEGRATORS", "mujoco_trajectory", "rotation_angle", "relative_change"]

INTEGRATORS = {
    "mujoco_rk4": mujoco.mjtIntegrator.mjINT_RK4,
    "mujoco_euler": mujoco.mjtIntegrator.mjINT_EULER,
    "mujoco_implicit": mujoco.mjtIntegrator.mjINT_IMPLICIT,
    "mujoco_implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
}


def mujoco_trajectory(model: mujoco.MjModel, state: rb.BodyState, steps: int, *, ctrl=None,
                      held_wrench: rb.Wrench | None = None, name: str = BODY) -> rb.Trajectory:
    """Step MuJoCo ``steps`` times from ``state`` (with the model's integrator and time step) and sample the
    body after every step, ``t = 0, dt, ..., steps dt``.

    Args:
      ctrl: actuator controls held throughout, ``(nu,)``.
      held_wrench: if given, ``xfrc_applied`` is set from it at each step's start and held over the step.
    """
    body, jnt = free_body(model, name)
    qadr, vadr = int(model.jnt_qposadr[jnt]), int(model.jnt_dofadr[jnt])
    data = mujoco.MjData(model)
    data.qpos[qadr : qadr + 3] = state.c
    data.qpos[qadr + 3 : qadr + 7] = matrix_to_quat(state.R)
    data.qvel[vadr : vadr + 3] = state.v
    data.qvel[vadr + 3 : vadr + 6] = state.R.T @ state.omega
    if ctrl is not None:
        data.ctrl[:] = ctrl
    dt = model.opt.timestep
    c, v, R, w = (np.zeros((steps + 1, 3)), np.zeros((steps + 1, 3)), np.zeros((steps + 1, 3, 3)),
                  np.zeros((steps + 1, 3)))

    def sample(k):
        c[k] = data.qpos[qadr : qadr + 3]
        v[k] = data.qvel[vadr : vadr + 3]
        quat = data.qpos[qadr + 3 : qadr + 7]
        mujoco.mju_quat2Mat(R[k].reshape(9), quat / np.linalg.norm(quat))
        w[k] = R[k] @ data.qvel[vadr + 3 : vadr + 6]

    sample(0)
    for k in range(steps):
        if held_wrench is not None:
            f, tau = held_wrench(data.time, c[k], v[k], R[k], w[k])
            data.xfrc_applied[body.id, :3], data.xfrc_applied[body.id, 3:] = f, tau
        mujoco.mj_step(model, data)
        sample(k + 1)
    return rb.Trajectory(np.arange(steps + 1) * dt, c, v, R, w)


def rotation_angle(Ra, Rb) -> np.ndarray:
    """Angle of ``Ra^T Rb``, ``(...)``, rad, accurate for tiny angles (atan2 of sin and cos)."""
    rel = np.einsum("...ji,...jk->...ik", np.asarray(Ra), np.asarray(Rb))
    skew_part = rel - np.swapaxes(rel, -1, -2)
    s = 0.5 * np.linalg.norm(np.stack([skew_part[..., 2, 1], skew_part[..., 0, 2], skew_part[..., 1, 0]], -1), axis=-1)
    cos = 0.5 * (np.trace(rel, axis1=-2, axis2=-1) - 1.0)
    return np.arctan2(s, cos)


def relative_change(x: np.ndarray) -> float:
    """``(x[-1] - x[0]) / x[0]``: the drift of a conserved quantity over a run."""
    return float((x[-1] - x[0]) / x[0])
