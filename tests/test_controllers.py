"""Control design against closed-form theory (no MuJoCo)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from crossdyn.controllers.biped.balance import balance_torque
from crossdyn.controllers.biped.steering import split_wheel_torque, yaw_gains, yaw_torque
from crossdyn.controllers.lqr import dlqr, lqr, schedule
from support import assert_close


def test_lqr_scalar_integrator_matches_sqrt_qr():
    # xdot = u, cost q x^2 + r u^2: S = sqrt(q r), K = sqrt(q / r) (python-control's own anchor).
    q, r = 4.0, 0.25
    design = lqr([[0.0]], [[1.0]], [[q]], [[r]])
    assert_close(design.S, [[np.sqrt(q * r)]], atol=1e-12, what="S")  # Riccati solver round-off
    assert_close(design.K, [[np.sqrt(q / r)]], atol=1e-12, what="K")


def test_lqr_double_integrator_closed_form():
    # xdd = u, Q = diag(q, 0), R = 1: K = [sqrt(q), sqrt(2 sqrt(q))].
    q = 9.0
    design = lqr([[0, 1], [0, 0]], [[0], [1]], np.diag([q, 0.0]), 1.0)
    assert_close(design.K, [[np.sqrt(q), np.sqrt(2 * np.sqrt(q))]], atol=1e-10, what="K")


def _pendulum(length: float):
    """A cart-pendulum-like (A, B) whose instability grows as the length l shrinks (g / l)."""
    return (np.array([[0, 1, 0, 0], [0, 0, -2.0, 0], [0, 0, 0, 1], [0, 0, 9.81 / length, 0]]),
            np.array([[0.0], [1.0], [0.0], [-1.0 / length]]))


def test_lqr_realised_cost_matches_riccati():
    """Integrate the closed loop and its running cost: equals x0' S x0."""
    A, B = _pendulum(0.3)
    Q, R = np.diag([1.0, 1.0, 10.0, 1.0]), np.array([[0.1]])
    design = lqr(A, B, Q, R)
    x0 = np.array([0.0, 0.0, 0.1, 0.0])

    def rhs(t, z):
        x = z[:4]
        u = -design.K @ x
        return np.concatenate([A @ x + B @ u, [x @ Q @ x + u @ R @ u]])

    # Integrator tolerance 1e-10 on an O(0.05) cost.
    sol = solve_ivp(rhs, (0, 30), np.concatenate([x0, [0.0]]), rtol=1e-10, atol=1e-12)
    # 30 s is > 50 time constants of the slowest pole; solver tolerance 1e-10.
    assert sol.y[4, -1] == pytest.approx(design.cost(x0), rel=1e-6)


def test_dlqr_matches_continuous_design_at_small_step():
    from scipy.signal import cont2discrete

    A, B = _pendulum(0.3)
    Q, R = np.eye(4), np.array([[1.0]])
    dt = 1e-4
    Ad, Bd, *_ = cont2discrete((A, B, np.eye(4), np.zeros((4, 1))), dt)
    cont, disc = lqr(A, B, Q, R), dlqr(Ad, Bd, Q * dt, R * dt)
    # Discretization error of the Riccati solution is O(dt) relative.
    assert_close(disc.K, cont.K, atol=0, rtol=1e-2, what="K discrete vs continuous")


def test_gain_schedule_fits_the_table():
    lengths = np.linspace(0.2, 0.45, 8)
    sched = schedule(_pendulum, lengths, np.diag([1, 1, 10, 1]), 0.1, degree=3)
    assert sched.gains.shape == (8, 1, 4)
    assert sched.fit_error < 1e-2  # smooth in l: a cubic fits to under 1 %
    mid = 0.5 * (lengths[3] + lengths[4])
    exact = lqr(*_pendulum(mid), np.diag([1, 1, 10, 1]), 0.1).K
    assert_close(sched(mid), exact, atol=0, rtol=2e-2, what="K between table points")
    # Clamped: the very same evaluation.
    assert_close(sched(10.0), sched(lengths[-1]), atol=0, what="clamped above the range")


@pytest.mark.parametrize(
    "Q,R,message",
    [
        (np.diag([1, 1, -1, 1]), 1.0, "positive semi-definite"),
        (np.eye(4), 0.0, "positive definite"),
        (np.eye(3), 1.0, "must be"),
        (np.diag([1, 1, np.nan, 1]), 1.0, "finite"),
    ],
)
def test_bad_weights_are_refused(Q, R, message):
    with pytest.raises(ValueError, match=message):
        lqr(*_pendulum(0.3), Q, R)


def test_unstabilizable_pair_is_refused():
    A = np.array([[1.0, 0.0], [0.0, -1.0]])
    B = np.array([[0.0], [1.0]])  # the unstable mode is not actuated
    with pytest.raises(ValueError, match="LQR"):
        lqr(A, B, np.eye(2), 1.0)


def test_small_riccati_solves_run_blas_single_threaded(monkeypatch):
    """A 4-state design runs BLAS on one thread (OpenBLAS's idle threads would spin
    ~0.1 s of a second core after it); the limit is lifted afterwards."""
    import control
    from threadpoolctl import threadpool_info

    from crossdyn.controllers import lqr as lqr_module

    seen, solve = [], control.lqr

    def spy(*args):
        seen.append(max(lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"))
        return solve(*args)

    monkeypatch.setattr(control, "lqr", spy)
    before = max(lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas")
    lqr(*_pendulum(0.3), np.diag([1, 1, 10, 1]), 0.1)
    assert seen == [1]
    assert max(lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas") == before
    assert lqr_module.SMALL_SYSTEM > 4


def test_balance_torque_law_and_limit():
    K = np.array([[1.0, 2.0, 30.0, 4.0]])
    assert balance_torque(K, [0, 0, 0.1, 0]) == pytest.approx(-3.0)
    assert balance_torque(K, [0, 1.0, 0, 0], reference=[0, 1.0, 0, 0]) == 0.0
    assert balance_torque(K, [0, 0, 1.0, 0], limit=12.0) == -12.0
    with pytest.raises(ValueError, match="finite"):
        balance_torque(K, [0, 0, np.nan, 0])


def test_yaw_gains_place_the_poles():
    j, wn, zeta = 0.05, 6.0, 0.9
    g = yaw_gains(j, wn, zeta)
    poles = np.roots([j, g.kd, g.kp])
    # Roots of a quadratic with O(100) coefficients: round-off.
    assert_close(np.sort_complex(poles), np.sort_complex(np.roots([1, 2 * zeta * wn, wn**2])), atol=1e-12, what="poles")
    # To turn left (yaw up about +z) the right wheel must push harder: T_L - T_R < 0.
    assert yaw_torque(g, yaw=0.0, rate=0.0, yaw_ref=0.1) < 0
    # The yaw error is wrapped: 5 deg is 10 deg to the left of 355 deg, not 350 to the right.
    assert yaw_torque(g, yaw=np.radians(355), rate=0.0, yaw_ref=np.radians(5)) < 0


def test_split_wheel_torque_keeps_balance_priority():
    assert split_wheel_torque(4.0, 2.0, 6.0) == (3.0, 1.0)
    left, right = split_wheel_torque(10.0, 8.0, 6.0)  # dT reduced, total kept
    assert left + right == pytest.approx(10.0) and max(abs(left), abs(right)) <= 6.0
    left, right = split_wheel_torque(20.0, 0.0, 6.0)  # total itself saturates
    assert (left, right) == (6.0, 6.0)


def test_virtual_model_chain_matches_statics():
    """Hip torques from the VMC chain hold the body's weight and roll as eq. 2.27/2.30 say."""
    from crossdyn.analytic.biped import five_bar
    from crossdyn.analytic.biped.wheeled_pendulum import PendulumParams
    from crossdyn.analytic.biped.wheeled_pendulum import virtual_forces as statics
    from crossdyn.controllers.biped.virtual_model import LegGains, hip_torques, virtual_forces

    p = PendulumParams(M=6.0, m=0.4, r=0.06, I=7.2e-4, J_pitch=0.05, J_yaw=0.07, D=0.4)
    legs = (0.10, 0.16, 0.32)
    alpha = np.radians(215.0)
    _, y1, _ = five_bar.height_derivatives(alpha, *legs)
    gains = LegGains(kp_height=400.0, kd_height=40.0, kp_roll=50.0, kd_roll=5.0)

    # Level at the reference height: each leg carries half the weight, and the
    # torque is eq. 2.30's (five_bar.hip_torque) for that force.
    F_y, T_x = virtual_forces(gains, 0.3, 0.0, 0.3, 0.0, 0.0)
    tau_L, tau_R = hip_torques(p, (y1, y1), F_y, T_x, limit=17.0)
    assert tau_L == pytest.approx(float(five_bar.hip_torque(alpha, p.M * p.g / 2, *legs))) and tau_L == tau_R

    # Left side up (positive roll) -> push the right leg harder; the leg forces
    # recovered from the torques give back the commanded (F_y, T_x) through 2.23-2.24.
    F_y, T_x = virtual_forces(gains, 0.28, 0.0, 0.3, np.radians(3.0), 0.0)
    tau_L, tau_R = hip_torques(p, (y1, y1), F_y, T_x, limit=17.0)
    assert tau_R > tau_L and F_y > 0 and T_x < 0
    P_L, P_R = 2 * tau_L / y1, 2 * tau_R / y1
    # Linear round trip of the same doubles.
    assert_close(statics(p, P_L, P_R), (F_y, T_x), atol=1e-12, rtol=1e-12, what="(F_y, T_x) round trip")
    assert hip_torques(p, (y1, y1), 1e4, 0.0, limit=17.0) == (17.0, 17.0)  # saturated at the motor limit


def test_estimator_refuses_a_leg_that_cannot_close():
    from crossdyn.controllers.biped.estimation import Estimator, LegGeometry

    with pytest.raises(ValueError, match="cannot close"):
        Estimator(LegGeometry(l1=0.10, l2=0.16, l3=0.20, r=0.06))  # shank too short near 180 deg


def test_jump_machine_leg_targets_per_phase():
    from crossdyn.controllers.biped.jump import JumpPlan, JumpStateMachine, Phase

    plan = JumpPlan(thrust_torque=12.0)
    machine = JumpStateMachine(plan)
    targets = {}
    for phase in Phase:
        machine.phase = phase
        targets[phase] = machine.leg_target()
    assert targets[Phase.THRUST] == ("torque", 12.0)
    assert targets[Phase.CROUCH] == ("alpha", plan.alpha_crouch)
    assert targets[Phase.RETRACT] == ("alpha", plan.alpha_flight)
    assert targets[Phase.FLIGHT] == ("alpha", plan.alpha_land)
    for phase in (Phase.BALANCE, Phase.LANDING):
        mode, value = targets[phase]
        assert mode == "vmc" and np.isnan(value)
    # A plan whose thrust is still "the motors' limit" (None) cannot drive the thrust on its own.
    machine = JumpStateMachine(JumpPlan())
    machine.phase = Phase.THRUST
    with pytest.raises(ValueError, match="thrust_torque is None"):
        machine.leg_target()
