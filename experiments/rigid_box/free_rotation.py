"""The torque-free box: every integrator against a tight reference, and the tennis-racket flip.

``box-free-rotation`` spins the box at ``omega0 = [1, 1, 1]`` rad/s for 10 s at dt = 1 ms: the
first-order step of the lecture, our RK4 and MuJoCo's four integrators against a DOP853 reference (drift of |L|
and of the kinetic energy, the intermediate-axis flip, why the first-order step and MuJoCo's Euler agree).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from ...analytic import rigid_box as rb
from ..core.models import load_model, with_options
from ..core.registry import Verdict
from .integrators import INTEGRATORS, mujoco_trajectory, relative_change, rotation_angle
from .model import DURATION, MODEL, rigid_body_params

__all__ = ["OMEGA0", "OMEGA_TOL", "DRIFT_RATIO_MIN", "FreeRotationResult", "free_rotation", "judge_free_rotation"]

OMEGA0 = np.array([1.0, 1.0, 1.0])  # rad/s, the first box experiment of the lecture (world = body at t = 0)

# Reference vs MuJoCo RK4: RK4's error ~(omega dt)^4 ~ 1e-12 per second leaves three orders for the flip.
OMEGA_TOL = 1e-9
DRIFT_RATIO_MIN = 100.0  # our RK4 drifts at least this many times less than the first-order step


@dataclass(frozen=True)
class FreeRotationResult:
    """Every integrator on the torque-free box (``omega0`` ``(3,)`` rad/s, ``duration`` s).

    Attributes:
      trajectories: ``"reference"`` (DOP853), ``"lecture"``, ``"rk4"`` and every name of :data:`INTEGRATORS`.
      momentum_drift, energy_drift: integrator -> relative change of |L| and of the kinetic energy.
      omega_error_end: integrator -> max |omega_body - reference| at the end, rad/s.
    """

    params: rb.RigidBodyParams
    omega0: np.ndarray
    duration: float
    trajectories: dict[str, rb.Trajectory]
    momentum_drift: dict[str, float]
    energy_drift: dict[str, float]
    omega_error_end: dict[str, float]

    @property
    def flip_times(self) -> list[float]:
        """Times at which the reference's body omega_y changes sign (the intermediate-axis flip), s."""
        ref = self.trajectories["reference"]
        return _flip_times(ref.t, ref.omega_body[:, 1])


def free_rotation(duration: float = DURATION, omega0=OMEGA0, model: mujoco.MjModel | None = None) -> FreeRotationResult:
    """Run every integrator on the torque-free box for ``duration`` s from ``omega0`` ``(3,)`` rad/s at the
    model's time step, and measure its drifts."""
    model = model or load_model(MODEL)
    params = rigid_body_params(model)
    dt = model.opt.timestep
    steps = int(round(duration / dt))
    state = rb.BodyState.at_rest(omega=omega0)
    t = np.arange(steps + 1) * dt
    runs = {
        "reference": rb.reference(params, state, t),
        "lecture": rb.lecture_euler(params, state, dt, steps),
        "rk4": rb.rk4(params, state, dt, steps),
    }
    for name, integrator in INTEGRATORS.items():
        runs[name] = mujoco_trajectory(with_options(model, integrator=integrator), state, steps)
    momentum, energy, omega_err = {}, {}, {}
    ref_wb = runs["reference"].omega_body
    for name, tr in runs.items():
        L = rb.angular_momentum(params, tr.R, tr.omega)
        momentum[name] = relative_change(np.linalg.norm(L, axis=1))
        energy[name] = relative_change(rb.kinetic_energy(params, tr.v, tr.R, tr.omega))
        omega_err[name] = float(np.abs(tr.omega_body[-1] - ref_wb[-1]).max())
    return FreeRotationResult(params, np.asarray(omega0, dtype=float), duration, runs, momentum, energy, omega_err)


def _flip_times(t: np.ndarray, x: np.ndarray) -> list[float]:
    """Times where ``x`` changes sign (linear interpolation), s."""
    idx = np.flatnonzero(np.sign(x[:-1]) * np.sign(x[1:]) < 0)
    return [float(t[i] - x[i] * (t[i + 1] - t[i]) / (x[i + 1] - x[i])) for i in idx]


def judge_free_rotation(result: FreeRotationResult) -> tuple[Verdict, dict]:
    """MuJoCo's RK4 within :data:`OMEGA_TOL` of the reference, our RK4 drifting :data:`DRIFT_RATIO_MIN` times
    less than the first-order step (|L| and energy); the verdict and the metrics."""
    runs, drift, energy = result.trajectories, result.momentum_drift, result.energy_drift
    t = runs["reference"].t
    inertia = np.diag(result.params.inertia)
    wb0 = result.omega0
    d_star = np.sum((inertia * wb0) ** 2) / (wb0 @ (inertia * wb0))  # |L|^2 / 2T: the polhode's axis
    flips = result.flip_times
    lecture_vs_euler = {
        "omega_max_abs_diff": float(np.abs(runs["lecture"].omega - runs["mujoco_euler"].omega).max()),
        "angle_max_rad": float(rotation_angle(runs["lecture"].R, runs["mujoco_euler"].R).max()),
        "com_max_abs_diff": float(np.abs(runs["lecture"].c - runs["mujoco_euler"].c).max()),
    }
    ratio_l = abs(drift["lecture"]) / max(abs(drift["rk4"]), 1e-300)
    ratio_e = abs(energy["lecture"]) / max(abs(energy["rk4"]), 1e-300)
    rk4_err = result.omega_error_end["mujoco_rk4"]
    verdict = Verdict(
        rk4_err <= OMEGA_TOL and ratio_l >= DRIFT_RATIO_MIN and ratio_e >= DRIFT_RATIO_MIN,
        f"MuJoCo RK4 omega error {rk4_err:.1e} rad/s; |L| drift lecture {drift['lecture']:.1e}, "
        f"RK4 {drift['rk4']:.1e} ({ratio_l:.0e}x less)",
    )
    return verdict, {
        **verdict.as_metrics(),
        "duration_s": result.duration,
        "timestep_s": float(t[1] - t[0]),
        "momentum_drift": drift,
        "energy_drift": energy,
        "omega_body_error_at_end_rad_s": result.omega_error_end,
        "drift_ratio_lecture_over_rk4": {"momentum": ratio_l, "energy": ratio_e},
        "omega_body_at_end": {name: tr.omega_body[-1] for name, tr in runs.items()},
        "flip": {"omega_y_sign_changes": len(flips), "times_s": flips,
                 "polhode_D_kg_m2": float(d_star), "principal_moments_kg_m2": inertia},
        "lecture_vs_mujoco_euler": lecture_vs_euler,
        "explanation": _free_rotation_explanation(drift, energy, lecture_vs_euler, float(d_star), inertia),
    }


def _free_rotation_explanation(drift: dict, energy: dict, lecture_vs_euler: dict, d_star: float,
                               inertia: np.ndarray) -> str:
    # The explanation is a text metric that saved baselines compare: its wording stays.
    return (
        "The lecture notes' rotation step and MuJoCo's Euler step are the same map: MuJoCo's Euler is semi-implicit "
        "(qvel += dt qacc, then the position, quaternion included, is integrated with the NEW velocity, "
        "the quaternion by the exact rotation exp(dt omega^)), and the lecture updates omega first and then "
        "rotates by Rodrigues' formula with the new omega. Euler's equation in the world frame "
        "(I = R Ibar R^T) is the body-frame one rotated by R, so both compute the same numbers; they "
        f"differ only by round-off (max |omega difference| {lecture_vs_euler['omega_max_abs_diff']:.1e} rad/s "
        f"over the run). Both are first order: each step adds dt^2 |omega x L|^2 to |L|^2 (an explicit "
        "step of L' = L x omega is never norm-preserving), so |L| and the energy grow monotonically "
        f"(|L| {drift['lecture']:+.1e}). MuJoCo's implicit and implicitfast integrators give identical numbers "
        "here and, unlike Euler, LOSE |L| and energy "
        f"(|L| {drift['mujoco_implicit']:+.1e}, energy {energy['mujoco_implicit']:+.1e}): "
        "their velocity update uses the derivative of the velocity-dependent (gyroscopic) force, a "
        "linearized backward-Euler step whose numerical dissipation mirrors the explicit step's growth; "
        "first order as well. RK4 (ours and MuJoCo's) is fourth order and holds |L| to "
        f"{abs(drift['rk4']):.0e}. With omega0 = [1, 1, 1], D = |L|^2/2T = {d_star:.4f} kg m^2 lies "
        f"between Iyy = {inertia[1]:g} and Ixx = {inertia[0]:g}: the motion runs close to the separatrix of "
        "the intermediate axis, so omega_y (and omega_z) reverse sign periodically — the tennis-racket "
        "flip — and small integration errors shift the flip times, which is why the first-order "
        "methods' omega error grows fastest around each flip."
    )
