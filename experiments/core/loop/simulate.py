"""The closed loop for any MJCF: a controller reading sensors and commanding actuators, stepped in MuJoCo.

    trace = simulate(model, controller, duration, keyframe="upright", control_dt=0.01,
                     imperfections=[SensorNoise("pole_angle", std=1e-3), Delay(1)], seed=0)

Every control period ``control_dt`` (a multiple of the model's time step) the loop
passes the sensors through the sensing imperfections, calls ``controller(t, obs)``
for the actuators' controls (``(nu,)`` or a dict by actuator name, missing ones
0), passes them through the actuation imperfections into ``data.ctrl``, records
one :class:`~.trace.Trace` row, and steps the physics ``control_dt / timestep`` times.
``obs`` (:class:`~.trace.Observation`) holds the true state and what the sensors read
after the imperfections, one physics step behind it.  The run ends early when the
simulation diverges or ``stop(obs)`` returns a reason (``trace.stopped``); a controller
that raises or returns a bad control ends it with a ``ControllerError`` naming the step.

The controller's kind (:mod:`.kinds`) decides how it runs: called, its return checked; a
command writer, unchecked; a compiled controller in the compiled loop
(:mod:`~crossdyn.experiments.core.loop.compiled`, the same rows bit for bit) when nothing
of the run needs Python between steps.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from math import isfinite
from pathlib import Path

import mujoco
import numpy as np

from ..errors import ControllerError, CrossdynError, ModelError, ParameterError
from ..imperfections import Bound, Imperfection
from ..models import as_model
from . import compiled as compiled_loop
from .control_rate import control_period
from .kinds import CommandWriter, CompiledController, Controller, Starting
from .setup import (
    WATCHED,
    Commands,
    at,
    bind_run,
    call_failed,
    initial_state,
    quiet,
    refused_control,
    timing,
)
from .trace import Observation, Trace, applied, ctrl_clamp

__all__ = ["simulate"]


def simulate(model: mujoco.MjModel | str | os.PathLike, controller: Controller | CommandWriter, duration: float, *,
             keyframe: str | int | None = None, qpos=None, qvel=None, control_dt: float | None = None,
             imperfections: Sequence[Imperfection] = (), seed: int = 0,
             stop: Callable[[Observation], str | bool | None] | None = None,
             record: Mapping[str, Callable[[mujoco.MjModel, mujoco.MjData], np.ndarray]] | None = None,
             video: str | os.PathLike | None = None, camera: str | int | None = None, fps: int = 30) -> Trace:
    """Run ``controller`` in closed loop on ``model`` for ``duration`` s; see the module docstring.

    Args:
      model: a compiled model, or a built-in name or MJCF/URDF path.
      controller: ``controller(t, obs) -> controls`` (``(nu,)`` or a dict by
        actuator name), or an object with ``write_command(t, sensed, command) -> bool`` (:mod:`.kinds`).
      duration: simulated time, s.
      keyframe: start from this keyframe (name or index); ``qpos``/``qvel`` override it.
      qpos, qvel: the initial state (default: the keyframe's, or ``qpos0`` at rest).
      control_dt: the control period, s (a multiple of the time step; default the controller's
        ``control_dt`` when it has one, as a regulator designed at a rate does, else the period in
        effect (:func:`~.control_rate.control_period`), else the time step).
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
      The :class:`~.trace.Trace`: one row per control step, up to where the run ended.

    Raises:
      ControllerError: the controller raised, exited, or returned a bad control (naming the step and time).
      ParameterError: a bad duration, control period, keyframe, seed or imperfection.
      StateError: a wrong-sized or non-finite initial state, or an all-zero quaternion.
    """
    model = as_model(model)
    clock = timing(model, duration, control_dt, [controller])
    bound = bind_run(model, imperfections, clock, seed)
    model = bound.model
    data = mujoco.MjData(model)
    initial_state(model, data, keyframe, qpos, qvel)
    run = _Run(model, data, clock.steps, record, bound)
    with control_period(clock.dt):
        return run.go(controller, bound, clock.per, stop, video, camera, fps)


class _Run:
    """One run's arrays and table (bound once), and its loop."""

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, n: int, record, bound: Bound):
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

    def go(self, controller, bound: Bound, per: int, stop, video, camera, fps) -> Trace:
        """Run the loop (see the module docstring) and return the trace."""
        if isinstance(controller, Starting):
            controller.start(self.model, self.data)
        film = _Film(self.model, camera, fps) if video is not None else None
        warnings: list[str] = []
        try:
            with quiet(warnings):
                if isinstance(controller, CompiledController) and not (bound.sense or bound.act or bound.push
                                                                       or self.computed) \
                        and stop is None and film is None and compiled_loop.available():
                    rows, stopped = self._compiled_steps(controller, per)
                else:
                    rows, stopped = self._steps(controller, bound, per, stop, film)
        finally:
            if film is not None:
                film.close()
        if film is not None:
            film.write(Path(video))
        return self.trace(rows, stopped, warnings)

    def _steps(self, controller, bound: Bound, per: int, stop, film) -> tuple[int, str | None]:
        """The control steps: ``(rows recorded, why the run stopped early or None)``; all bound to locals first."""
        model, data = self.model, self.data
        obs, commands = Observation(model, data.qpos, data.qvel, self.sensed, data), Commands(model, self.command)
        direct = controller.write_command if isinstance(controller, CommandWriter) else None
        sense, act, pushes = bound.sense, bound.act, bound.push
        raw, sensed, command, ctrl = data.sensordata, self.sensed, self.command, data.ctrl
        qacc, xfrc, warning = data.qacc, data.xfrc_applied, data.warning
        bad_qacc, bad_qpos, bad_qvel, bad_ctrl = (warning[w] for w in WATCHED)
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
                except (Exception, SystemExit) as exc:
                    raise call_failed(exc, at(i, t)) from None
                if type(value) is ndarray and value.shape == shape and value.dtype.kind == "f":
                    command[:] = value  # the common case, checked inline
                else:
                    commands.write(value, at(i, t))
                if not isfinite(sum(command.tolist())) and not np.isfinite(command).all():  # a NaN or inf makes
                    # the sum one (so do controls past 1e308 / nu, which MuJoCo's own limit refuses after the step)
                    raise ControllerError(f"controller returned a non-finite control {at(i, t)}: {command.tolist()}")
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
                raise ControllerError(refused_control(ctrl.tolist(), at(i, t)))
            if film is not None:
                film.capture(data)
            # MuJoCo resets the state on a bad qpos, qvel or qacc and warns; a NaN or inf makes the sum one.
            if bad_qacc.number or bad_qpos.number or bad_qvel.number or not isfinite(sum(qacc.tolist())):
                return i + 1, "diverged"
        return self.n, None

    def _compiled_steps(self, controller: CompiledController, per: int) -> tuple[int, str | None]:
        """The control steps of a compiled controller in the compiled loop
        (:mod:`~crossdyn.experiments.core.loop.compiled`), the same rows."""
        address = controller.step_address(self.sensed, self.command)
        rows, why = compiled_loop.run_steps(self.model, self.data, address, self.n, per, self.times, self.table,
                                            self.parts)
        if why == compiled_loop.DIVERGED:
            return rows, "diverged"
        if why == compiled_loop.REFUSED:
            raise ControllerError(refused_control(self.data.ctrl.tolist(), at(rows, self.times[rows])))
        if why != compiled_loop.FINE:
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
    where = "" if i is None else f" {at(i, t)}"
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
            import imageio.v3 as iio  # late: optional (the video extra)
        except ImportError:
            raise CrossdynError("a video needs imageio and imageio-ffmpeg: pip install -e '.[video]'") from None
        if not self.frames:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        iio.imwrite(path, np.stack(self.frames), fps=self.fps, codec="libx264")
