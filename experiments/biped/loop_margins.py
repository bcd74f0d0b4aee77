"""The biped's balance loop broken at a wheel motor, measured in MuJoCo beside its design (``crossdyn margins``).

The controller is designed on a simpler model than the robot it drives: the wheeled
pendulum (the body on rigid massless legs of the stance height, on two wheels) with the
steering model (the heading a pure inertia), closed by the LQR's row at that height and
the yaw PD (:func:`~crossdyn.controllers.biped.controller.wheel_loops`).  The designed loop at the
left wheel is that model's ``K_L (sI - A + B_R K_R)^-1 B_L``, the right wheel's loop
closed.  The measured loop is MuJoCo's whole robot with the left wheel's command broken
and every other loop closed: the five-bar legs, whose links the design's model leaves
out, under the legs' own controller; the contacts; the estimator reading the sensors; the
1 kHz hold.  The two are reported side by side and need not agree: where they differ is
what the design's model leaves out.

Two loops are registered (``crossdyn margins NAME``), and their experiments draw them:

- ``balance-recovery``: the robot as the closed-loop experiments run it (its estimator and
  gain-scheduled LQR, its imperfections when set), upright at mid-stroke.
- ``lqr-cost``: the ideal robot of the LQR's own check (rigid massless legs, the design's
  own model built in MuJoCo) under the same laws fed MuJoCo's state: there the measured
  loop is the designed one, which shows the measurement, not the model, is right.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import mujoco
import numpy as np

from ...analytic.biped.wheeled_pendulum import PendulumParams, linearize_pendulum
from ...analytic.rotation import euler_rates, euler_zyx
from ...controllers.biped.controller import BipedController, wheel_loops
from ...controllers.lqr import lqr
from ..core.margins import LoopDesign, LoopSetup, register_loop
from .closed_loop import Scenario, initial_state, loop_controller
from .model import LINKS, WHEELS, balance_pose, biped_params, build, nominal_params
from .scenarios import (
    ALPHA_NOMINAL,
    CONTROL_PERIOD,
    Setup,
    balance_scenario,
    controller_for,
    imperfections_for,
    robot,
)

__all__ = ["BROKEN_AT", "FREQUENCIES", "SHORT_FREQUENCIES", "balance_loop", "ideal_loop", "leg_link_mass"]

BROKEN_AT = "left_wheel"  # the loop is broken at this motor; the right wheel's and the legs' stay closed
# rad/s: the phase crosses -180 deg near 2.5 rad/s (the unstable pendulum's lower gain margin) and the gain
# crosses 0 dB between 20 and 35 rad/s; a short run starts at 1.5 rad/s (a 4 s period, 12.6 s of robot in all).
FREQUENCIES, SHORT_FREQUENCIES = np.geomspace(0.5, 150.0, 26), np.geomspace(1.5, 100.0, 12)


def leg_link_mass(model: mujoco.MjModel) -> float:
    """The mass of the legs' eight links, which the wheeled pendulum leaves out, kg."""
    return float(sum(model.body_mass[model.body(name).id] for name in LINKS))


def _design(p: PendulumParams, controller: BipedController, length: float, K=None) -> LoopDesign:
    """The controller's wheel loops on the wheeled pendulum ``p`` at leg ``length``."""
    A, B, Kw = wheel_loops(p, controller.gains, length, K)
    return LoopDesign(A, B, Kw, inputs=WHEELS, plant=f"the wheeled pendulum (body {p.M:g} kg on rigid massless legs "
                      f"{length:.3g} m long, wheels {p.m:g} kg) and the steering model")


class _EachRun:
    """The biped's estimator and controller made afresh for each run (both keep state): copies of ``controller``."""

    def __init__(self, scenario: Scenario, controller: BipedController):
        self.scenario, self.controller, self.control_dt = scenario, controller, scenario.control_period
        self.plug: Any = None  # the run's, made in start

    def start(self, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        self.plug, _ = loop_controller(model, self.scenario, copy.deepcopy(self.controller))
        self.plug.start(model, data)

    def write_command(self, t: float, sensed: np.ndarray, command: np.ndarray) -> bool:
        return self.plug.write_command(t, sensed, command)


@register_loop("balance-recovery")
def balance_loop(params: dict, short: bool, seed: int = 0) -> LoopSetup:
    """The robot upright at mid-stroke under its controller (the experiments' ``--set`` parameters), broken at
    :data:`BROKEN_AT`; designed on the nominal robot's wheeled pendulum, as the gains are."""
    setup = Setup.from_values({**params, "seed": seed})
    model = robot(setup)
    controller = controller_for(setup)
    scenario = replace(balance_scenario(0.0, mjcf=setup.mjcf), ground_truth=bool(setup.ground_truth))
    _, fall = loop_controller(model, scenario, controller)
    nominal = nominal_params(setup.mjcf)
    length = float(nominal.leg_height(ALPHA_NOMINAL))
    legs = leg_link_mass(model)
    above = float(model.body_subtreemass[model.body("body").id]) - 2 * biped_params(model).pendulum.m
    note = (f"designed on the wheeled pendulum, the body on rigid massless legs; measured on MuJoCo's whole robot, "
            f"whose five-bar legs weigh {legs:.3g} kg of the {above:.3g} kg above the wheels and move under "
            "their own controller, with the estimator reading the sensors: the two need not agree, and where they "
            "differ is what the design's model leaves out")
    return LoopSetup(model, _EachRun(scenario, controller), CONTROL_PERIOD,
                     imperfections=tuple(imperfections_for(setup)),
                     frequencies=tuple(SHORT_FREQUENCIES if short else FREQUENCIES), actuator=BROKEN_AT,
                     qpos=initial_state(model, biped_params(model), scenario),
                     design=_design(nominal.pendulum, controller, length), stop=fall, seed=seed, note=note)


class _TrueState:
    """The wheel loops' law ``u = -K x`` on MuJoCo's state of the ideal robot, ``x = [x, xd, theta, thetad, psi,
    psid]``: the axle midpoint's travel and speed along the heading, the pitch and heading and their rates."""

    def __init__(self, model: mujoco.MjModel, K: np.ndarray, control_dt: float):
        root = model.joint("root")
        self.quat = slice(int(root.qposadr[0]) + 3, int(root.qposadr[0]) + 7)
        self.omega = slice(int(root.dofadr[0]) + 3, int(root.dofadr[0]) + 6)
        self.axles = [model.site(f"{side}_axle").id for side in ("left", "right")]
        self.wheels = [model.actuator(name).id for name in WHEELS]
        self.K, self.control_dt, self.nu = K, control_dt, model.nu
        self.model, self.origin = model, None
        self.velocity = np.zeros(6)

    def start(self, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        self.model, self.origin = model, None  # the run's model (imperfections may have copied it)

    def __call__(self, t: float, obs) -> np.ndarray:
        model, data = self.model, obs.data
        roll, pitch, yaw = (float(a) for a in euler_zyx(obs.qpos[self.quat]))
        _, pitch_rate, yaw_rate = (float(a) for a in euler_rates(roll, pitch, obs.qvel[self.omega]))
        heading = np.array([np.cos(yaw), np.sin(yaw)])
        axle = 0.5 * (data.site_xpos[self.axles[0], :2] + data.site_xpos[self.axles[1], :2])
        if self.origin is None:
            self.origin = axle.copy()
        speed = np.zeros(2)
        for site in self.axles:
            mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_SITE, site, self.velocity, 0)
            speed += 0.5 * self.velocity[3:5]
        state = np.array([(axle - self.origin) @ heading, speed @ heading, pitch, pitch_rate, yaw, yaw_rate])
        u = np.zeros(self.nu)
        u[self.wheels] = -self.K @ state
        return u


@register_loop("lqr-cost")
def ideal_loop(params: dict, short: bool, seed: int = 0) -> LoopSetup:
    """The ideal robot of ``lqr-cost`` (rigid massless legs at mid-stroke) under its LQR and the controller's yaw
    PD, fed MuJoCo's state at the controller's 1 kHz, broken at :data:`BROKEN_AT`: the design's own model."""
    setup = Setup.from_values(params)
    model = build(legs="massless", rigid_alpha=ALPHA_NOMINAL, mjcf=setup.mjcf)
    p = biped_params(model)
    length = float(p.leg_height(ALPHA_NOMINAL))
    controller = controller_for(setup)  # its weights (the defaults where params set none) and its yaw PD
    K = lqr(*linearize_pendulum(p.pendulum, length), np.diag(controller.gains.Q),
            np.array([[controller.gains.R]])).K  # lqr-cost's analytic design, exactly
    design = _design(p.pendulum, controller, length, K)
    qpos, _ = balance_pose(model, ALPHA_NOMINAL, p)
    note = ("measured on the ideal robot, the design's own model built in MuJoCo (rigid massless legs, "
            "MuJoCo's state fed to the laws): the measured loop should be the designed one")
    return LoopSetup(model, _TrueState(model, design.K, CONTROL_PERIOD), CONTROL_PERIOD,
                     frequencies=tuple(SHORT_FREQUENCIES if short else FREQUENCIES), actuator=BROKEN_AT, qpos=qpos,
                     design=design, seed=seed, note=note)
