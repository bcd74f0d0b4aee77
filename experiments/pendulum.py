"""Pendulum: the hand-derived inverse dynamics against ``mj_inverse`` (``mjcf/pendulum.xml``).

The worked example of the guide "Add a system": the smallest system that has
everything crossdyn asks of one, a model, a derivation, an experiment with its
plot, a gallery heading and a derivation page.  ``pendulum-lagrange`` reads the
rod's numbers from the compiled model (:func:`pendulum_params`), evaluates the
closed form of :mod:`crossdyn.analytic.pendulum` and MuJoCo at the same seeded
random states, and compares them term by term (mass matrix, velocity terms,
gravity); ``--set length_scale=1.1`` evaluates the closed form with the rod's
centre of mass 10 % further out, which the check then reports as a mismatch.
"""

from __future__ import annotations

from functools import partial

import mujoco

from ..analytic.pendulum import PendulumParams, inverse_dynamics
from .core import figures
from .core.checks.derivation import check_derivation
from .core.errors import ModelError
from .core.models import load_model
from .core.registry import Param, Verdict, experiment
from .core.runner import Context

# The gallery's heading for this module's experiments, and the docs/derivations page of what they check.
GALLERY_HEADING = "Pendulum: the worked example of adding a system"
DERIVATION_PAGE = "pendulum"

__all__ = ["pendulum_params"]

MODEL = "pendulum"


def pendulum_params(model: mujoco.MjModel, body: str = "rod") -> PendulumParams:
    """The pendulum's numbers from a compiled model: one hinge about world +y, gravity along -z.

    Raises:
      ModelError: the model is not one hinge carrying ``body``, or gravity is not along -z.
    """
    if model.njnt != 1 or model.jnt_type[0] != mujoco.mjtJoint.mjJNT_HINGE:
        raise ModelError(f"a pendulum has one hinge; this model has {model.njnt} joint(s)")
    if abs(model.opt.gravity[0]) + abs(model.opt.gravity[1]) > 0 or model.opt.gravity[2] >= 0:
        raise ModelError(f"a pendulum's gravity is along -z; this model's is {model.opt.gravity.tolist()}")
    rod = model.body(body)
    lc = float(abs(rod.ipos[2]))  # the centre of mass straight below the hinge at q = 0
    return PendulumParams(m=float(rod.mass[0]), lc=lc, inertia=float(rod.inertia[1]), g=float(-model.opt.gravity[2]))


@experiment(
    "pendulum-lagrange",
    summary="the pendulum's closed-form inverse dynamics against mj_inverse, term by term",
    expected="agree to round-off (1e-9 N m) over every state",
    params={"length_scale": Param(1.0, "scale on the centre-of-mass distance the closed form uses", 0.1, 10.0)},
)
def pendulum_lagrange(ctx: Context) -> dict:
    model = load_model(MODEL)
    p = pendulum_params(model)
    p = PendulumParams(p.m, ctx.params["length_scale"] * p.lc, p.inertia, p.g)
    report = check_derivation(partial(inverse_dynamics, p), model, samples=200 if ctx.short else 2000, seed=ctx.seed)
    ctx.savefig(figures.term_errors(report, f"pendulum: closed form vs mj_inverse ({report.diagnosis[:60]})"),
                "term_errors.png")
    verdict = Verdict(report.passed, f"max |error| {report.max_abs_error:.1e} N m")
    return {**verdict.as_metrics(), **report.to_dict()}
