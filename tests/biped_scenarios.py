"""Closed-loop runs of the biped that visit every branch of its estimator and controller.

Shared by the tests that drive the per-step code two ways and compare (the plain-float
path against the library's arrays, the compiled step against the readable classes).
"""

from __future__ import annotations

import numpy as np

from crossdyn.controllers.biped.jump import JumpPlan
from crossdyn.experiments.biped import closed_loop, scenarios


def branch_scenarios(push_after: float):
    """``(name, Scenario, JumpPlan or None)``: a push (at ``push_after`` s), a jump through all its
    phases, velocity, heading and height references together, and a turn past +-180 deg."""
    period = scenarios.CONTROL_PERIOD
    yield "push", scenarios.push_scenario(15.0, 0.1, after=push_after), None
    jump, low = JumpPlan(), scenarios.stance_height(JumpPlan().alpha_crouch)  # as scenarios.jump
    yield "jump", closed_loop.Scenario(duration=3.0, alpha0=np.radians(200.0), control_period=period,
                                       reference=lambda t: scenarios.Reference(height=low), jump=jump), jump
    height = scenarios.stance_height(scenarios.ALPHA_NOMINAL)
    yield "move-turn-height", closed_loop.Scenario(
        duration=2.0, alpha0=scenarios.ALPHA_NOMINAL, control_period=period,
        reference=lambda t: scenarios.Reference(velocity=0.5 if t > 0.2 else 0.0, yaw=0.8 if t > 1.0 else 0.0,
                                                height=height + (0.05 if t > 0.5 else 0.0))), None
    # Heading 3.0 rad, then 3.3: on through +pi, where the IMU's yaw wraps and the estimator counts a turn.
    yield "turn-past-pi", closed_loop.Scenario(
        duration=3.0, alpha0=scenarios.ALPHA_NOMINAL, control_period=period,
        reference=lambda t: scenarios.Reference(yaw=3.0 if t < 1.5 else 3.3)), None
