"""The one set-up of a closed-loop run, shared by ``simulate``, ``simulate_batch`` and the compiled loop.

Before the first step: the controllers' kinds and the control period found
(:func:`timing`), the imperfections bound (:func:`bind_run`), the initial state set (:func:`initial_state`).
Each step checks a controller's return (:class:`Commands`, :func:`call_failed`) and watches the same MuJoCo
warnings (:data:`WATCHED`, :func:`quiet`).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from math import isfinite
from typing import Any

import mujoco
import numpy as np

from .. import validate
from ..errors import ControllerError, ParameterError
from ..imperfections import Bound, Imperfection, bind
from ..limits import DURATION_MAX
from ..linearize import check_quaternions, keyframe_id, state_vector
from ..models import mujoco_warnings
from .control_rate import period_in_effect
from .kinds import ChecksControlPeriod, HasControlPeriod, kind_of

__all__ = ["Timing", "timing", "bind_run", "initial_state", "Commands", "call_failed", "at",
           "refused_control", "WATCHED", "quiet"]


@dataclass(frozen=True)
class Timing:
    """A run's clock: the control period ``dt`` (s), ``per`` physics steps each, ``steps`` control steps."""

    dt: float
    per: int
    steps: int


def timing(model: mujoco.MjModel, duration: float, control_dt: float | None, controllers: Sequence) -> Timing:
    """The run's clock, once every controller's kind is known (each told the period, ``check_rate``).

    Args:
      duration: simulated time, s.
      control_dt: the control period, s, or None: the period the controllers were designed for
        (:class:`~.kinds.HasControlPeriod`), else the period in effect
        (:func:`~.control_rate.period_in_effect`), else the model's time step.
      controllers: the run's controllers (one, or one per simulation).

    Raises:
      ParameterError: a controller of no kind, controllers designed for different periods, a period that is
        not a positive multiple of the time step, or a duration outside ``(0, DURATION_MAX]``.
    """
    for k, controller in enumerate(controllers):
        kind_of(controller, "controller" if len(controllers) == 1 else f"controller {k}")
    if control_dt is None:  # the rate the controllers were designed for when they say, else the one stated
        designed = {c.control_dt for c in controllers if isinstance(c, HasControlPeriod) and c.control_dt}
        if len(designed) > 1:
            raise ParameterError(f"the controllers were designed for different control periods "
                                 f"({', '.join(f'{dt:g} s' for dt in sorted(designed))}): give control_dt")
        control_dt = designed.pop() if designed else period_in_effect()
    h = float(model.opt.timestep)
    dt = h if control_dt is None else float(control_dt)
    if not (isfinite(dt) and dt > 0):
        raise ParameterError(f"control_dt must be a positive time, got {control_dt!r}")
    per = int(round(dt / h))
    if per < 1 or abs(per * h - dt) > 1e-9 * dt:  # 1e-9: round-off of a period typed in decimal
        raise ParameterError(f"control_dt {dt:g} s is not a multiple of the model's time step {h:g} s")
    duration = float(duration)
    if not (isfinite(duration) and 0 < duration <= DURATION_MAX):
        raise ParameterError(f"duration must be in (0, {DURATION_MAX:g}] s, got {duration!r}")
    for controller in controllers:
        if isinstance(controller, ChecksControlPeriod):
            controller.check_rate(dt)
    return Timing(dt, per, max(1, int(round(duration / dt))))


def bind_run(model: mujoco.MjModel, imperfections: Sequence[Imperfection], clock: Timing, seed) -> Bound:
    """The imperfections bound to one run of ``clock``, their draws seeded ``seed``.

    Raises:
      ParameterError: a bad seed, or an imperfection that does not fit the model or the run.
    """
    return bind(model, imperfections, clock.dt, validate.seed(seed), steps=clock.steps)


def initial_state(model: mujoco.MjModel, data: mujoco.MjData, keyframe, qpos, qvel, forward: bool = True) -> None:
    """Reset ``data`` to the keyframe (or leave it as made: the model's reference pose at rest), then ``qpos``,
    ``qvel``, then ``mj_forward`` (unless ``forward`` is False: a batch computes it per simulation).

    Raises:
      ParameterError: no such keyframe.
      StateError: a wrong-sized or non-finite state, or an all-zero quaternion.
    """
    if keyframe is not None:
        mujoco.mj_resetDataKeyframe(model, data, keyframe_id(model, keyframe))
    if qpos is not None:
        data.qpos[:] = state_vector("qpos", qpos, model.nq)
        check_quaternions(model, data.qpos)
    if qvel is not None:
        data.qvel[:] = state_vector("qvel", qvel, model.nv)
    if forward:
        mujoco.mj_forward(model, data)


class Commands:
    """Turns what a plain controller returned into ``command`` (nu,), or raises :class:`ControllerError`."""

    def __init__(self, model: mujoco.MjModel, command: np.ndarray):
        self.nu, self.command = model.nu, command
        self.names = {model.actuator(i).name: i for i in range(model.nu) if model.actuator(i).name}

    def write(self, value: Any, where: str) -> None:
        """Write ``value`` (``(nu,)``, a scalar for one actuator, or a dict by actuator name) into ``command``."""
        if type(value) is np.ndarray and value.shape == self.command.shape and value.dtype.kind == "f":
            self.command[:] = value  # the common case, no conversion
            return
        if value is None:
            raise ControllerError(f"controller returned None {where}; expected {self.nu} controls (does it end "
                                  "without a return?)")
        if isinstance(value, Mapping):
            value = self._from_names(value, where)
        if np.iscomplexobj(value):  # converting would drop the imaginary part with only a warning
            raise ControllerError(f"controller returned a complex control {where}; expected {self.nu} real controls")
        try:
            array = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise ControllerError(f"controller returned a {type(value).__name__} {where}; expected {self.nu} "
                                  "controls (an array, or a dict by actuator name)") from None
        if array.shape != (self.nu,) and not (self.nu == 1 and array.shape == ()):
            raise ControllerError(f"controller returned shape {array.shape} {where}; expected ({self.nu},): one "
                                  "control per actuator")
        self.command[:] = array

    def _from_names(self, value: Mapping, where: str) -> np.ndarray:
        out = np.zeros(self.nu)
        for name, u in value.items():
            if name not in self.names:
                raise ControllerError(f"controller returned a control for {name!r} {where}; the actuators are "
                                      f"{', '.join(self.names) or 'unnamed'}")
            try:
                if np.iscomplexobj(u):
                    raise TypeError("complex")
                out[self.names[name]] = u
            except (TypeError, ValueError):
                raise ControllerError(f"controller returned {u!r} for actuator {name!r} {where}; expected a "
                                      "number") from None
        return out


def call_failed(exc: BaseException, where: str) -> ControllerError:
    """The error of a controller call that raised ``exc`` (or called ``sys.exit``) ``where``."""
    if isinstance(exc, SystemExit):
        return ControllerError(f"controller called sys.exit({exc.code!r}) {where}")
    return ControllerError(f"controller raised {type(exc).__name__} {where}: {' '.join(str(exc).split())}")


def at(i: int, t: float) -> str:
    """Where in a run: ``"at control step i (t = ... s)"``."""
    return f"at control step {i} (t = {t:.6g} s)"


def refused_control(ctrl: list[float], where: str) -> str:
    """Why MuJoCo refused (zeroed) a control: not finite, or beyond its limit on any value it integrates."""
    if all(isfinite(u) for u in ctrl):
        return (f"a control beyond MuJoCo's limit |ctrl| <= {mujoco.mjMAXVAL:g} reached the actuators {where}: "
                f"{ctrl} (MuJoCo zeroes such a control)")
    return f"a non-finite control reached the actuators {where}: {ctrl}"


# MuJoCo's warnings the loop watches: a bad acceleration, position or velocity (MuJoCo then resets the
# state: the run diverged) and a bad control (MuJoCo zeroes it).
WATCHED = (mujoco.mjtWarning.mjWARN_BADQACC, mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL,
           mujoco.mjtWarning.mjWARN_BADCTRL)


@contextlib.contextmanager
def quiet(warnings: list[str]) -> Iterator[None]:
    """MuJoCo's warnings collected into ``warnings`` (not printed), Python's cyclic collector paused (the loop keeps
    no cycles, and the collector's passes over the growing trace would cost more than the step)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        with mujoco_warnings() as collected:
            yield
    finally:
        if collecting:
            gc.enable()
        warnings.extend(collected)
