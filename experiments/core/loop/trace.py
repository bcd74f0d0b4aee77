"""What a closed loop gives its controller and what it returns: :class:`Observation` and :class:`Trace`.

A controller that reads sensors at a control period of one physics step has one period of delay to design
for: the readings lag the state by one step (:func:`sensor_lag`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mujoco
import numpy as np

__all__ = ["Observation", "Trace", "sensor_lag", "sensor_slices", "sensor_slice", "readonly", "ctrl_clamp", "applied"]


class Observation:
    """What a controller is given each control period: of one run, or of every run of a batch at once.

    Attributes:
      qpos: ``(nq,)`` true positions (read-only view, valid for this call); ``(n, nq)`` over a batch.
      qvel: ``(nv,)`` true velocities (read-only view); ``(n, nv)`` over a batch.
      sensordata: ``(nsensordata,)`` the sensors' readings after the imperfections (read-only); ``(n, ...)``.
      data: MuJoCo's ``MjData``, or a batch's ``mujoco.batch.Batch`` (ground truth; not for a realistic controller).
      sensor_lag: s, how far the readings lag ``qpos`` after the first row (:func:`sensor_lag`).
    """

    __slots__ = ("qpos", "qvel", "sensordata", "data", "_sensors", "sensor_lag")

    def __init__(self, model: mujoco.MjModel, qpos: np.ndarray, qvel: np.ndarray, sensed: np.ndarray, data):
        self.qpos, self.qvel, self.sensordata = (readonly(a) for a in (qpos, qvel, sensed))
        self.data = data
        self._sensors = sensor_slices(model)
        self.sensor_lag = sensor_lag(model)

    def sensor(self, name: str) -> np.ndarray:
        """One sensor's readings after the imperfections, ``(dim,)`` (``(n, dim)`` over a batch; read-only view).

        Raises:
          KeyError: no sensor of that name (the message lists them).
        """
        return self.sensordata[..., sensor_slice(self._sensors, name)]


def sensor_lag(model: mujoco.MjModel) -> float:
    """How far the loop's sensor readings lag the state it passes beside them, s: one physics step.

    ``mj_step`` computes the sensors from the state at the start of its step and then
    advances the state (RK4 too: its later stages skip the sensors), so a row's readings
    are of the state one ``timestep`` before its ``qpos``; the first row's, computed by
    ``mj_forward``, are of its own.
    """
    return float(model.opt.timestep)


def readonly(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array`` (what a controller is shown of the loop's own arrays)."""
    view = array.view()
    view.flags.writeable = False
    return view


def sensor_slices(model: mujoco.MjModel) -> dict[str, slice]:
    """Each sensor's slice of ``sensordata``, by name (``sensor<i>`` for an unnamed one)."""
    return {model.sensor(i).name or f"sensor{i}": slice(int(model.sensor_adr[i]),
                                                        int(model.sensor_adr[i] + model.sensor_dim[i]))
            for i in range(model.nsensor)}


def sensor_slice(slices: dict[str, slice], name: str) -> slice:
    """``slices[name]`` (:func:`sensor_slices`), or a KeyError listing the model's sensors."""
    if name not in slices:
        raise KeyError(f"no sensor {name!r}; the model's sensors: {', '.join(slices) or 'none'}")
    return slices[name]


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
        return self.sensordata[:, sensor_slice(sensor_slices(self.model), name)]

    def window(self, t0: float, t1: float = np.inf) -> np.ndarray:
        """Boolean mask of rows with ``t0 <= t < t1``."""
        return (self.t >= t0) & (self.t < t1)


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
