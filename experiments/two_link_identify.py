"""Two-link arm: is the MJCF the robot?  Identify a robot that differs from mjcf/two_link_arm.xml from its logs.

``two-link-identify``: the robot is the shipped arm with the :data:`ROBOT` differences (commands 4 ms late);
a PD law on its noisy encoders tracks a multisine, and the log is identified against the shipped MJCF with
``crossdyn identify``'s fit: every truth inside its 95 % interval, the delay within 1 ms.
"""

from __future__ import annotations

import mujoco
import numpy as np

from .. import mjcf
from .core.identify.fit import Problem, fit_and_replay
from .core.identify.logs import load_log, write_log
from .core.identify.outputs import figure_signals, sentences
from .core.identify.record import multisine, record
from .core.identify.spec import parse_fit
from .core.registry import experiment

# The gallery's heading for this module's experiments, and the docs/derivations page of what they check.
GALLERY_HEADING = "Identification: is the MJCF the robot?"
DERIVATION_PAGE = "identification"

__all__ = ["ROBOT", "robot_model"]

# The robot's truth, by --fit QUANTITY (the delay is applied by the logger, not the model).
ROBOT = {"body:link2:mass": 0.125664 * 1.15, "joint:q1:damping": 0.003, "joint:q2:frictionloss": 0.002,
         "actuator:tau1:gear": 0.92, "delay": 0.004}
GAINS = np.array([0.8, 0.15])  # N m/rad: the arm's inertias are ~0.016 and ~0.002 kg m^2
NOISE = 5e-4  # rad: the encoders' white noise


def robot_model() -> mujoco.MjModel:
    """The robot: the shipped arm with the :data:`ROBOT` values (link 2's inertia scaled with its mass)."""
    spec = mujoco.MjSpec.from_file(str(mjcf.path("two_link_arm")))
    link2 = spec.body("link2")
    link2.inertia = np.array(link2.inertia) * 1.15
    link2.mass = ROBOT["body:link2:mass"]
    spec.joint("q1").damping = np.array([ROBOT["joint:q1:damping"], 0.0, 0.0])
    spec.joint("q2").frictionloss = ROBOT["joint:q2:frictionloss"]
    spec.actuator("tau1").gear = np.array([ROBOT["actuator:tau1:gear"], 0, 0, 0, 0, 0])
    return spec.compile()


@experiment("two-link-identify", summary="identify a two-link arm whose robot differs from its MJCF, from noisy, "
                                         "4 ms late logs",
            expected="every parameter's truth inside its 95 % interval, the delay within 1 ms")
def identify_arm(ctx) -> dict:
    duration = 3.0 if ctx.short else 10.0
    model = robot_model()
    excitation = np.random.default_rng(1)
    dt = model.opt.timestep
    t = np.arange(0.0, duration + dt / 2, dt)
    refs = np.stack([multisine(t, 0.8, excitation.uniform(0.1, 1.5, 5), excitation.uniform(0, 2 * np.pi, 5))
                     for _ in range(2)])

    def law(time: float, q: np.ndarray) -> np.ndarray:
        i = min(int(round(time / dt)), t.size - 1)
        return GAINS * (refs[:, i] - q) + np.array([0.05, 0.02]) * np.sin([3.1 * time, 4.3 * time])

    time, columns = record(model, lambda time, reading: law(time, reading.qpos), duration, noise={"qpos:*": NOISE},
                           delay=ROBOT["delay"], seed=ctx.seed, signals=["qpos:*"])
    path = write_log(ctx.out_dir / "robot.csv", time, columns)
    shipped = mujoco.MjModel.from_xml_path(str(mjcf.path("two_link_arm")))
    spec = mujoco.MjSpec.from_file(str(mjcf.path("two_link_arm")))
    problem = Problem(spec, parse_fit(list(ROBOT), shipped, spec, "two_link_arm.xml"), [load_log(path, shipped)],
                      threads=1, noise={"qpos:*": NOISE})  # the encoders' noise, as their datasheet would state it
    try:
        result, (measured,), (nominal,), (identified,) = fit_and_replay(problem)
    finally:
        problem.close()
    ctx.savefig(figure_signals(time, measured, nominal, identified, "two-link arm: the robot's log"),
                "identify.png")
    inside = {t.spec: bool(abs(float(v[0]) - ROBOT[t.spec]) <= float(h[0]))
              for t, v, h in zip(result.targets, result.value, result.half_width, strict=True)}
    delay = float(result.value[-1][0])
    passed = all(inside.values()) and all(result.identified) and abs(delay - ROBOT["delay"]) < 1e-3
    missed = [name for name, ok in inside.items() if not ok]
    return {"passed": passed,
            "measured": ("all 5 truths inside their intervals" if not missed else f"outside: {', '.join(missed)}")
            + f"; delay {delay * 1e3:.2f} ms",
            "detail": "\n".join(sentences(result)),
            "delay_ms": delay * 1e3, "truths_inside": sum(inside.values()),
            "residual_rms": {k: v for k, v in next(iter(result.residual_after.values())).items()}}
