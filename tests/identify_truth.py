"""A hidden truth for identification: logs of an arm that differs from its MJCF (tests and benchmarks).

The robot is tests/models/identify_arm.xml with link 2 15 % heavier (mass and
rotational inertia: the same shape in a denser material), the shoulder's damping
tripled, friction on the elbow (0.03 N m where the model has none), the shoulder
motor's gear 8 % lower, its commands reaching the motors 4 ms late, and 0.5 mrad
of white encoder noise.  A PD law on the noisy encoders tracks a multisine, so the
logged commands are a controller's outputs, as on a robot.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np

from crossdyn.experiments.core.identify.logs import write_log
from crossdyn.experiments.core.identify.record import multisine, record

ARM = Path(__file__).parent / "models" / "identify_arm.xml"
FIT = ["body:link2:mass", "joint:shoulder:damping", "joint:elbow:frictionloss", "actuator:shoulder_motor:gear",
       "delay"]
TRUTH = {"body:link2:mass": 0.4 * 1.15, "joint:shoulder:damping": 0.06, "joint:elbow:frictionloss": 0.03,
         "actuator:shoulder_motor:gear": 0.92, "delay": 0.004}
NOISE = 5e-4  # rad, the encoders' white noise
GAINS = np.array([4.0, 1.5])  # N m/rad: tracks the reference without exciting the elbow's fast mode


def truth_model(path: Path = ARM) -> mujoco.MjModel:
    """The robot: the arm's MJCF with the TRUTH values (not the delay: :func:`arm_log` applies it)."""
    spec = mujoco.MjSpec.from_file(str(path))
    link2 = spec.body("link2")
    link2.inertia = np.array(link2.inertia) * 1.15
    link2.mass = TRUTH["body:link2:mass"]
    damping = np.array(spec.joint("shoulder").damping)
    damping[0] = TRUTH["joint:shoulder:damping"]
    spec.joint("shoulder").damping = damping
    spec.joint("elbow").frictionloss = TRUTH["joint:elbow:frictionloss"]
    gear = np.array(spec.actuator("shoulder_motor").gear)
    gear[0] = TRUTH["actuator:shoulder_motor:gear"]
    spec.actuator("shoulder_motor").gear = gear
    return spec.compile()


def arm_log(out: Path, *, seed: int, duration: float, excitation_seed: int = 1, noise: float = NOISE,
            model: mujoco.MjModel | None = None, delay: float = TRUTH["delay"]) -> Path:
    """Write the robot's log (commands sent, noisy encoders) to ``out`` (.csv or .npz); ``seed``: the noise's."""
    model = model if model is not None else truth_model()
    rng = np.random.default_rng(excitation_seed)
    dt = model.opt.timestep
    t = np.arange(0.0, duration + dt / 2, dt)
    refs = np.stack([multisine(t, 0.8, rng.uniform(0.1, 1.5, 5), rng.uniform(0, 2 * np.pi, 5)) for _ in range(2)])

    def law(time: float, q: np.ndarray) -> np.ndarray:
        i = min(int(round(time / dt)), t.size - 1)
        return GAINS * (refs[:, i] - q) + np.array([0.3, 0.2]) * np.sin([3.1 * time, 4.3 * time])

    time, columns = record(model, lambda time, reading: law(time, reading.qpos[:2]), duration,
                           noise={"qpos:*": noise}, delay=delay, seed=seed, signals=["qpos:shoulder", "qpos:elbow"])
    return write_log(out, time, columns)
