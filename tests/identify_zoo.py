"""Hidden truths on public robots crossdyn's identification was never tuned on (tests/models/zoo/).

Each :class:`Case` names a public model, the robot's truth (a few of its parameters
changed, by ``--fit`` name), how the robot is run while it is logged (a controller designed
on the model, as a robot's would be) and what the log holds.  :func:`log` records it with
crossdyn's recorder at the stated noise (and an encoder's grid where the case has one), and
:func:`robot_mjcf` writes the truth as an MJCF for ``check model``.  Tests
(tests/test_identify_zoo.py) and the coverage benchmark (benchmarks/identify_coverage.py)
share them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from crossdyn.experiments.core.identify.logs import write_log
from crossdyn.experiments.core.identify.record import multisine, record
from crossdyn.experiments.core.regulator import regulator

ZOO = Path(__file__).parent / "models" / "zoo"


@dataclass(frozen=True)
class Case:
    """One public robot with a hidden truth.

    Attributes:
      name: the zoo folder (``panda``).
      truth: the robot's values by ``--fit`` name (a body's mass scales its inertia with it).
      duration: seconds logged.
      window: the replay's window, s.
      noise: the readings' white noise, ``{signal pattern: std}`` (also stated to identify).
      signals: the logged readings (globs).
      controller: ``controller(model, start) -> (t, reading) -> ctrl``, designed on the model (the MJCF as
        shipped) about the start keyframe.
      start: the keyframe the log starts from.
      resolution: readings rounded to an encoder's grid, ``{signal pattern: step}``.
      fit: what identify fits (default: the truth's names).
      stated: whether the noise is stated to identify and check model (else they find it: an encoder's grid).
    """

    name: str
    truth: dict[str, float]
    duration: float
    window: float
    noise: dict[str, float]
    signals: list[str]
    controller: Callable[[mujoco.MjModel, str], Callable]
    start: str
    resolution: dict[str, float] = field(default_factory=dict)
    fit: tuple[str, ...] = ()
    stated: bool = True

    @property
    def path(self) -> Path:
        return ZOO / self.name / f"{self.name}.xml"

    @property
    def fits(self) -> list[str]:
        return list(self.fit or self.truth)

    @property
    def noise_stated(self) -> dict[str, float] | None:
        """The noise identify and check model are told (None: left to them)."""
        return self.noise if self.stated else None


def _servo_sway(amplitude: float, seed: int = 11) -> Callable[[mujoco.MjModel, str], Callable]:
    """Position servos: setpoints swaying about the start keyframe's pose (a multisine per actuator)."""
    def make(model: mujoco.MjModel, start: str) -> Callable:
        rng = np.random.default_rng(seed)
        key = model.key(start).id
        centre = model.key_qpos[key][model.jnt_qposadr[model.actuator_trnid[:, 0]]]
        freqs = [rng.uniform(0.3, 1.5, 4) for _ in range(model.nu)]
        phases = [rng.uniform(0, 2 * np.pi, 4) for _ in range(model.nu)]
        low, high = model.actuator_ctrlrange[:, 0], model.actuator_ctrlrange[:, 1]

        def control(t: float, reading) -> np.ndarray:
            sway = np.array([multisine(np.array([t]), amplitude, f, p)[0] for f, p in zip(freqs, phases, strict=True)])
            return np.clip(centre + sway, low + 0.05, high - 0.05)
        return control
    return make


def _balance(Q, R, push: float) -> Callable[[mujoco.MjModel, str], Callable]:
    """An LQR about the start pose (crossdyn's regulator on the model) plus a multisine push on its command."""
    def make(model: mujoco.MjModel, start: str) -> Callable:
        reg = regulator(model, Q, R, keyframe=start, dt=model.opt.timestep)  # designed at the loop's rate
        rng = np.random.default_rng(5)
        f, p = rng.uniform(0.3, 2.0, 5), rng.uniform(0, 2 * np.pi, 5)

        def control(t: float, reading) -> np.ndarray:
            return reg(t, reading) + multisine(np.array([t]), push, f, p)[0]
        return control
    return make


def _torque(amplitude: float) -> Callable[[mujoco.MjModel, str], Callable]:
    """Open-loop torques: a multisine per actuator."""
    def make(model: mujoco.MjModel, start: str) -> Callable:
        rng = np.random.default_rng(3)
        f, p = rng.uniform(0.2, 1.2, 5), rng.uniform(0, 2 * np.pi, 5)
        return lambda t, reading: np.full(model.nu, multisine(np.array([t]), amplitude, f, p)[0])
    return make


CASES = {case.name: case for case in (
    # A 7-dof arm with stiff position servos: a link 20 % heavier, two joints damped more.
    Case("panda", {"body:link5:mass": 1.225946 * 1.2, "joint:joint2:damping": 1.5, "joint:joint4:damping": 1.3},
         duration=2.0, window=0.5, noise={"qpos:*": 5e-4}, signals=["qpos:*"], controller=_servo_sway(0.4),
         start="home"),
    # A torque-driven arm under gravity, balanced upright by an LQR on its elbow alone (unstable open loop).
    Case("acrobot", {"body:lower_arm:mass": 1.2, "joint:shoulder:damping": 0.1},
         duration=3.0, window=0.3, noise={"qpos:*": 1e-3}, signals=["qpos:*"],
         controller=_balance([100, 100, 1, 1], 0.1, 0.05), start="upright"),
    # A floating-base quadruped standing on the floor, its servos swaying it; the base's pose logged (motion capture).
    # Windows of 0.2 s: at 0.05 s each window's 37 start corrections (base and legs, positions and velocities from
    # 50 noisy samples) bias the trunk's mass low by 2-4 of its own standard errors (benchmarks/identify_coverage.py).
    Case("a1", {"body:trunk:mass": 4.713 * 1.3},
         duration=0.4, window=0.2, noise={"qpos:*": 5e-4}, signals=["qpos:*"], controller=_servo_sway(0.15),
         start="stand"),
    # A cart-pole balanced in closed loop, pushed: the pole 20 % heavier, the slider damped.
    Case("cartpole", {"body:pole_1:mass": 0.13, "joint:slider:damping": 0.5},
         duration=4.0, window=0.5, noise={"qpos:*": 1e-3}, signals=["qpos:*"],
         controller=_balance([1, 100, 1, 1], 0.1, 0.8), start="upright"),
    # A pendulum read by a 4096-count encoder (0.2 mrad of noise before the rounding, which dominates: the
    # noise is the grid's, found from the readings, not stated): the hinge damped more, the bob heavier.
    Case("pendulum", {"body:pole:mass": 1.1, "joint:hinge:damping": 0.13},
         duration=10.0, window=0.5, noise={"qpos:*": 2e-4}, signals=["qpos:*"], controller=_torque(0.9),
         start="hanging", resolution={"qpos:*": 2 * np.pi / 4096}, stated=False),
)}


def robot_spec(case: Case) -> mujoco.MjSpec:
    """The robot: the case's model with its truth (a body's inertia scaled with its mass)."""
    spec = mujoco.MjSpec.from_file(str(case.path))
    model = spec.compile()
    for name, value in case.truth.items():
        kind, element, attr = name.split(":")
        if kind == "body":
            b = model.body(element)
            body = spec.body(element)
            body.explicitinertial = True
            body.mass, body.inertia = value, np.array(b.inertia) * value / float(b.mass[0])
            body.ipos, body.iquat = np.array(b.ipos), np.array(b.iquat)
            body.fullinertia = np.full(6, np.nan)
        elif kind == "joint" and attr == "damping":
            spec.joint(element).damping = np.array([value, 0.0, 0.0])
        elif kind == "joint":
            setattr(spec.joint(element), attr, value)
        else:
            gear = np.array(spec.actuator(element).gear)
            gear[0] = value
            spec.actuator(element).gear = gear
    return spec


def robot_mjcf(case: Case, folder: Path) -> Path:
    """The robot as an MJCF file in ``folder`` (beside copies of the model's included files)."""
    import shutil

    for item in case.path.parent.iterdir():
        if item.is_dir() and not (folder / item.name).exists():
            shutil.copytree(item, folder / item.name)
    path = folder / f"{case.name}_robot.xml"
    path.write_text(robot_spec(case).to_xml())
    return path


def log(case: Case, path: Path, seed: int = 0) -> Path:
    """The robot's log (commands sent, readings with the case's noise) at ``path``; ``seed``: the noise's."""
    model = mujoco.MjModel.from_xml_path(str(case.path))
    robot = robot_spec(case).compile()
    key = model.key(case.start).id
    time, columns = record(robot, case.controller(model, case.start), case.duration, noise=case.noise, seed=seed,
                           qpos=model.key_qpos[key], signals=case.signals, resolution=case.resolution)
    return write_log(path, time, columns)
