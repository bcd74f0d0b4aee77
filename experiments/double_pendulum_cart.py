"""A double inverted pendulum on a cart, balanced by an LQR from MuJoCo's linearization alone.

``mjcf/double_pendulum_cart.xml``: two poles in a chain on a cart, state ``[x, lower, upper, xd, lowerd, upperd]``
(the upper angle relative to the lower).  ``double-pendulum-cart-lqr`` is balanced and judged exactly as the
cart-pole (:mod:`.common.cart_chain`), from the lower pole tilted 5 deg.
"""

from __future__ import annotations

from .common import cart_chain
from .core.margins import LoopSetup, register_loop
from .core.models import load_model
from .core.registry import Param, batched, experiment
from .core.runner import Context

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
    expected=cart_chain.EXPECTED,
    params=cart_chain.lqr_params(
        MODEL, WEIGHTS, ["x, 1/m^2", "the lower pole's angle, 1/rad^2", "the upper pole's relative angle, 1/rad^2",
                         "xd, s^2/m^2", "the lower pole's rate, s^2/rad^2",
                         "the upper pole's relative rate, s^2/rad^2"],
        Param(5.0, "initial tilt of the lower pole (the upper aligned with it), deg", -15.0, 15.0)),
    tolerances=cart_chain.TOLERANCES,
)
def double_pendulum_cart_lqr(ctx: Context) -> dict:
    return cart_chain.lqr_experiment(ctx, WEIGHTS, "double pendulum on a cart, LQR")


@batched("double-pendulum-cart-lqr")
def double_pendulum_cart_lqr_batch(contexts: list[Context]) -> list:
    """Many runs of ``double-pendulum-cart-lqr`` at once (a sweep's), each as run alone."""
    return cart_chain.lqr_batch(contexts, WEIGHTS)


@register_loop("double-pendulum-cart-lqr")
def _loop(params: dict, short: bool) -> LoopSetup:
    """The loop ``crossdyn margins double-pendulum-cart-lqr`` measures: the design for ``params``' weights."""
    mjcf = load_model(params["mjcf"])
    return cart_chain.loop_setup(cart_chain.design({k: params[k] for k in WEIGHTS}, mjcf, WEIGHTS), mjcf, short)
