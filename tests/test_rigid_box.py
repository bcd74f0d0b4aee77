"""The one-body Newton-Euler model (analytic/rigid_box.py) and the inertia formulas.

No MuJoCo here except through the box model's parameters (read by
``experiments.rigid_box.rigid_body_params``, so no physical number is retyped).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from crossdyn.analytic import inertia
from crossdyn.analytic import rigid_box as rb
from crossdyn.analytic.rotation import matrix_to_quat, quat_to_matrix
from crossdyn.experiments.core.models import load_model
from crossdyn.experiments.rigid_box import OMEGA0, rigid_body_params
from support import assert_close

DT = 1e-3  # s, docs/derivations/rigid-box.md
STEPS = 10_000  # 10 s


@pytest.fixture(scope="module")
def params() -> rb.RigidBodyParams:
    return rigid_body_params(load_model("rigid_box"))


@pytest.fixture(scope="module")
def free(params):
    """Torque-free box, omega0 = [1, 1, 1]: the lecture's step, RK4 and reference over 10 s (run once)."""
    state = rb.BodyState.at_rest(omega=OMEGA0)
    t = np.arange(STEPS + 1) * DT
    return {
        "lecture": rb.lecture_euler(params, state, DT, STEPS),
        "rk4": rb.rk4(params, state, DT, STEPS),
        "reference": rb.reference(params, state, t),
    }


def _drift(params, tr):
    L = np.linalg.norm(rb.angular_momentum(params, tr.R, tr.omega), axis=1)
    E = rb.kinetic_energy(params, tr.v, tr.R, tr.omega)
    return L[-1] / L[0] - 1.0, E[-1] / E[0] - 1.0


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "mass, moments, message",
    [
        (0.0, (1.0, 1.0, 1.0), "mass must be a positive"),
        (-2.0, (1.0, 1.0, 1.0), "mass must be a positive"),
        (float("nan"), (1.0, 1.0, 1.0), "mass must be a positive"),
        (1.0, (1.0, -0.5, 1.0), "positive definite"),
        (1.0, (1.0, 0.0, 1.0), "positive definite"),
        (1.0, (1.0, 1.0, 3.0), "not physically realizable"),
        (1.0, (1.0, float("inf"), 1.0), "non-finite"),
    ],
)
def test_bad_params_raise(mass, moments, message):
    with pytest.raises(ValueError, match=message):
        rb.RigidBodyParams(mass, np.diag(moments))


def test_non_symmetric_inertia_raises():
    with pytest.raises(ValueError, match="symmetric"):
        rb.RigidBodyParams(1.0, [[1.0, 0.1, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])


def test_nan_force_raises():
    with pytest.raises(ValueError, match="force must be finite"):
        rb.point_force([np.nan, 0.0, 0.0], [0.0, 0.0, 0.3])
    with pytest.raises(ValueError, match="force must be finite"):
        rb.wrench_about_com([50.0, np.nan, 0.0], [0.0, 0.0, 0.3], [0.0, 0.0, 0.0])


def test_bad_state_and_step_raise(params):
    with pytest.raises(ValueError, match="rotation matrix"):
        rb.BodyState.at_rest(R=np.diag([1.0, 1.0, -1.0]))
    with pytest.raises(ValueError, match="time step"):
        rb.lecture_euler(params, rb.BodyState.at_rest(), 0.0, 10)


# --------------------------------------------------------------------------- building blocks


def test_rodrigues_is_the_exponential_map():
    rng = np.random.default_rng(4)
    for omega in rng.uniform(-3, 3, (20, 3)):
        expected = Rotation.from_rotvec(omega * DT * 50).as_matrix()
        # Both are closed forms of the same rotation: round-off only.
        assert_close(rb.rodrigues(omega, DT * 50), expected, atol=1e-14)
    assert_close(rb.rodrigues(np.zeros(3), DT), np.eye(3), atol=0.0)


def test_quaternion_round_trip():
    rng = np.random.default_rng(5)
    for R in Rotation.random(20, random_state=rng).as_matrix():
        # Conversions are a few flops each: round-off.
        assert_close(quat_to_matrix(matrix_to_quat(R)), R, atol=1e-14)


def test_force_at_point_gives_torque_about_com():
    f, tau = rb.wrench_about_com([50.0, 0.0, 0.0], [1.0, 2.0, 3.3], [1.0, 2.0, 3.0])
    # (0, 0, 0.3) x (50, 0, 0) = (0, 15, 0) N m: exact in binary up to the 0.3 m offset's rounding.
    assert_close(tau, [0.0, 15.0, 0.0], atol=1e-12)
    R = Rotation.from_euler("xyz", [0.3, -0.2, 0.9]).as_matrix()
    f2, tau2 = rb.point_force([50.0, 0.0, 0.0], [0.0, 0.0, 0.3])(0.0, np.zeros(3), np.zeros(3), R, np.zeros(3))
    # The point moves with the body, the force does not: tau = (R p) x f.
    assert_close(tau2, np.cross(R @ [0.0, 0.0, 0.3], [50.0, 0.0, 0.0]), atol=1e-12)


def test_conserved_quantities_are_frame_consistent(params):
    rng = np.random.default_rng(6)
    R = Rotation.random(5, random_state=rng).as_matrix()
    wb = rng.uniform(-2, 2, (5, 3))
    omega = np.einsum("nij,nj->ni", R, wb)
    L = rb.angular_momentum(params, R, omega)
    # |L| and T are frame invariant: compare with the body-frame formulas (round-off).
    assert_close(np.linalg.norm(L, axis=1), np.linalg.norm(wb @ params.inertia, axis=1), atol=1e-12)
    T = rb.kinetic_energy(params, np.zeros((5, 3)), R, omega)
    assert_close(T, 0.5 * np.einsum("ni,ij,nj->n", wb, params.inertia, wb), atol=1e-12)


def test_lecture_step_order(params):
    """One step by hand: v += dt f/m, then c += dt v with the NEW v (docs/derivations/rigid-box.md)."""
    state = rb.BodyState.at_rest(c=(1.0, 0.0, 0.0), v=(0.5, 0.0, 0.0))
    f = np.array([50.0, 0.0, 0.0])
    tr = rb.lecture_euler(params, state, DT, 1, rb.point_force(f, np.zeros(3)))
    v1 = 0.5 + DT * f[0] / params.mass
    # The same three flops: exact up to one rounding.
    assert_close(tr.v[1], [v1, 0.0, 0.0], atol=1e-15)
    assert_close(tr.c[1], [1.0 + DT * v1, 0.0, 0.0], atol=1e-15)


# --------------------------------------------------------------------------- accuracy and drift


def test_rk4_matches_reference(params, free):
    # RK4's global error at dt = 1 ms over 10 s is ~1e-12 rad/s here (measured 5e-14).
    assert_close(free["rk4"].omega_body[-1], free["reference"].omega_body[-1], atol=1e-9)


def test_lecture_drift_reported_and_rk4_100x_smaller(params, free):
    lecture_L, lecture_E = _drift(params, free["lecture"])
    rk4_L, rk4_E = _drift(params, free["rk4"])
    # The lecture's explicit step adds dt^2 |omega x L|^2 to |L|^2 every step: |L| and T grow.
    assert lecture_L > 1e-4 and lecture_E > 1e-4, (lecture_L, lecture_E)
    assert abs(rk4_L) * 100 <= abs(lecture_L), (rk4_L, lecture_L)
    assert abs(rk4_E) * 100 <= abs(lecture_E), (rk4_E, lecture_E)


def test_orders_of_accuracy(params):
    """Halving dt halves the lecture's error (first order) and divides RK4's by 16."""
    state = rb.BodyState.at_rest(omega=OMEGA0)
    wrench = rb.point_force([50.0, 0.0, 0.0], [0.0, 0.1, 0.3])
    errors = {}
    for dt in (4e-3, 2e-3):
        steps = int(round(1.0 / dt))
        ref = rb.reference(params, state, np.arange(steps + 1) * dt, wrench)
        for name, method in (("lecture", rb.lecture_euler), ("rk4", rb.rk4)):
            tr = method(params, state, dt, steps, wrench)
            errors[name, dt] = np.abs(tr.omega[-1] - ref.omega[-1]).max()
    lecture_order = np.log2(errors["lecture", 4e-3] / errors["lecture", 2e-3])
    rk4_order = np.log2(errors["rk4", 4e-3] / errors["rk4", 2e-3])
    # Asymptotic orders 1 and 4; +-0.25 allows for the next term at these step sizes.
    assert abs(lecture_order - 1.0) < 0.25, errors
    assert abs(rk4_order - 4.0) < 0.25, errors


# --------------------------------------------------------------------------- inertia formulas


def test_box_formula_gives_the_model_numbers(params):
    # docs/derivations/rigid-box.md: Ibar = diag(2.4, 1.95, 0.51) kg m^2 for 36 kg, 0.1 x 0.4 x 0.8 m; the
    # model's explicit inertia must be the formula's (both typed to 3 digits: 1e-12).
    model = load_model("rigid_box")
    sizes = 2 * model.geom_size[model.geom("box").id]
    assert_close(np.diag(inertia.box(params.mass, *sizes)), [2.4, 1.95, 0.51], rtol=1e-12, atol=0.0)
    # MuJoCo computes the same box formula: round-off.
    assert_close(params.inertia, inertia.box(params.mass, *sizes), rtol=1e-12, atol=1e-15)


def test_cone_centroid_and_parallel_axis():
    m, h, r = 2.0, 0.3, 0.1
    # 3/80 m h^2 + 3/20 m r^2 (transverse), 3/10 m r^2 (axial): a few flops, round-off.
    expected = np.diag([3 / 80 * m * h**2 + 3 / 20 * m * r**2] * 2 + [3 / 10 * m * r**2])
    assert_close(inertia.solid_cone_centroid(m, h, r), expected, atol=1e-15)
    # Rod about its end = about its centre moved by l/2 (round-off).
    assert_close(inertia.parallel_axis(inertia.rod_centre(m, 1.2), m, [0, 0, 0.6]), inertia.rod_end(m, 1.2),
                 atol=1e-15)
    with pytest.raises(ValueError, match="must be positive"):
        inertia.solid_sphere(0.0, 1.0)
