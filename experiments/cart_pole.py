"""The cart-pole balanced by an LQR designed only from MuJoCo's linearization (``mjcf/cart_pole.xml``).

``cart-pole-lqr`` linearizes the model at its upright keyframe, designs the regulator and runs it twice in
the generic closed loop (balancing from a tilt, a step of the cart), and checks the slowest mode's measured
decay against the designed pole.  The balancing serves any chain of poles on a cart (:mod:`.common.cart_chain`).
"""

from __future__ import annotations

import mujoco
import numpy as np

from ..analytic.cart_pole import CartPoleParams
from .common import cart_chain
from .core.margins import LoopSetup, register_loop
from .core.models import load_model
from .core.registry import Param, batched, experiment
from .core.regulator import Regulator
from .core.runner import Context

# The gallery's heading for this module's experiments, and the docs/derivations page of what they check.
GALLERY_HEADING = "Cart-pole and double pendulum on a cart: LQR from MuJoCo's linearization"
DERIVATION_PAGE = "cart-pole"

__all__ = ["cart_pole_params", "design", "WEIGHTS"]

MODEL = "cart_pole"
# LQR weights on [x, theta, xd, thetad] and on the cart force, with their --set names.
WEIGHTS = {"q_x": 1.0, "q_angle": 10.0, "q_xd": 1.0, "q_angled": 1.0, "r": 0.1}


def cart_pole_params(model) -> CartPoleParams:
    """The hand model's numbers (``crossdyn.analytic.cart_pole``) read from the MJCF."""
    pole = model.body("pole")
    return CartPoleParams(m_cart=float(model.body("cart").mass[0]), m_pole=float(pole.mass[0]),
                          lc=float(pole.ipos[2]), inertia=float(pole.inertia[1]), g=-float(model.opt.gravity[2]))


def design(weights: dict, mjcf: str | mujoco.MjModel = MODEL, names: dict | None = None) -> Regulator:
    """The cart-pole's LQR for ``weights`` (missing ones: :data:`WEIGHTS`): :func:`.cart_chain.design`."""
    return cart_chain.design(weights, mjcf, names or WEIGHTS)


PARAMS = cart_chain.lqr_params(MODEL, WEIGHTS, ["x, 1/m^2", "theta, 1/rad^2", "xd, s^2/m^2", "thetad, s^2/rad^2"],
                                Param(float(np.degrees(0.2)), "initial pole tilt, deg", -30.0, 30.0))


@experiment(
    "cart-pole-lqr",
    summary="LQR from MuJoCo's linearization balances a cart-pole from 0.2 rad and tracks a cart step",
    expected=cart_chain.EXPECTED,
    params=PARAMS,
    tolerances=cart_chain.TOLERANCES,
)
def cart_pole_lqr(ctx: Context) -> dict:
    return cart_chain.lqr_experiment(ctx, WEIGHTS, "cart-pole LQR")


@batched("cart-pole-lqr")
def cart_pole_lqr_batch(contexts: list[Context]) -> list:
    """Many runs of ``cart-pole-lqr`` at once (a sweep's): see :func:`lqr_batch`."""
    return cart_chain.lqr_batch(contexts, WEIGHTS)


@register_loop("cart-pole-lqr")
def _loop(params: dict, short: bool) -> LoopSetup:
    """The loop ``crossdyn margins cart-pole-lqr`` measures: the design for ``params``' weights."""
    mjcf = load_model(params["mjcf"])
    return cart_chain.loop_setup(cart_chain.design({k: params[k] for k in WEIGHTS}, mjcf, WEIGHTS), mjcf, short)
