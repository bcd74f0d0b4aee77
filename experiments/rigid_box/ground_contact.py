"""The box on the ground: the penalty contact of a robotics lecture against MuJoCo's soft contact.

``box-ground-contact`` drops the flat box, and slides it, with the penalty-corner model
(``analytic.rigid_box.simulate_penalty``) and in MuJoCo with ``solref`` converted from the penalty's
(K, D) (:func:`solref_from_penalty`); a third drop with MuJoCo's default impedance shows why the impedance
must be small for the two to match.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import mujoco
import numpy as np

from ...analytic import rigid_box as rb
from ..core.errors import ModelError
from ..core.models import load_model
from ..core.registry import Verdict
from .integrators import mujoco_trajectory
from .model import BODY, GROUND_MODEL, rigid_body_params

__all__ = ["DROP_HEIGHT", "SLIDE_SPEED", "CONTACT_DURATION", "SHORT_CONTACT_DURATION", "SETTLE_BAND", "FLAT",
           "DEFAULT_SOLIMP", "REST_RTOL", "BOUNCE_RTOL", "SLIDE_RTOL", "BoxContactParams", "contact_params",
           "solref_from_penalty", "contact_metrics", "DropRun", "drop", "ContactResult", "ground_contact",
           "contact_predictions", "judge_contact"]

DROP_HEIGHT = 0.1  # m, gap between the box's lowest face and the ground at release
SLIDE_SPEED = 1.0  # m/s along world x, the second contact case
CONTACT_DURATION, SHORT_CONTACT_DURATION = 3.0, 1.5  # s
SETTLE_BAND = 1e-4  # m: settled once the CoM height stays within this of its final value
# The box lies flat: body z (0.8 m) along world x, body x (0.1 m) vertical.
FLAT = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])
# MuJoCo's default impedance, for the variant that shows why d must be small to match a penalty model.
DEFAULT_SOLIMP = (0.9, 0.95, 0.001, 0.5, 2.0)
# Matched MuJoCo vs the penalty model: rest penetration to 1%, bounce to 5% (the O(d), O(A/R) departures
# from the penalty limit are ~1e-4, yet MuJoCo's default impedance fails them); each furthest slide within
# 20% of v0^2/(2 mu g) (the penalty's tangential springs stretch mu m g/(4 Kt) before slipping).
REST_RTOL, BOUNCE_RTOL, SLIDE_RTOL = 1e-2, 5e-2, 0.2


@dataclass(frozen=True)
class BoxContactParams:
    """Everything the penalty-contact simulation needs, read from the ground model: the body, its half
    sizes ``(3,)`` m, the penalty ground, gravity ``(3,)`` m/s^2 and MuJoCo's contact mass ``1/invweight0``, kg.
    """

    body: rb.RigidBodyParams
    half_sizes: np.ndarray
    ground: rb.PenaltyGround
    gravity: np.ndarray
    m_eff: float


def _numeric(model: mujoco.MjModel, name: str) -> float:
    try:
        return float(model.numeric(name).data[0])
    except KeyError:
        raise ModelError(f"model has no <numeric name={name!r}> (the penalty ground parameters, see "
                         f"mjcf/{GROUND_MODEL}.xml)") from None


def contact_params(model: mujoco.MjModel, name: str = BODY) -> BoxContactParams:
    """Read the box, the penalty ground and gravity from the ground model.

    Raises:
      ModelError: missing numerics, no box geom, or a solref that is not the
        conversion of the model's own (K, D) (:func:`solref_from_penalty`).
    """
    body = rigid_body_params(model, name)
    bid = model.body(name).id
    geoms = [g for g in range(model.ngeom)
             if model.geom_bodyid[g] == bid and model.geom_type[g] == mujoco.mjtGeom.mjGEOM_BOX]
    if len(geoms) != 1:
        raise ModelError(f"body {name!r} needs exactly one box geom for the contact experiment, found {len(geoms)}")
    geom = geoms[0]
    ground = rb.PenaltyGround(K=_numeric(model, "penalty_K"), D=_numeric(model, "penalty_D"),
                              Kt=_numeric(model, "penalty_Kt"), Dt=_numeric(model, "penalty_Dt"),
                              mu=float(model.geom_friction[geom, 0]))
    m_eff = 1.0 / float(model.body_invweight0[bid, 0])
    params = BoxContactParams(body, np.array(model.geom_size[geom]), ground, np.array(model.opt.gravity), m_eff)
    expected = solref_from_penalty(params)
    found = np.array(model.geom_solref[geom])
    if np.any(np.abs(found - expected) > 1e-6 * np.abs(expected)):
        raise ModelError(
            f"geom {model.geom(geom).name!r} has solref {found.tolist()}, but the model's penalty_K, penalty_D "
            f"and effective mass {m_eff:g} kg give {expected.tolist()} (solref = (-K/m_eff, -D/m_eff)); "
            "update one of them"
        )
    return params


def solref_from_penalty(params: BoxContactParams) -> np.ndarray:
    """MuJoCo's direct solref matching the penalty spring, ``(-K/m_eff, -D/m_eff)``: with a small impedance
    the contact force tends to ``m_eff (-k r - b v)`` (``mjcf/rigid_box_ground.xml``)."""
    return -np.array([params.ground.K, params.ground.D]) / params.m_eff


def contact_metrics(tr: rb.Trajectory, half_sizes: np.ndarray) -> dict:
    """Rest penetration, bounce, settling time and slide distance of one run."""
    corners = rb.box_corners(half_sizes)
    lowest = np.min(tr.c[:, None, 2] + np.einsum("nij,kj->nki", tr.R, corners)[..., 2], axis=1)
    touch = np.flatnonzero(lowest < 0)
    if touch.size == 0:
        return {"touched_down": False}
    k0 = int(touch[0])
    z, vz = tr.c[:, 2], tr.v[:, 2]
    rising = np.flatnonzero(vz[k0:] > 0)
    z_rest = float(z[-1])
    bounce = float(np.max(z[k0 + rising[0]:]) - z_rest) if rising.size else 0.0
    off = np.flatnonzero(np.abs(z - z_rest) > SETTLE_BAND)
    airborne = np.flatnonzero(lowest[k0:] > 0)
    settles = bool(off.size) and off[-1] + 1 < tr.t.size  # it leaves the band and is back in it before the end
    return {
        "touched_down": True,
        "touchdown_s": float(tr.t[k0]),
        "impact_speed_m_s": float(-vz[k0]),
        "rest_penetration_m": float(-lowest[-1]),
        "bounce_height_m": bounce,
        "airborne_after_touchdown_s": float(airborne.size * (tr.t[1] - tr.t[0])),
        "settling_time_s": float(tr.t[off[-1] + 1] - tr.t[k0]) if settles else float("nan"),
        "slide_distance_m": float(tr.c[-1, 0] - tr.c[k0, 0]),
        "max_slide_m": float(np.max(tr.c[k0:, 0]) - tr.c[k0, 0]),
        "max_lift_m": float(np.max(tr.c[k0:, 2]) - tr.c[k0, 2]),
        "final_speed_m_s": float(np.linalg.norm(tr.v[-1])),
    }


@dataclass(frozen=True)
class DropRun:
    """One contact run, the penalty model and MuJoCo from the same start; ``penalty_normal_force`` is the
    penalty's summed corner normal force per sample, ``(N,)``, N."""

    params: BoxContactParams
    penalty: rb.Trajectory
    penalty_normal_force: np.ndarray
    mujoco: rb.Trajectory


def drop(slide_speed: float = 0.0, duration: float = CONTACT_DURATION, model: mujoco.MjModel | None = None,
         solimp=None) -> DropRun:
    """Drop the flat box from ``DROP_HEIGHT``, or, with ``slide_speed`` > 0 (m/s), start it
    sliding along x on the ground (resting at the penalty's rest penetration).

    ``solimp`` overrides the box geom's impedance in the MuJoCo run.
    """
    model = model or load_model(GROUND_MODEL)
    params = contact_params(model)
    if solimp is not None:
        model = copy.copy(model)
        model.geom_solimp[model.geom("box").id] = solimp
    dt = model.opt.timestep
    steps = int(round(duration / dt))
    # Dropped from DROP_HEIGHT at rest; the sliding case starts on the ground instead, already at
    # the penalty model's rest penetration, so the slide is not mixed with an impact's friction.
    rest = params.body.mass * -params.gravity[2] / (4 * params.ground.K)
    height = params.half_sizes[0] + (DROP_HEIGHT if slide_speed == 0 else -rest)  # body x is vertical when flat
    state = rb.BodyState.at_rest(c=(0.0, 0.0, height), R=FLAT, v=(slide_speed, 0.0, 0.0))
    penalty, normal = rb.simulate_penalty(params.body, params.ground, rb.box_corners(params.half_sizes), state,
                                          dt, steps, params.gravity)
    return DropRun(params, penalty, normal, mujoco_trajectory(model, state, steps))


@dataclass(frozen=True)
class ContactResult:
    """The box on the ground: dropped and sliding, penalty model vs MuJoCo.

    Attributes:
      duration: simulated time of each run, s.
      slide_speed: the slide's initial speed, m/s.
      drop, slide, drop_default_solimp: the runs (the last with :data:`DEFAULT_SOLIMP`).
      solimp: the ground model's matched impedance of the box geom, ``(5,)``.
      slide_lift_frictionless: MuJoCo's CoM lift in the slide's first 0.5 s without friction rows, m.
    """

    duration: float
    slide_speed: float
    drop: DropRun
    slide: DropRun
    drop_default_solimp: DropRun
    solimp: np.ndarray
    slide_lift_frictionless: float

    @property
    def params(self) -> BoxContactParams:
        """The box, ground and gravity every run shares (read from the ground model)."""
        return self.drop.params


def ground_contact(slide_speed: float = SLIDE_SPEED, duration: float = CONTACT_DURATION) -> ContactResult:
    """Every contact run of ``box-ground-contact`` (no files written)."""
    slide = drop(slide_speed, duration)
    # Diagnostic: the sliding MuJoCo box without friction rows (condim 1) -- does the lift go away?
    frictionless = load_model(GROUND_MODEL)
    frictionless.geom_condim[frictionless.geom("box").id] = 1
    slide_state = rb.BodyState.at_rest(c=slide.mujoco.c[0], R=FLAT, v=(slide_speed, 0.0, 0.0))
    lift = mujoco_trajectory(frictionless, slide_state, int(round(0.5 / frictionless.opt.timestep))).c[:, 2]
    ground = load_model(GROUND_MODEL)
    return ContactResult(duration, slide_speed, drop(0.0, duration), slide, drop(0.0, duration, solimp=DEFAULT_SOLIMP),
                         np.array(ground.geom_solimp[ground.geom("box").id]), float(np.max(lift) - slide_state.c[2]))


def contact_predictions(params: BoxContactParams, slide_speed: float) -> dict:
    """The penalty model's closed-form numbers: rest penetration m g/4K (m), heave natural
    frequency sqrt(4K/m) (rad/s), damping ratio and linear restitution, the Coulomb slide
    v0^2/(2 mu g) (m) and the tangential springs' stretch at the friction cap mu m g/4Kt (m)."""
    m, g, K, D, mu = params.body.mass, -params.gravity[2], params.ground.K, params.ground.D, params.ground.mu
    corners_down = 4
    zeta = corners_down * D / (2 * np.sqrt(corners_down * K * m))
    return {
        "rest_penetration_m": m * g / (corners_down * K),
        "heave_natural_frequency_rad_s": np.sqrt(corners_down * K / m),
        "heave_damping_ratio": zeta,
        "linear_restitution": float(np.exp(-zeta * np.pi / np.sqrt(1 - zeta**2))),
        "coulomb_slide_distance_m": slide_speed**2 / (2 * mu * g),
        "penalty_tangential_stretch_at_cap_m": mu * m * g / (corners_down * params.ground.Kt),
    }


def judge_contact(result: ContactResult) -> tuple[Verdict, dict]:
    """Matched MuJoCo vs the penalty model within :data:`REST_RTOL` (rest, and the penalty of m g/4K),
    :data:`BOUNCE_RTOL` (bounce) and :data:`SLIDE_RTOL` (slides vs Coulomb).  Returns the verdict and metrics."""
    params, speed = result.params, result.slide_speed
    half = params.half_sizes
    cases = {case: {"penalty": contact_metrics(r.penalty, half), "mujoco": contact_metrics(r.mujoco, half)}
             for case, r in (("drop", result.drop), ("slide", result.slide))}
    cases["drop"]["mujoco_default_solimp"] = contact_metrics(result.drop_default_solimp.mujoco, half)
    predictions = contact_predictions(params, speed)
    rest, coulomb = predictions["rest_penetration_m"], predictions["coulomb_slide_distance_m"]
    rest_p, rest_m = (cases["drop"][k]["rest_penetration_m"] for k in ("penalty", "mujoco"))
    bounce_p, bounce_m = (cases["drop"][k]["bounce_height_m"] for k in ("penalty", "mujoco"))
    slide_p, slide_m = (cases["slide"][k]["max_slide_m"] for k in ("penalty", "mujoco"))
    rest_ok = abs(rest_m - rest_p) <= REST_RTOL * rest_p and abs(rest_p - rest) <= REST_RTOL * rest
    bounce_ok = abs(bounce_m - bounce_p) <= BOUNCE_RTOL * bounce_p
    slide_ok = speed == 0 or all(abs(x - coulomb) <= SLIDE_RTOL * coulomb for x in (slide_p, slide_m))
    verdict = Verdict(rest_ok and bounce_ok and slide_ok,
                      f"rest penetration {rest_p * 1e3:.4f} / {rest_m * 1e3:.4f} mm, bounce {bounce_p * 1e3:.2f} / "
                      f"{bounce_m * 1e3:.2f} mm, slide {slide_p:.3f} / {slide_m:.3f} m (penalty / MuJoCo)")
    g = params.ground
    return verdict, {
        **verdict.as_metrics(),
        "duration_s": result.duration,
        "slide_speed_m_s": speed,
        "penalty": {"K_N_m": g.K, "D_N_s_m": g.D, "Kt_N_m": g.Kt, "Dt_N_s_m": g.Dt, "mu": g.mu},
        "conversion": {
            "m_eff_kg": params.m_eff,
            "solref": solref_from_penalty(params),
            "solimp": result.solimp,
            "formula": "solref = (-K/m_eff, -D/m_eff) with m_eff = 1/body_invweight0 (the contact's diagonal "
                       "inverse inertia, 1/m for a free body); solimp dmin = dmax = d = 1e-4, so the regularizer "
                       "R = (1-d)/d / m_eff >> A and the contact force -> m_eff (-k r - b v)/(1-d) = -K r - D v "
                       "per contact",
        },
        "predictions": predictions,
        "cases": cases,
        "mujoco_slide_lift_without_friction_m": result.slide_lift_frictionless,
        "explanation": _contact_explanation(result, predictions, cases),
    }


def _contact_explanation(result: ContactResult, predictions: dict, cases: dict) -> str:
    p, drop_, slide = result.params, cases["drop"], cases["slide"]
    rest, omega_n, zeta = (predictions[k] for k in ("rest_penetration_m", "heave_natural_frequency_rad_s",
                                                    "heave_damping_ratio"))
    stiff = drop_["mujoco_default_solimp"]
    return (
        f"Penalty: 4 corners at rest carry m g, so the rest penetration is m g/4K = {rest * 1e3:.4f} mm; "
        f"the heave mode has omega_n = sqrt(4K/m) = {omega_n:.1f} rad/s and damping ratio {zeta:.2f} "
        f"(linear restitution {predictions['linear_restitution']:.2f}; the one-sided force Fn >= 0 changes the "
        "real bounce a little). MuJoCo's negative solref is the stiffness and damping of a reference ACCELERATION, "
        "not a force: the force is f = (A + R)^-1 (aref - a0) with R = (1-d)/d A_diag. With a small impedance d "
        "(1e-4) R dominates and each MuJoCo contact becomes the penalty spring-damper with K = k m_eff, "
        f"D = b m_eff (m_eff = {p.m_eff:g} kg): rest penetration {drop_['mujoco']['rest_penetration_m'] * 1e3:.4f} vs "
        f"{drop_['penalty']['rest_penetration_m'] * 1e3:.4f} mm, bounce {drop_['mujoco']['bounce_height_m'] * 1e3:.2f} "
        f"vs {drop_['penalty']['bounce_height_m'] * 1e3:.2f} mm, settling "
        f"{drop_['mujoco']['settling_time_s']:.3f} vs {drop_['penalty']['settling_time_s']:.3f} s. "
        "With MuJoCo's default impedance (d = 0.9..0.95) and the same solref the contact is a stiff "
        "constraint: the contact's acceleration is d aref + (1-d) a0, the constraint rather than the "
        f"spring holds the weight, and the rest penetration falls to {stiff['rest_penetration_m'] * 1e3:.4f} mm "
        f"while the bounce grows to {stiff['bounce_height_m'] * 1e3:.2f} mm. Sliding (v0 = {result.slide_speed:g} "
        "m/s, starting on the ground): the penalty model holds each corner with a tangential spring Kt anchored at "
        "touch-down and capped at mu Fn, so it first stretches ~mu m g/4Kt = "
        f"{predictions['penalty_tangential_stretch_at_cap_m'] * 100:.1f} cm before slipping, slides further "
        f"({slide['penalty']['max_slide_m']:.3f} m at most vs the Coulomb "
        f"{predictions['coulomb_slide_distance_m']:.3f} m), then springs back "
        f"and rocks on the lightly damped springs (Dt = {p.ground.Dt:g} N s/m). MuJoCo's elliptic "
        "friction has no spring: a velocity-level constraint capped by the cone, so it decelerates at mu g "
        f"from the start and stops dead at {slide['mujoco']['max_slide_m']:.3f} m. MuJoCo also lifts the sliding "
        f"box by {slide['mujoco']['max_lift_m'] * 1e3:.2f} mm (the penalty box: "
        f"{slide['penalty']['max_lift_m'] * 1e3:.1e} mm); with the friction rows removed "
        f"(condim 1) the lift is {result.slide_lift_frictionless * 1e3:.1e} mm, so it comes from the soft friction "
        "cone, in which normal and friction forces are solved together."
    )
