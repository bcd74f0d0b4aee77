"""The rigid box of the rigid-body section of a robotics lecture against MuJoCo (docs/derivations/rigid-box.md).

``box-free-rotation`` (:mod:`.free_rotation`), ``box-pulled`` (:mod:`.pulled_box`) and ``box-ground-contact``
(:mod:`.ground_contact`) on ``mjcf/rigid_box.xml`` and ``mjcf/rigid_box_ground.xml``; :mod:`.model` reads the
box from the compiled model, :mod:`.integrators` runs MuJoCo's integrators, :mod:`.plots` draws.  Each
experiment is a computation returning a frozen result, a ``judge_*`` and a ``plot_*``, composed below.
"""

from __future__ import annotations

from ..core.registry import Param, experiment
from ..core.runner import Context
from .free_rotation import (
    DRIFT_RATIO_MIN,
    OMEGA0,
    OMEGA_TOL,
    FreeRotationResult,
    free_rotation,
    judge_free_rotation,
)
from .ground_contact import (
    BOUNCE_RTOL,
    CONTACT_DURATION,
    DEFAULT_SOLIMP,
    DROP_HEIGHT,
    FLAT,
    REST_RTOL,
    SETTLE_BAND,
    SHORT_CONTACT_DURATION,
    SLIDE_RTOL,
    SLIDE_SPEED,
    BoxContactParams,
    ContactResult,
    DropRun,
    contact_metrics,
    contact_params,
    contact_predictions,
    drop,
    ground_contact,
    judge_contact,
    solref_from_penalty,
)
from .integrators import INTEGRATORS, mujoco_trajectory, rotation_angle
from .model import (
    BODY,
    DURATION,
    GROUND_MODEL,
    MODEL,
    SHORT_DURATION,
    application_point,
    rigid_body_params,
)
from .plots import plot_contact, plot_free_rotation, plot_pulled
from .pulled_box import (
    FORCE,
    POSE_TOL,
    TRANSLATION_RTOL,
    PulledResult,
    PulledRun,
    judge_pulled,
    pulled,
    pulled_box,
)

# The gallery's heading for this module's experiments, and the docs/derivations page of what they check.
GALLERY_HEADING = "Rigid box and inertia table"
DERIVATION_PAGE = "rigid-box"

__all__ = ["rigid_body_params", "application_point", "mujoco_trajectory", "rotation_angle", "INTEGRATORS",
           "FreeRotationResult", "free_rotation", "judge_free_rotation", "plot_free_rotation", "PulledRun", "pulled",
           "PulledResult", "pulled_box", "judge_pulled", "plot_pulled", "BoxContactParams", "contact_params",
           "solref_from_penalty", "contact_metrics", "DropRun", "drop", "ContactResult", "ground_contact",
           "contact_predictions", "judge_contact", "plot_contact", "MODEL", "GROUND_MODEL", "BODY", "DURATION",
           "SHORT_DURATION", "OMEGA0", "OMEGA_TOL", "DRIFT_RATIO_MIN", "FORCE", "POSE_TOL", "TRANSLATION_RTOL",
           "DROP_HEIGHT", "SLIDE_SPEED", "CONTACT_DURATION", "SHORT_CONTACT_DURATION", "SETTLE_BAND", "FLAT",
           "DEFAULT_SOLIMP", "REST_RTOL", "BOUNCE_RTOL", "SLIDE_RTOL"]


@experiment(
    "box-free-rotation",
    summary="torque-free box, omega0=[1,1,1] rad/s, 10 s at 1 ms: first-order step / RK4 / MuJoCo vs reference",
    expected=(f"MuJoCo RK4 omega within {OMEGA_TOL:g} rad/s of the reference; "
              "RK4 drifts >= 100x less than the first-order step"),
)
def run_free_rotation(ctx: Context) -> dict:
    result = free_rotation(SHORT_DURATION if ctx.short else DURATION)
    plot_free_rotation(result, ctx.out_dir)
    return judge_free_rotation(result)[1]


@experiment(
    "box-pulled",
    summary="pulled box: 50 N along world x at the CoM (A) and at (0,0,0.3) m (B), 10 s; vs reference",
    expected=f"A: omega = 0, x = f t^2/2m to {TRANSLATION_RTOL:g}; B: RK4, reference, MuJoCo RK4 agree to "
    f"{POSE_TOL:g}",
)
def run_pulled(ctx: Context) -> dict:
    result = pulled_box(SHORT_DURATION if ctx.short else DURATION)
    plot_pulled(result, ctx.out_dir)
    return judge_pulled(result)[1]


@experiment(
    "box-ground-contact",
    summary=("box dropped (and sliding) on the ground: penalty spring-dampers at the corners vs "
             "MuJoCo soft contact matched to (K, D)"),
    expected=f"drop: rest penetration within {REST_RTOL:.0%}, bounce within {BOUNCE_RTOL:.0%}; slides within "
    f"{SLIDE_RTOL:.0%} of v0^2/2 mu g; differences explained",
    params={"slide_speed": Param(SLIDE_SPEED, "initial horizontal speed of the sliding case, m/s", 0.0, 10.0)},
)
def run_contact(ctx: Context) -> dict:
    result = ground_contact(float(ctx.params.get("slide_speed", SLIDE_SPEED)),
                            SHORT_CONTACT_DURATION if ctx.short else CONTACT_DURATION)
    plot_contact(result, ctx.out_dir)
    return judge_contact(result)[1]
