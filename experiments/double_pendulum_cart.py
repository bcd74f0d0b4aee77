"""A double inverted pendulum on a cart, balanced by an LQR from MuJoCo's linearization alone.

``mjcf/double_pendulum_cart.xml``: two 0.5 m poles in a chain on a cart, state
``[x, lower, upper, xd, lowerd, upperd]`` (the upper pole's angle relative to the
lower one).  ``double-pendulum-cart-lqr`` designs its regulator exactly as the
cart-pole's (:mod:`crossdyn.experiments.common.cart_chain`: linearize at the upright
keyframe, ``control.lqr``), balances it from the lower pole tilted 5 deg, tracks a
cart step, and checks the slowest closed-loop mode's measured decay against the
design.
"""

from __future__ import annotations

import numpy as np

from crossdyn.experiments.common.cart_chain import (
    DECAY_TOL,
    balance,
    design,
    judge,
    lqr_batch,
    model_param,
    plot,
    step,
    weight_params,
)
from crossdyn.experiments.core.models import load_model
from crossdyn.experiments.core.registry import Param, batched, experiment
from crossdyn.experiments.core.results import Context

# The gallery's heading for this module's experiments, and the docs/derivations page of what they check.
GALLERY_HEADING = "Cart-pole and double pendulum on a cart: LQR from MuJoCo's linearization"
DERIVATION_PAGE = "cart-pole"

__all__ = ["WEIGHTS", "MODEL"]

MODEL = "double_pendulum_cart"
# LQR weights on [x, lower, upper, xd, lowerd, upperd] and on the cart force, with their --set names.
WEIGHTS = {"q_x": 1.0, "q_lower": 100.0, "q_upper": 100.0, "q_xd": 1.0, "q_lowerd": 1.0, "q_upperd": 1.0,
           "r": 0.1}


@experiment(
    "double-pendulum-cart-lqr",
    summary="LQR from MuJoCo's linearization balances a double inverted pendulum on a cart from 5 deg",
    expected=f"balanced and tracked; slowest mode decays within {100 * DECAY_TOL:g} % of the designed pole",
    params={
        **weight_params(WEIGHTS, ["x, 1/m^2", "the lower pole's angle, 1/rad^2", "the upper pole's relative "
                                  "angle, 1/rad^2", "xd, s^2/m^2", "the lower pole's rate, s^2/rad^2",
                                  "the upper pole's relative rate, s^2/rad^2"]),
        "initial_angle_deg": Param(5.0, "initial tilt of the lower pole (the upper aligned with it), deg",
                                   -15.0, 15.0),
        "step_m": Param(0.5, "cart step along the rail, m", -1.5, 1.5),
        "mjcf": model_param(MODEL),
    },
    tolerances={"settling_time_s": 0.02, "step_settling_time_s": 0.02},
)
def double_pendulum_cart_lqr(ctx: Context) -> dict:
    mjcf = load_model(ctx.params["mjcf"])  # compiled once for the design and both runs
    reg = design({k: ctx.params[k] for k in WEIGHTS}, mjcf, WEIGHTS)
    duration = 6.0 if ctx.short else 8.0
    balanced = balance(reg, np.radians(ctx.params["initial_angle_deg"]), duration, mjcf)
    stepped = step(reg, ctx.params["step_m"], duration, mjcf)
    verdict, metrics = judge(reg, balanced, stepped, ctx.params["step_m"])
    if ctx.plots:  # a sweep's runs draw nothing
        ctx.savefig(plot(reg, balanced, stepped, f"double pendulum on a cart, LQR: {verdict.measured}"),
                    "states.png")
    return {**verdict.as_metrics(), **metrics}


@batched("double-pendulum-cart-lqr")
def double_pendulum_cart_lqr_batch(contexts: list[Context]) -> list:
    """Many runs of ``double-pendulum-cart-lqr`` at once (a sweep's), each as run alone."""
    return lqr_batch(contexts, WEIGHTS)
