"""Where a check's random states are drawn: from the model where it says, stated defaults elsewhere.

A check passes only over the states it tried, so the ranges are part of every
report.  A joint with a range in the model is drawn in it; a hinge without one
over several turns (a wheel turns many times), a slide without one over a stated
length; velocities and accelerations, which MJCF does not limit, over stated
defaults.  Each is settable (``--q-range``, ``q_range=``, ...: ``R`` for ``-R..R``
or ``(LOW, HIGH)``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from . import validate
from .checks.names import joint_name

__all__ = ["Ranges", "TURN", "HINGE_TURNS", "FREE_POSITION"]

TURN = 2 * math.pi
# Unlimited hinges: three turns each way, so a derivation that is right only on
# one turn (a wrapped angle, a half-angle formula) fails at most states.
HINGE_TURNS = 3
# Free joints' position, m per axis: the dynamics does not depend on it except
# through gravity's potential, which is linear in it.
FREE_POSITION = 1.0
# Names listed before "... and N more" (a report stays readable on a big robot).
_NAMES = 6

_FLAGS = {"q": ("--q-range", "q_range"), "slide": ("--slide-range", "slide_range"),
          "qd": ("--qd-range", "qd_range"), "qdd": ("--qdd-range", "qdd_range")}


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:_NAMES])
    return shown + (f" and {len(names) - _NAMES} more" if len(names) > _NAMES else "")


def _span(low: float, high: float) -> str:
    return f"[{low:.4g}, {high:.4g}]"


@dataclass(frozen=True)
class Ranges:
    """The ranges random states are drawn from (uniformly).

    Attributes:
      q: hinges without a range in the model, ``(low, high)`` rad (default three turns each way).
      slide: slides without a range, ``(low, high)`` m (default 0.5 m each way).
      qd: every velocity, ``(low, high)`` rad/s or m/s (default 30 each way: a
        0.1 m wheel at 3 m/s, a leg swinging fast).
      qdd: every acceleration, ``(low, high)`` rad/s^2 or m/s^2 (default 100 each
        way); the forward-dynamics check draws torques as those giving these.
    """

    q: tuple[float, float] = (-HINGE_TURNS * TURN, HINGE_TURNS * TURN)
    slide: tuple[float, float] = (-0.5, 0.5)
    qd: tuple[float, float] = (-30.0, 30.0)
    qdd: tuple[float, float] = (-100.0, 100.0)

    @classmethod
    def of(cls, q_range=None, qd_range=None, qdd_range=None, slide_range=None) -> Ranges:
        """Ranges from the checks' arguments (None keeps a default), each ``R`` or ``(low, high)``.

        Raises:
          ParameterError: a range that is not finite, empty, or beyond
            :data:`~crossdyn.experiments.core.limits.RANGE_MAX`.
        """
        given = {"q": q_range, "qd": qd_range, "qdd": qdd_range, "slide": slide_range}
        return cls(**{k: validate.interval(v, _FLAGS[k][1]) for k, v in given.items() if v is not None})

    def to_dict(self) -> dict:
        """What ``metrics.json`` stores: each range as ``[low, high]``."""
        return {"q_range": list(self.q), "slide_range": list(self.slide), "qd_range": list(self.qd),
                "qdd_range": list(self.qdd)}

    def draw(self, model: mujoco.MjModel, rng: np.random.Generator,
             n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``n`` random states: ``qpos (n, nq)``, ``qvel (n, nv)``, ``qacc (n, nv)``.

        Joints uniform in their model range, else :attr:`q` / :attr:`slide`; free
        joints in a :data:`FREE_POSITION` cube, free and ball joints a uniformly
        random unit quaternion; velocities and accelerations uniform in :attr:`qd`, :attr:`qdd`.
        """
        qpos = np.zeros((n, model.nq))
        for j in range(model.njnt):
            adr, kind = model.jnt_qposadr[j], model.jnt_type[j]
            limited = bool(model.jnt_limited[j])
            lo, hi = model.jnt_range[j]
            if kind == mujoco.mjtJoint.mjJNT_HINGE:
                qpos[:, adr] = rng.uniform(lo, hi, n) if limited else rng.uniform(*self.q, n)
            elif kind == mujoco.mjtJoint.mjJNT_SLIDE:
                qpos[:, adr] = rng.uniform(lo, hi, n) if limited else rng.uniform(*self.slide, n)
            else:
                quat_adr = adr
                if kind == mujoco.mjtJoint.mjJNT_FREE:
                    qpos[:, adr : adr + 3] = rng.uniform(-FREE_POSITION, FREE_POSITION, (n, 3))
                    quat_adr = adr + 3
                quat = rng.normal(size=(n, 4))
                qpos[:, quat_adr : quat_adr + 4] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
        qvel = rng.uniform(*self.qd, (n, model.nv))
        qacc = rng.uniform(*self.qdd, (n, model.nv))
        return qpos, qvel, qacc

    def describe(self, model: mujoco.MjModel, parts: tuple[str, ...] = ("q", "qd", "qdd")) -> list[str]:
        """The sentences a report prints: where each kind of joint and each of ``parts`` was drawn."""
        kinds: dict[str, list[str]] = {"hinge": [], "slide": [], "limited": [], "free": [], "ball": []}
        for j in range(model.njnt):
            kind, name = int(model.jnt_type[j]), joint_name(model, j)
            if kind in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE) and model.jnt_limited[j]:
                lo, hi = model.jnt_range[j]
                kinds["limited"].append(f"{name} {_span(lo, hi)}")
            else:
                key = {int(mujoco.mjtJoint.mjJNT_HINGE): "hinge", int(mujoco.mjtJoint.mjJNT_SLIDE): "slide",
                       int(mujoco.mjtJoint.mjJNT_FREE): "free"}.get(kind, "ball")
                kinds[key].append(name)
        lines = []
        if kinds["hinge"]:
            lo, hi = self.q
            turns = f" ({hi / TURN:.3g} turns each way)" if lo == -hi else ""
            lines.append(f"hinges without a range ({_names(kinds['hinge'])}): {_span(lo, hi)} rad{turns}")
        if kinds["limited"]:
            lines.append(f"joints in the model's range: {_names(kinds['limited'])} (rad or m)")
        if kinds["slide"]:
            lines.append(f"slides without a range ({_names(kinds['slide'])}): {_span(*self.slide)} m")
        if kinds["free"]:
            lines.append(f"free joints ({_names(kinds['free'])}): position in {_span(-FREE_POSITION, FREE_POSITION)}"
                         " m per axis, orientation uniformly random")
        if kinds["ball"]:
            lines.append(f"ball joints ({_names(kinds['ball'])}): orientation uniformly random")
        if "qd" in parts:
            lines.append(f"velocities qd: {_span(*self.qd)} rad/s (m/s on slides) on every dof")
        if "qdd" in parts or "tau" in parts:
            torques = " (torques: those giving these)" if "tau" in parts else ""
            lines.append(f"accelerations qdd: {_span(*self.qdd)} rad/s^2 (m/s^2 on slides) on every dof{torques}")
        return lines
