"""linearize() and holding_control() against hand derivations and MuJoCo's own transition derivatives."""

from __future__ import annotations

import control
import mujoco
import numpy as np
import pytest

from crossdyn import holding_control, linearize
from crossdyn.analytic.cart_pole import CartPoleParams, forward_dynamics, linearize_upright
from crossdyn.experiments.core.errors import ModelError, ParameterError, StateError
from crossdyn.experiments.core.models import load_model, with_options
from support import assert_close

# A floating box carrying a damped ball-jointed arm, pushed up by a thruster: free and
# ball joints (tangent space 6 + 3 dofs from 7 + 4 coordinates), damping, a site actuator.
FLOATING = """
<mujoco>
  <option timestep="0.002" integrator="Euler"/>
  <worldbody>
    <body name="base" pos="0 0 1">
      <freejoint name="root"/>
      <site name="thruster"/>
      <geom type="box" size=".1 .2 .3" mass="2"/>
      <body name="arm" pos="0 0 -.3">
        <joint name="shoulder" type="ball" damping="0.1"/>
        <geom type="capsule" fromto="0 0 0 .2 0 -.3" size=".03" mass=".5"/>
      </body>
    </body>
  </worldbody>
  <actuator><motor name="lift" site="thruster" gear="0 0 1 0 0 0"/></actuator>
</mujoco>
"""


def cart_pole_params(model) -> CartPoleParams:
    """The hand model's numbers, read from the MJCF (its one home)."""
    pole = model.body("pole")
    return CartPoleParams(m_cart=float(model.body("cart").mass[0]), m_pole=float(pole.mass[0]),
                          lc=float(pole.ipos[2]), inertia=float(pole.inertia[1]), g=-float(model.opt.gravity[2]))


def step_derivatives(model, qpos, qvel, ctrl, eps=1e-6):
    """One mj_step differentiated by central differences (hinge/slide models), for integrators
    mjd_transitionFD does not support (RK4)."""
    data = mujoco.MjData(model)
    n, nu = model.nv, model.nu

    def step(x, u):
        data.qpos[:], data.qvel[:], data.ctrl[:], data.time = x[:n], x[n:], u, 0.0
        mujoco.mj_step(model, data)
        return np.concatenate([data.qpos, data.qvel])

    x0 = np.concatenate([qpos, qvel])
    Ad = np.column_stack([(step(x0 + e, ctrl) - step(x0 - e, ctrl)) / (2 * eps) for e in eps * np.eye(2 * n)])
    Bd = np.column_stack([(step(x0, ctrl + e) - step(x0, ctrl - e)) / (2 * eps) for e in eps * np.eye(nu)])
    return Ad, Bd


def transition(model, lin):
    """mjd_transitionFD at the linearization's operating point."""
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:], data.ctrl[:] = lin.qpos, lin.qvel, lin.ctrl
    mujoco.mj_forward(model, data)
    Ad, Bd = np.zeros((2 * model.nv, 2 * model.nv)), np.zeros((2 * model.nv, model.nu))
    mujoco.mjd_transitionFD(model, data, 1e-6, True, Ad, Bd, None, None)
    return Ad, Bd


def test_cart_pole_matches_the_hand_linearization():
    model = load_model("cart_pole")
    lin = linearize(model, keyframe="upright")
    A, B = linearize_upright(cart_pole_params(model))
    # Central differences at step 1e-6 err by ~1e-12 relative (measured 2.4e-13); 1e-6 is the bar.
    assert_close(lin.A, A, atol=1e-6 * np.abs(A).max(), what="A")
    assert_close(lin.B, B, atol=1e-6 * np.abs(B).max(), what="B")
    assert lin.state_names == ("cart", "pole", "cart_dot", "pole_dot") and lin.input_names == ("push",)
    assert_close(lin.qacc, np.zeros(2), atol=1e-12, what="upright is an equilibrium")


def test_a_wrong_hand_linearization_is_seen():
    """The comparison has teeth: a pole 2 % longer moves A's gravity entries far past the tolerance."""
    model = load_model("cart_pole")
    p = cart_pole_params(model)
    wrong, _ = linearize_upright(CartPoleParams(p.m_cart, p.m_pole, 1.02 * p.lc, p.inertia, p.g))
    assert np.abs(linearize(model, keyframe="upright").A - wrong).max() > 1e-3 * np.abs(wrong).max()


def test_away_from_upright_the_rows_are_the_forward_dynamics_jacobian():
    """At a tilted, moving state the velocity rows are d(qdd)/d(q, qd, F) of the hand model."""
    model = load_model("cart_pole")
    p = cart_pole_params(model)
    q0, qd0, f0 = np.array([0.3, 0.7]), np.array([-0.4, 1.5]), 2.0
    lin = linearize(model, qpos=q0, qvel=qd0, ctrl=[f0])
    h = 1e-6
    def qdd(e):
        return forward_dynamics(p, q0 + e[:2], qd0 + e[2:], f0)

    jac = np.column_stack([(qdd(e) - qdd(-e)) / (2 * h) for e in h * np.eye(4)])
    dfdu = (forward_dynamics(p, q0, qd0, f0 + h) - forward_dynamics(p, q0, qd0, f0 - h)) / (2 * h)
    # Both sides are central differences at 1e-6: ~1e-9 of the entries' size (~10).
    assert_close(lin.A[2:], jac, atol=1e-7, what="velocity rows of A")
    assert_close(lin.B[2:, 0], dfdu, atol=1e-7, what="velocity rows of B")


@pytest.mark.parametrize("integrator", ["mjINT_EULER", "mjINT_IMPLICIT", "mjINT_IMPLICITFAST"])
def test_discrete_matches_mjd_transitionFD(integrator):
    """With joint damping too (Euler then integrates damping implicitly: (M + h D) qacc = f)."""
    model = with_options(load_model("cart_pole"), integrator=getattr(mujoco.mjtIntegrator, integrator))
    model.dof_damping[:] = [0.3, 0.05]
    lin = linearize(model, keyframe="upright")
    Ad, Bd = transition(model, lin)
    ad, bd = lin.discrete()
    # Two finite-difference routes to one map: both err by ~1e-12 (measured 1e-16 here); the bar.
    assert_close(ad, Ad, atol=1e-9, what="Ad")
    assert_close(bd, Bd, atol=1e-9, what="Bd")


def test_discrete_rk4_matches_a_differentiated_step():
    model = load_model("cart_pole")  # RK4, which mjd_transitionFD refuses
    lin = linearize(model, keyframe="upright")
    Ad, Bd = step_derivatives(model, lin.qpos, lin.qvel, lin.ctrl)
    ad, bd = lin.discrete()
    # Central differences of one step at 1e-6: round-off 1e-16 / 1e-6 on unit-size states.
    assert_close(ad, Ad, atol=1e-9, what="Ad")
    assert_close(bd, Bd, atol=1e-9, what="Bd")
    # Another step size is another map (the default is the model's step).
    assert np.abs(lin.discrete(0.01)[0] - ad).max() > 1e-3


def test_free_and_ball_joints_linearize_in_the_tangent_space():
    model = mujoco.MjModel.from_xml_string(FLOATING)
    lin = linearize(model)
    assert (model.nq, model.nv) == (11, 9)
    assert lin.A.shape == (18, 18) and lin.B.shape == (18, 1)
    assert lin.state_names[:6] == ("root.x", "root.y", "root.z", "root.rx", "root.ry", "root.rz")
    # In free fall, not an equilibrium: still the transition's first order (measured 3e-11).
    assert_close(lin.qacc[2], -9.81, atol=1e-12, what="free fall")
    Ad, Bd = transition(model, lin)
    ad, bd = lin.discrete()
    assert_close(ad, Ad, atol=1e-9, what="Ad")
    assert_close(bd, Bd, atol=1e-9, what="Bd")
    # A deviation is measured in the tangent space: a 0.1 rad turn about the body's x axis.
    turned = lin.qpos.copy()
    mujoco.mj_integratePos(model, turned, np.r_[0, 0, 0, 0.1, 0, 0, 0, 0, 0], 1.0)
    assert_close(lin.deviation(turned, lin.qvel)[:9], np.r_[0, 0, 0, 0.1, 0, 0, 0, 0, 0], atol=1e-12,
                 what="tangent deviation")


def test_ss_designs_a_stabilizing_lqr():
    lin = linearize("cart_pole", keyframe="upright")
    sys = lin.ss()
    assert sys.state_labels == ["cart", "pole", "cart_dot", "pole_dot"] and sys.input_labels == ["push"]
    K, _, poles = control.lqr(sys, np.diag([1.0, 10.0, 1.0, 1.0]), [[0.1]])
    assert np.all(np.linalg.eigvals(lin.A - lin.B @ K).real < 0)
    assert np.max(np.linalg.eigvals(lin.A).real) > 3.0  # the upright pole alone falls (e^(4 t))


def arm_with(motors: str) -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_string(f"""
    <mujoco><option gravity="0 0 -9.81"/>
      <worldbody><body name="upper"><joint name="shoulder" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 .3 0 0" size=".02" mass="1"/>
        <body name="lower" pos=".3 0 0"><joint name="elbow" axis="0 1 0"/>
          <geom type="capsule" fromto="0 0 0 .2 0 0" size=".02" mass=".5"/></body></body></worldbody>
      <actuator>{motors}</actuator>
    </mujoco>""")


def test_holding_control_keeps_a_pose_at_rest():
    model = arm_with('<motor name="s" joint="shoulder" gear="2"/><position name="e" joint="elbow" kp="50"/>')
    qpos = np.array([0.4, -0.9])
    ctrl = holding_control(model, qpos=qpos)
    data = mujoco.MjData(model)
    data.qpos[:], data.ctrl[:] = qpos, ctrl
    mujoco.mj_forward(model, data)
    # Least squares on a square, well-conditioned moment map: round-off of the ~5 N m gravity torque.
    assert_close(data.qacc, np.zeros(2), atol=1e-9, what="qacc under the holding control")
    # ... and 'hold' gives linearize the same operating point.
    assert_close(linearize(model, qpos=qpos, ctrl="hold").qacc, np.zeros(2), atol=1e-9, what="qacc")


def test_no_control_can_hold_an_unactuated_or_saturated_pose():
    with pytest.raises(ModelError, match=r"dof 'elbow' lacks"):
        holding_control(arm_with('<motor name="s" joint="shoulder"/>'), qpos=[0.4, -0.9])
    with pytest.raises(ModelError, match=r"actuator 's' would need .* outside its ctrlrange \[-1, 1\]"):
        holding_control(arm_with('<motor name="s" joint="shoulder" ctrlrange="-1 1"/><motor joint="elbow"/>'),
                        qpos=[0.0, 0.0])
    with pytest.raises(ModelError, match="no actuators"):
        holding_control(arm_with(""), qpos=[0.4, 0.0])


def test_bad_operating_points_are_named():
    model = load_model("cart_pole")
    with pytest.raises(ParameterError, match=r"no keyframe 'tilted' in the model \(it has: upright\)"):
        linearize(model, keyframe="tilted")
    with pytest.raises(ParameterError, match="out of range"):
        linearize(model, keyframe=3)
    with pytest.raises(StateError, match="qpos must have 2 entries"):
        linearize(model, qpos=[0.0, 0.0, 0.0])
    with pytest.raises(StateError, match="non-finite"):
        linearize(model, qvel=[0.0, np.nan])
    with pytest.raises(ParameterError, match="'hold'"):
        linearize(model, ctrl="keep")
    with pytest.raises(ParameterError, match="positive time step"):
        linearize(model).discrete(-1.0)
