"""The closed loop for any MJCF: a controller reading sensors and commanding actuators, stepped in MuJoCo.

    trace = simulate(model, controller, duration, keyframe="upright", control_dt=0.01,
                     imperfections=[SensorNoise("pole_angle", std=1e-3), Delay(1)], seed=0)

Every control period ``control_dt`` (a multiple of the model's time step) the loop
passes the sensors through the sensing imperfections, calls ``controller(t, obs)``
for the actuators' controls (``(nu,)`` or a dict by actuator name, missing ones
0), passes them through the actuation imperfections into ``data.ctrl``, records
one :class:`Trace` row, and steps the physics ``control_dt / timestep`` times.

``obs.qpos`` and ``obs.qvel`` are the true state (read-only views, valid for this
call); ``obs.sensordata`` is what the sensors read after the imperfections.
Sensor values, like everything MuJoCo derives from the state, are as ``mj_step``
leaves them: computed at the start of the last physics step, before it advanced
the state (with every integrator: RK4's later stages skip the sensors).  So a
reading lags ``obs.qpos`` by one physics step, the model's ``timestep`` (none at
the first row, which ``mj_forward`` computed): ``trace.sensor_lag`` and
``obs.sensor_lag`` say so, in s, and a controller that reads sensors at a control
period of one physics step has one period of delay to design for.
``obs.data`` is MuJoCo's ``MjData``, for ground-truth experiments.

The run ends early when the simulation diverges or ``stop(obs)`` returns a reason
(``trace.stopped``).  A controller that raises or returns a bad control ends the
run with a :class:`ControllerError` naming the step and the time.

A controller may instead define ``write_command(t, sensed, command) -> bool``,
writing its controls itself (False: stop as diverged), called unchecked so that
compiled controllers run at the physics' speed; one that also offers
``step_address`` and ``failed`` (:class:`~.c_controller.CController`) runs in the
compiled loop (:mod:`~crossdyn.experiments.core.c_loop`, the same rows bit for bit)
when nothing of the run needs Python between steps.  A controller's
``start(model, data)``, if any, is called before the first step.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from math import isfinite
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from crossdyn.experiments.core.control_rate import control_period, period_in_effect
from crossdyn.experiments.core.errors import CrossdynError, ModelError, ParameterError
from crossdyn.experiments.core.imperfections import Imperfection, bind
from crossdyn.experiments.core.validate import seed as validate_seed

__all__ = ["simulate", "Trace", "Observation", "ControllerError", "DURATION_MAX", "sensor_lag"]

# Simulated seconds per run: a day of the robot's life; a typo (1e9) is refused before the table is allocated.
DURATION_MAX = 86_400.0


class ControllerError(CrossdynError):
    """A controller raised, exited, or returned controls of the wrong shape or non-finite values."""


class Observation:
    """What a controller is given each control period (see the module docstring).

    Attributes:
      qpos: ``(nq,)`` true positions (read-only view).
      qvel: ``(nv,)`` true velocities (read-only view).
      sensordata: ``(nsensordata,)`` the sensors' readings after the imperfections (read-only).
      data: MuJoCo's ``MjData`` (ground truth; not for a realistic controller).
      sensor_lag: s, how far the readings lag ``qpos`` after the first row (:func:`sensor_lag`).
    """

    __slots__ = ("qpos", "qvel", "sensordata", "data", "_sensors", "sensor_lag")

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, sensed: np.ndarray):
        self.qpos, self.qvel, self.sensordata = (_readonly(a) for a in (data.qpos, data.qvel, sensed))
        self.data = data
        self._sensors = _sensor_slices(model)
        self.sensor_lag = sensor_lag(model)

    def sensor(self, name: str) -> np.ndarray:
        """One sensor's readings after the imperfections, ``(dim,)`` (read-only view).

        Raises:
          KeyError: no sensor of that name (the message lists them).
        """
        try:
            return self.sensordata[self._sensors[name]]
        except KeyError:
            raise KeyError(f"no sensor {name!r}; the model's sensors: {', '.join(self._sensors) or 'none'}") from None


def sensor_lag(model: mujoco.MjModel) -> float:
    """How far the loop's sensor readings lag the state it passes beside them, s: one physics step.

    ``mj_step`` computes the sensors from the state at the start of its step and then
    advances the state (RK4 too: its later stages skip the sensors), so a row's readings
    are of the state one ``timestep`` before its ``qpos``; the first row's, computed by
    ``mj_forward``, are of its own.
    """
    return float(model.opt.timestep)


def _readonly(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


def _sensor_slices(model: mujoco.MjModel) -> dict[str, slice]:
    return {model.sensor(i).name or f"sensor{i}": slice(int(model.sensor_adr[i]),
                                                        int(model.sensor_adr[i] + model.sensor_dim[i]))
            for i in range(model.nsensor)}


@dataclass
class Trace:
    """One closed-loop run, one row per control step (the state at its start and the control applied over it).

    Attributes:
      t: ``(N,)`` s.
      qpos: ``(N, nq)``; qvel: ``(N, nv)``: MuJoCo's state.
      sensordata: ``(N, nsensordata)`` what the controller saw (after sensing imperfections).
      command: ``(N, nu)`` what the controller asked for.
      ctrl: ``(N, nu)`` what MuJoCo applied: the command after delay, lag and
        limits, clamped to each actuator's ``ctrlrange`` (as MuJoCo clamps it).
      stopped: why the run ended early (``"diverged"``, or ``stop``'s reason), or None.
      extra: further per-step records asked for with ``record=`` (name -> ``(N, size)``).
      warnings: MuJoCo's warnings during the run.
      saturated: ``(nu,)`` per actuator, the steps whose control MuJoCo clamped to its ``ctrlrange``.
      sensor_lag: s, how far each row's ``sensordata`` lags its ``qpos`` (after the first row, whose
        readings are of its own state): one physics step, the model's ``timestep``.
    """

    t: np.ndarray
    qpos: np.ndarray
    qvel: np.ndarray
    sensordata: np.ndarray
    command: np.ndarray
    ctrl: np.ndarray
    stopped: str | None = None
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    model: mujoco.MjModel | None = field(default=None, repr=False, compare=False)
    saturated: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))

    @property
    def sensor_lag(self) -> float:
        return 0.0 if self.model is None else sensor_lag(self.model)

    @property
    def diverged(self) -> bool:
        return self.stopped == "diverged"

    def saturation(self) -> str:
        """One line naming the actuators MuJoCo clamped to their ``ctrlrange`` and on how many steps; "" if none."""
        counts = np.asarray(self.saturated)
        if not counts.any():
            return ""
        names = [(self.model.actuator(i).name if self.model is not None else "") or f"actuator {i}"
                 for i in range(counts.size)]
        parts = [f"{name!r} {int(n)} of {self.t.size} steps" for name, n in zip(names, counts, strict=True) if n]
        return "saturated (clamped to ctrlrange): " + ", ".join(parts)

    def sensor(self, name: str) -> np.ndarray:
        """One sensor's column(s) of :attr:`sensordata`, ``(N, dim)``."""
        if self.model is None:
            raise KeyError("this trace carries no model to look sensors up in")
        slices = _sensor_slices(self.model)
        if name not in slices:
            raise KeyError(f"no sensor {name!r}; the model's sensors: {', '.join(slices) or 'none'}")
        return self.sensordata[:, slices[name]]

    def window(self, t0: float, t1: float = np.inf) -> np.ndarray:
        """Boolean mask of rows with ``t0 <= t < t1``."""
        return (self.t >= t0) & (self.t < t1)


def _steps(model: mujoco.MjModel, duration: float, control_dt: float | None) -> tuple[float, int, int]:
    """``(control_dt, physics steps per control step, control steps)``, validated."""
    h = float(model.opt.timestep)
    dt = h if control_dt is None else float(control_dt)
    if not (isfinite(dt) and dt > 0):
        raise ParameterError(f"control_dt must be a positive time, got {control_dt!r}")
    per = int(round(dt / h))
    if per < 1 or abs(per * h - dt) > 1e-9 * dt:
        raise ParameterError(f"control_dt {dt:g} s is not a multiple of the model's time step {h:g} s")
    if not (isfinite(duration) and 0 < duration <= DURATION_MAX):
        raise ParameterError(f"duration must be in (0, {DURATION_MAX:g}] s, got {duration!r}")
    return dt, per, max(1, int(round(duration / dt)))


def ctrl_clamp(model: mujoco.MjModel) -> tuple[np.ndarray, np.ndarray] | None:
    """``(low, high)`` per actuator, ``(nu,)`` each, of the clamp MuJoCo applies to ``ctrl``; None if it clamps none.

    MuJoCo clamps ``ctrl`` to ``ctrlrange`` when it computes the actuators' forces
    (``data.ctrl`` keeps what was written), unless the model disables it.
    """
    limited = model.actuator_ctrllimited.astype(bool)
    if model.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CLAMPCTRL:
        limited[:] = False
    if not limited.any():
        return None
    return (np.where(limited, model.actuator_ctrlrange[:, 0], -np.inf),
            np.where(limited, model.actuator_ctrlrange[:, 1], np.inf))


def applied(reached: np.ndarray, clamp: tuple[np.ndarray, np.ndarray] | None) -> tuple[np.ndarray, np.ndarray]:
    """What MuJoCo applied, ``(N, nu)``, from what reached ``data.ctrl``; the clamped steps per actuator, ``(nu,)``."""
    if clamp is None:
        return reached, np.zeros(reached.shape[1], dtype=int)
    ctrl = np.clip(reached, *clamp)
    return ctrl, np.count_nonzero(ctrl != reached, axis=0)


def _initial(model: mujoco.MjModel, data: mujoco.MjData, keyframe, qpos, qvel, forward: bool = True) -> None:
    """Reset ``data`` to the keyframe (or the model's reference pose at rest), then ``qpos``/``qvel``, then
    ``mj_forward`` (unless ``forward`` is False: a batch computes it per simulation)."""
    from crossdyn.experiments.core.linearize import _keyframe_id, _vector, check_quaternions

    if keyframe is not None:
        mujoco.mj_resetDataKeyframe(model, data, _keyframe_id(model, keyframe))
    if qpos is not None:
        data.qpos[:] = _vector("qpos", qpos, model.nq)
        check_quaternions(model, data.qpos)
    if qvel is not None:
        data.qvel[:] = _vector("qvel", qvel, model.nv)
    if forward:
        mujoco.mj_forward(model, data)


class _Commands:
    """Turns what a controller returned into ``command`` (nu,), or raises :class:`ControllerError`."""

    def __init__(self, model: mujoco.MjModel, command: np.ndarray):
        self.nu, self.command = model.nu, command
        self.names = {model.actuator(i).name: i for i in range(model.nu) if model.actuator(i).name}

    def write(self, value: Any, where: str) -> None:
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


def _refused_control(ctrl: list[float], where: str) -> str:
    """Why MuJoCo refused (zeroed) a control: not finite, or beyond its limit on any value it integrates."""
    if all(isfinite(u) for u in ctrl):
        return (f"a control beyond MuJoCo's limit |ctrl| <= {mujoco.mjMAXVAL:g} reached the actuators {where}: "
                f"{ctrl} (MuJoCo zeroes such a control)")
    return f"a non-finite control reached the actuators {where}: {ctrl}"


def _at(i: int, t: float) -> str:
    return f"at control step {i} (t = {t:.6g} s)"


def simulate(model: mujoco.MjModel | str | os.PathLike, controller: Callable, duration: float, *,
             keyframe: str | int | None = None, qpos=None, qvel=None, control_dt: float | None = None,
             imperfections: Sequence[Imperfection] = (), seed: int = 0,
             stop: Callable[[Observation], str | bool | None] | None = None,
             record: Mapping[str, Callable[[mujoco.MjModel, mujoco.MjData], np.ndarray]] | None = None,
             video: str | os.PathLike | None = None, camera: str | int | None = None, fps: int = 30) -> Trace:
    """Run ``controller`` in closed loop on ``model`` for ``duration`` s; see the module docstring.

    Args:
      model: a compiled model, or a built-in name or MJCF/URDF path.
      controller: ``controller(t, obs) -> controls`` (``(nu,)`` or a dict by
        actuator name), or an object with ``write_command(t, sensed, command) -> bool``.
      duration: simulated time, s.
      keyframe: start from this keyframe (name or index); ``qpos``/``qvel`` override it.
      qpos, qvel: the initial state (default: the keyframe's, or ``qpos0`` at rest).
      control_dt: the control period, s (a multiple of the time step; default the controller's
        ``control_dt`` when it has one, as a regulator designed at a rate does, else the period in
        effect (:func:`~crossdyn.experiments.core.control_rate.control_period`), else the time step).
        The run is itself a period in effect: a controller designing in its ``start`` designs at it.
        A controller's ``check_rate(control_dt)``, if any, is called with it (a continuous
        regulator warns when its poles are beyond the rate).
      imperfections: :mod:`~crossdyn.experiments.core.imperfections` to apply.
      seed: seed of every random draw of the imperfections.
      stop: ``stop(obs)`` checked after each row; a truthy return ends the run (a string is the reason).
      record: more per-step records, ``name -> fn(model, data)``, into ``trace.extra[name]``: a
        contiguous view of ``data`` (``lambda m, d: d.site_xpos``) is bound once; anything else
        is called each step and copied (it must keep its first call's shape).
      video: write an MP4 here (needs ``imageio``; headless with ``MUJOCO_GL=egl``).
      camera: the camera to render (name or index; default the free camera).
      fps: video frames per simulated second.

    Returns:
      The :class:`Trace`: one row per control step, up to where the run ended.

    Raises:
      ControllerError: the controller raised, exited, or returned a bad control (naming the step and time).
      ParameterError: a bad duration, control period, keyframe, seed or imperfection.
      StateError: a wrong-sized or non-finite initial state, or an all-zero quaternion.
    """
    from crossdyn.experiments.core.models import load_model

    if not isinstance(model, mujoco.MjModel):
        model = load_model(model)
    if not callable(controller) and not hasattr(controller, "write_command"):
        raise ParameterError(f"controller must be a function (t, obs) -> controls, got {type(controller).__name__}")
    if control_dt is None:  # the rate the controller was designed for when it says, else the one stated
        control_dt = getattr(controller, "control_dt", None) or period_in_effect()
    dt, per, n = _steps(model, float(duration), control_dt)
    check_rate = getattr(controller, "check_rate", None)
    if check_rate is not None:
        check_rate(dt)
    bound = bind(model, imperfections, dt, validate_seed(seed), steps=n)
    model = bound.model
    data = mujoco.MjData(model)
    _initial(model, data, keyframe, qpos, qvel)
    run = _Run(model, data, n, record, bound)
    with control_period(dt):
        return run.go(controller, bound, per, stop, video, camera, fps)


class _Run:
    """One run's arrays and table (bound once), and its loop."""

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, n: int, record, bound):
        self.model, self.data, self.n = model, data, n
        # Without imperfections the controller reads MuJoCo's sensordata and writes its ctrl directly.
        self.sensed = data.sensordata.copy() if bound.sense else data.sensordata
        self.command = np.zeros(model.nu) if bound.act else data.ctrl
        self.clamp = ctrl_clamp(model)
        extras, self.computed = {}, []
        for name, fn in (record or {}).items():
            array = _record_value(name, fn, model, data)
            if _views_data(array, data):
                extras[name] = array
            else:  # a computed value: called each step, copied into the row
                buffer = np.array(array, dtype=float)
                self.computed.append((name, fn, buffer))
                extras[name] = buffer
        # One row: each distinct array once (without actuation imperfections or clamping the command is ctrl).
        named = [("qpos", data.qpos), ("qvel", data.qvel), ("sensordata", self.sensed), ("command", self.command)]
        if self.command is not data.ctrl:
            named.append(("ctrl", data.ctrl))
        named += [(f"extra:{name}", view.reshape(-1)) for name, view in extras.items()]
        self.parts = tuple(array for _, array in named)
        edges = np.cumsum([0, *(array.size for array in self.parts)])
        self.columns = {name: slice(int(edges[k]), int(edges[k + 1])) for k, (name, _) in enumerate(named)}
        self.columns.setdefault("ctrl", self.columns["command"])
        self.extras = {name: view.shape for name, view in extras.items()}
        self.times = np.empty(n)
        self.table = np.empty((n, int(edges[-1])))

    def go(self, controller, bound, per: int, stop, video, camera, fps) -> Trace:
        """Run the loop (see the module docstring) and return the trace."""
        start = getattr(controller, "start", None)
        if start is not None:
            start(self.model, self.data)
        film = _Film(self.model, camera, fps) if video is not None else None
        warnings: list[str] = []
        try:
            with _quiet(warnings):
                rows, stopped = self._steps(controller, bound, per, stop, film)
        finally:
            if film is not None:
                film.close()
        if film is not None:
            film.write(Path(video))
        return self.trace(rows, stopped, warnings)

    def _steps(self, controller, bound, per: int, stop, film) -> tuple[int, str | None]:
        """The control steps: ``(rows recorded, why the run stopped early or None)``; all bound to locals first."""
        model, data = self.model, self.data
        compiled = getattr(controller, "step_address", None)
        if compiled is not None and not (bound.sense or bound.act or bound.push or self.computed) \
                and stop is None and film is None:
            from crossdyn.experiments.core import c_loop

            if c_loop.available():
                return self._compiled_steps(controller, compiled(self.sensed, self.command), per)
        obs, commands = Observation(model, data, self.sensed), _Commands(model, self.command)
        direct = getattr(controller, "write_command", None)
        sense, act, pushes = bound.sense, bound.act, bound.push
        raw, sensed, command, ctrl = data.sensordata, self.sensed, self.command, data.ctrl
        qacc, xfrc, warning = data.qacc, data.xfrc_applied, data.warning
        bad_qacc, bad_qpos, bad_qvel, bad_ctrl = (warning[w] for w in _WATCHED)
        table, times, parts, concatenate = self.table, self.times, self.parts, np.concatenate
        ndarray, shape, step = np.ndarray, command.shape, mujoco.mj_step
        computed = self.computed
        for i in range(self.n):
            t = data.time
            if sense:
                sensed[:] = raw
                for fn in sense:
                    fn(sensed, data)
            if direct is not None:
                if not direct(t, sensed, command):
                    return i, "diverged"
            else:
                try:
                    value = controller(t, obs)
                except Exception as exc:
                    detail = " ".join(str(exc).split())
                    raise ControllerError(f"controller raised {type(exc).__name__} {_at(i, t)}: {detail}") from None
                except SystemExit as exc:
                    raise ControllerError(f"controller called sys.exit({exc.code!r}) {_at(i, t)}") from None
                if type(value) is ndarray and value.shape == shape and value.dtype.kind == "f":
                    command[:] = value  # the common case, checked inline
                else:
                    commands.write(value, _at(i, t))
                if not isfinite(sum(command.tolist())) and not np.isfinite(command).all():  # a NaN or inf makes
                    # the sum one (so do controls past 1e308 / nu, which MuJoCo's own limit refuses after the step)
                    raise ControllerError(f"controller returned a non-finite control {_at(i, t)}: {command.tolist()}")
            if act:
                ctrl[:] = command
                for fn in act:
                    fn(ctrl, data)
            for name, fn, buffer in computed:
                buffer[...] = _record_value(name, fn, model, data, buffer.shape, i, t)
            times[i] = t
            concatenate(parts, out=table[i])
            if stop is not None:
                reason = stop(obs)
                if reason:
                    return i + 1, reason if isinstance(reason, str) else "stopped"
            counted = bad_ctrl.number
            if pushes:
                for _ in range(per):
                    for fn in pushes:
                        fn(xfrc, data.time)
                    step(model, data)
            else:
                step(model, data, per)
            if bad_ctrl.number != counted:  # MuJoCo zeroed a NaN or huge control (a controller's or a lag's)
                raise ControllerError(_refused_control(ctrl.tolist(), _at(i, t)))
            if film is not None:
                film.capture(data)
            # MuJoCo resets the state on a bad qpos, qvel or qacc and warns; a NaN or inf makes the sum one.
            if bad_qacc.number or bad_qpos.number or bad_qvel.number or not isfinite(sum(qacc.tolist())):
                return i + 1, "diverged"
        return self.n, None

    def _compiled_steps(self, controller, address: int, per: int) -> tuple[int, str | None]:
        """The control steps of a compiled controller in the compiled loop (:mod:`.c_loop`), the same rows."""
        from crossdyn.experiments.core import c_loop

        rows, why = c_loop.run_steps(self.model, self.data, address, self.n, per, self.times, self.table, self.parts)
        if why == c_loop.DIVERGED:
            return rows, "diverged"
        if why == c_loop.REFUSED:
            raise ControllerError(_refused_control(self.data.ctrl.tolist(), _at(rows, self.times[rows])))
        if why != c_loop.FINE:
            controller.failed(why, self.data.time, self.command)
        return rows, None

    def trace(self, rows: int, stopped: str | None, warnings: list[str]) -> Trace:
        table, cols = self.table[:rows], self.columns
        extra = {name: table[:, cols[f"extra:{name}"]].reshape((rows, *shape)) for name, shape in self.extras.items()}
        ctrl, saturated = applied(table[:, cols["ctrl"]], self.clamp)
        return Trace(t=self.times[:rows].copy(), qpos=table[:, cols["qpos"]], qvel=table[:, cols["qvel"]],
                     sensordata=table[:, cols["sensordata"]], command=table[:, cols["command"]],
                     ctrl=ctrl, stopped=stopped, extra=extra, warnings=warnings, model=self.model,
                     saturated=saturated)


def _record_value(name: str, fn, model: mujoco.MjModel, data: mujoco.MjData, shape: tuple | None = None,
                  i: int | None = None, t: float = 0.0) -> np.ndarray:
    """``fn(model, data)`` as an array of real numbers (of ``shape`` when given), or a :class:`ParameterError`."""
    where = "" if i is None else f" {_at(i, t)}"
    try:
        array = np.asarray(fn(model, data))
    except Exception as exc:
        detail = " ".join(str(exc).split())
        raise ParameterError(f"record[{name!r}] raised {type(exc).__name__}{where}: {detail}") from None
    if array.dtype.kind not in "biuf":
        raise ParameterError(f"record[{name!r}] returned {array.dtype.name} values{where}; expected real numbers")
    if shape is not None and array.shape != shape:
        raise ParameterError(f"record[{name!r}] returned shape {array.shape}{where}; its first call returned "
                             f"{shape}")
    return array


def _views_data(array: np.ndarray, data: mujoco.MjData) -> bool:
    """Whether ``array`` is a contiguous view into MuJoCo's data (then it is bound once, read each step)."""
    def root(a):
        while isinstance(a, np.ndarray) and a.base is not None:
            a = a.base
        return a

    if array.dtype != np.float64 or not array.flags.c_contiguous or array.base is None:
        return False
    return root(array) is root(data.qpos)


# MuJoCo's warnings the loop watches: a bad acceleration, position or velocity (MuJoCo then resets the
# state: the run diverged) and a bad control (MuJoCo zeroes it).
_WATCHED = (mujoco.mjtWarning.mjWARN_BADQACC, mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL,
            mujoco.mjtWarning.mjWARN_BADCTRL)


@contextlib.contextmanager
def _quiet(warnings: list[str]):
    """MuJoCo's warnings collected into ``warnings`` (not printed), Python's cyclic collector paused (the loop keeps
    no cycles, and the collector's passes over the growing trace would cost more than the step)."""
    from crossdyn.experiments.core.models import mujoco_warnings

    collecting = gc.isenabled()
    gc.disable()
    try:
        with mujoco_warnings() as collected:
            yield
    finally:
        if collecting:
            gc.enable()
        warnings.extend(collected)


class _Film:
    """Frames from a camera at ``fps`` simulated frames per second, written as an MP4."""

    def __init__(self, model: mujoco.MjModel, camera, fps: int):
        try:
            self.renderer = mujoco.Renderer(model, 360, 640)
        except Exception as exc:  # no GL: say how to get one
            raise ModelError(f"cannot render a video: {exc} (headless: MUJOCO_GL=egl with Mesa's libEGL)") from None
        self.camera, self.fps = -1 if camera is None else camera, fps
        self.frames: list[np.ndarray] = []

    def capture(self, data: mujoco.MjData) -> None:
        if len(self.frames) < data.time * self.fps:
            self.renderer.update_scene(data, camera=self.camera)
            self.frames.append(self.renderer.render().copy())

    def close(self) -> None:
        self.renderer.close()

    def write(self, path: Path) -> None:
        try:
            import imageio.v3 as iio
        except ImportError:
            raise CrossdynError("a video needs imageio and imageio-ffmpeg: pip install -e '.[video]'") from None
        if not self.frames:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        iio.imwrite(path, np.stack(self.frames), fps=self.fps, codec="libx264")
