"""The rigid box as MuJoCo compiles it: its free body, mass properties and force points, all read from
``mjcf/rigid_box.xml`` (and its ground variant)."""

from __future__ import annotations

import mujoco
import numpy as np

from ...analytic import rigid_box as rb
from ..core.errors import ModelError
from ..core.models import body_inertia

__all__ = ["MODEL", "GROUND_MODEL", "BODY", "DURATION", "SHORT_DURATION", "free_body", "rigid_body_params",
           "application_point"]

MODEL = "rigid_box"
GROUND_MODEL = "rigid_box_ground"
BODY = "box"

DURATION = 10.0  # s, the free rotation and the pulled box, as in the lecture
SHORT_DURATION = 2.0  # s, the same in short mode (the test suite)


def free_body(model: mujoco.MjModel, name: str = BODY):
    """The body ``name`` and its free joint's id; a ModelError without exactly one free joint."""
    try:
        body = model.body(name)
    except KeyError:
        raise ModelError(f"model has no body named {name!r} (the rigid box experiments need one)") from None
    jnt = int(model.body_jntadr[body.id])
    if model.body_jntnum[body.id] != 1 or model.jnt_type[jnt] != mujoco.mjtJoint.mjJNT_FREE:
        raise ModelError(f"body {name!r} must have exactly one free joint")
    return body, jnt


def rigid_body_params(model: mujoco.MjModel, name: str = BODY) -> rb.RigidBodyParams:
    """Mass and body-frame inertia (a full tensor) of one free body whose frame is its CoM frame, so the free
    joint's position is the CoM, as the analytic model assumes.

    Raises:
      ModelError: no such body, no free joint, or the CoM off the body origin.
    """
    body, _ = free_body(model, name)
    ipos = np.array(model.body_ipos[body.id])
    if np.abs(ipos).max() > 1e-12:
        raise ModelError(
            f"body {name!r} has its CoM at {ipos.tolist()} in its frame; the box experiments need the body "
            "frame at the CoM (<inertial pos=\"0 0 0\">)"
        )
    return rb.RigidBodyParams(float(model.body_mass[body.id]), body_inertia(model, body.id))


def application_point(model: mujoco.MjModel, site: str) -> np.ndarray:
    """A force application point: the site's position in the body (CoM) frame, m (the actuator gives the
    direction)."""
    try:
        s = model.site(site)
    except KeyError:
        raise ModelError(f"model has no site named {site!r}") from None
    return np.array(model.site_pos[s.id])
