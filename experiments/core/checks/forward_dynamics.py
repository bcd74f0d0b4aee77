"""``crossdyn check forward-dynamics``: a hand-derived ``qdd = fn(q, qd, tau)`` against ``mj_forward``.

Random states take ``tau = mj_inverse(q, qd, qdd)``, torques of the size the robot's
own motions need.  A wrong forward dynamics is the exact inverse of *some* inverse
dynamics, so a mismatch is explained as ``check derivation`` would, and the implied
``M``, ``c`` and ``g`` (the unit-vector method on ``fn``) are compared with MuJoCo's.

With a declared :class:`~crossdyn.experiments.core.reduction.Reduction` the check is in the
user's coordinates: ``fn(s, u) -> sdd`` at random states ``s`` near the reduction's operating point and
inputs ``u``, MuJoCo's side with the reduction's constraints ideal
(:class:`~crossdyn.experiments.core.reduction.Constrained`).
"""

from __future__ import annotations

import functools
import os

import mujoco
import numpy as np

from ....analytic.regressor import regressor
from .. import reduction as reduced
from .. import user_code, validate
from ..errors import ParameterError
from ..limits import STATES_MAX
from ..truth import inverse_dynamics, truth_model
from . import inertial
from .common import EntryStats, UserFunction, mass_matrices, model_warnings, progress
from .mass_matrix import INERTIAL_STATES
from .names import dof_names
from .options import SAMPLED, begin
from .passive import PassiveEffects
from .report import CheckReport, Part
from .tree import rigid_tree

__all__ = ["check_forward_dynamics", "forward"]

# States at which the implied terms are recovered (each costs nv + 2 calls of the user's function).
IMPLIED_STATES = 8
# The implied terms come from inverting the user's own M^-1: round-off grows with
# M's condition number (1e4 on a light-limbed floating base), so a term is named
# "off" only when it differs by more than this fraction of its size.
IMPLIED_RTOL = 1e-6

_TRUTH = {"rigid-body": "qacc of mj_forward with qfrc_applied = tau (rigid-body: M qdd + c + g = tau)",
          "as-modeled": "qacc of mj_forward with qfrc_applied = tau (as modeled: with the armature, damping, "
                        "springs and gravity compensation)"}


def forward(model: mujoco.MjModel, q: np.ndarray, qd: np.ndarray, tau: np.ndarray, data=None) -> np.ndarray:
    """MuJoCo's ``qacc`` at each state with ``qfrc_applied = tau``, ``(n, nv)``."""
    data = mujoco.MjData(model) if data is None else data
    out = np.empty_like(qd)
    for k in range(q.shape[0]):
        data.qpos[:], data.qvel[:], data.qfrc_applied[:] = q[k], qd[k], tau[k]
        mujoco.mj_forward(model, data)
        out[k] = data.qacc
    data.qfrc_applied[:] = 0.0
    return out


@user_code.quiet_arithmetic
def check_forward_dynamics(fn, model: mujoco.MjModel | str | os.PathLike, *, reduction=None,
                           **options) -> CheckReport:
    """Check ``fn(q, qd, tau) -> qdd (nv,)`` (rad/s^2, m/s^2) against MuJoCo's forward dynamics.

    ``fn``, ``model``, the ``options`` (``dynamics`` and the sampling ones, with ``qd_range``
    and ``qdd_range``) and the errors are every check's
    (:class:`~crossdyn.experiments.core.checks.options.CheckOptions`).

    With ``reduction`` (declared with ``Reduction.from_coordinates``) it checks ``fn(s, u) -> sdd`` in
    your coordinates: ``s`` the reduced state (the reduction's order), ``u`` its inputs, ``sdd`` the
    coordinates' accelerations ``(k,)``; states drawn about the reduction's operating point (coordinates
    within ``q_range``, default 0.05, rates within ``qd_range``, default 0.5, inputs within ``u_range``,
    default 1; ``samples`` default 100), the robot placed there with its constraints kept.

    Returns:
      The :class:`~crossdyn.experiments.core.checks.report.CheckReport`, part ``qdd``.
    """
    if reduction is not None:
        return _reduced(fn, model, reduction, options)
    check = begin("check_forward_dynamics", fn, model, options, (*SAMPLED, "dynamics", "qd_range", "qdd_range"))
    model, label, o = check.model, check.label, check.options
    truth = check.truth()
    source = check.source(("q", "qd", "tau"))
    random = o.states is None
    nv = model.nv
    user = UserFunction(check.fn, label, [((nv,),)], f"({nv},) accelerations", inputs=("q", "qd", "tau"))
    data = mujoco.MjData(truth)
    stats = EntryStats((nv,))
    with model_warnings() as warned:
        for q, qd, third in progress(source.chunks(), source.total, f"checking {label}"):
            tau = inverse_dynamics(truth, q, qd, third, data=data) if random else third
            (qdd_user,) = user(q, qd, tau)
            qdd = forward(truth, q, qd, tau, data)
            stats.add(qdd_user - qdd, qdd, o.atol, o.rtol)
        part = Part.from_stats("qdd", "qdd", (dof_names(model),), stats)
        attribution = [] if part.passed else _attribute(model, truth, o.dynamics, user, source, random, o.atol,
                                                        o.rtol, label)
    return check.report("forward-dynamics", {"qdd": part}, _TRUTH[o.dynamics], attribution, source=source, user=user,
                        warned=warned)


# The reduced check's defaults: states near its operating point (rad or m; rad/s or m/s; the inputs' units),
# and fewer of them (each is a pose solved for its constraints and a constrained forward pass).
REDUCED_RANGES = {"q_range": 0.05, "qd_range": 0.5, "u_range": 1.0}
REDUCED_SAMPLES = 100


def _reduced(fn, model, reduction, options: dict) -> CheckReport:
    given = {"samples": REDUCED_SAMPLES, **options}
    check = begin("check_forward_dynamics", fn, model, given,
                  ("samples", "seed", "atol", "rtol", "dynamics", "q_range", "qd_range", "u_range"))
    model, label, o = check.model, check.label, check.options
    declared = getattr(reduction, "declared", None)
    if declared is None:
        raise ParameterError("check_forward_dynamics places the robot at your states: give a reduction declared with "
                             "Reduction.from_coordinates, not matrices")
    samples = validate.count(o.samples, 1, STATES_MAX, "samples")
    spans = {key: validate.interval(REDUCED_RANGES[key] if getattr(o, key) is None else getattr(o, key), key)
             for key in REDUCED_RANGES}
    k, m = len(declared.states), reduction.inputs.shape[1]
    order = declared.order()
    rng = np.random.default_rng(validate.seed(o.seed))
    states = np.zeros((samples, 2 * k))
    states[:, order[:k]] = [c(declared.qpos) for c in declared.states] + rng.uniform(*spans["q_range"], (samples, k))
    states[:, order[k:]] = rng.uniform(*spans["qd_range"], (samples, k))
    inputs = rng.uniform(*spans["u_range"], (samples, m))
    constrained = reduced.Constrained(model, truth_model(model, o.dynamics), declared)
    truth = np.zeros((samples, k))
    with model_warnings() as warned:
        for i in progress(range(samples), samples, f"placing the robot at {label}'s states"):
            q, v = reduced.place(model, reduction, states[i])
            qacc = constrained(q, v, declared.ctrl + reduction.inputs @ inputs[i])
            truth[i] = reduced.rates(model, reduction, q, v, qacc)
    user = UserFunction(check.fn, label, [((k,),)], f"({k},) accelerations of your coordinates", inputs=("s", "u"))
    (mine,) = user(states, inputs)
    stats = EntryStats((k,))
    stats.add(mine - truth, truth, o.atol, o.rtol)
    names = tuple(f"{c.name}_dd" for c in declared.states)
    part = Part.from_stats("qdd", "sdd", (names,), stats)
    parts_ = ", ".join(f"{key} {list(span)}" for key, span in spans.items())
    sampling = [f"{samples:,} random states about the reduction's operating point, seed {o.seed}: the coordinates "
                f"moved within q_range, their rates within qd_range, the inputs within u_range ({parts_}); the "
                "robot placed at each with its constraints and held coordinates kept"]
    kept = f"{len(declared.contacts)} contact(s) rolling" + (f", {len(declared.holds)} coordinate(s) held"
                                                             if declared.holds else "")
    truth_text = (f"MuJoCo's {o.dynamics} dynamics (M, bias, actuation) with the reduction's constraints ideal: "
                  f"loop closures closed, {kept}; read in your coordinates, J qacc + qd' H qd")
    return check.report("forward-dynamics", {"qdd": part}, truth_text, [], user=user, warned=warned,
                        samples=samples, seed=o.seed, sampling=sampling,
                        ranges={key: list(span) for key, span in spans.items()},
                        extra={"state_names": list(reduction.state_names), "input_names": list(reduction.input_names)})


def _attribute(model, truth, dynamics, user, source, random, atol, rtol, label) -> list[str]:
    passive = PassiveEffects(model, dynamics, ("armature", "damping", "stiffness", "gravcomp"), atol, rtol)
    tree = rigid_tree(model)
    kept = None
    for q, qd, third in progress(source.chunks(), source.total, f"explaining {label}"):
        tau = inverse_dynamics(truth, q, qd, third) if random else third
        (qdd_user,) = user(q, qd, tau)
        # What your accelerations need in MuJoCo's dynamics, against what was applied: -(derivation error).
        error = tau - inverse_dynamics(truth, q, qd, qdd_user)
        if passive:
            passive.add({"force": error}, functools.partial(_force, q=q, qd=qd, qdd=qdd_user))
        if kept is None:
            k = min(INERTIAL_STATES, q.shape[0])
            kept = (q[:k], qd[:k], qdd_user[:k], error[:k], tau[:k])
    out = passive.sentences() if passive else []
    if out or kept is None:
        return out
    out += _implied_terms(model, truth, user, kept[0][:IMPLIED_STATES], kept[1][:IMPLIED_STATES])
    if tree is not None:
        q, qd, qdd_user, error, tau = kept
        Y = regressor(tree, q, qd, qdd_user)
        out += inertial.explain(tree, Y.reshape(-1, Y.shape[-1]), error.ravel(), tau.ravel(), atol, rtol)
    return out


def _force(model: mujoco.MjModel, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> dict[str, np.ndarray]:
    return {"force": inverse_dynamics(model, q, qd, qdd)}


def _implied_terms(model, truth, user, q, qd) -> list[str]:
    """The mass matrix, velocity terms and gravity your forward dynamics implies, against MuJoCo's."""
    n, nv = q.shape[0], model.nv
    zero = np.zeros((n, nv))
    a0 = user(q, zero, zero)[0]
    Minv = np.stack([user(q, zero, np.tile(np.eye(nv)[i], (n, 1)))[0] - a0 for i in range(nv)], axis=2)
    if np.any(np.linalg.cond(Minv) > 1e12):  # no inverse: the accelerations do not follow the torques
        return ["your accelerations do not respond to the torques as a mass matrix makes them: "
                "d qdd / d tau = [f(q, 0, e_i) - f(q, 0, 0)] is singular"]
    M_user = np.linalg.inv(Minv)
    g_user = -np.einsum("nij,nj->ni", M_user, a0)
    c_user = -np.einsum("nij,nj->ni", M_user, user(q, qd, zero)[0]) - g_user
    M = mass_matrices(truth, q)
    g = inverse_dynamics(truth, q, zero, zero)
    c = inverse_dynamics(truth, q, qd, zero) - g
    names = dof_names(model)
    off, agree = [], []
    for what, mine, theirs in (("mass matrix", M_user, M), ("velocity terms", c_user, c), ("gravity", g_user, g)):
        err = np.abs(mine - theirs)
        bound = IMPLIED_RTOL * max(float(np.abs(theirs).max()), 1e-12)
        if err.max() > bound:
            index = np.unravel_index(int(np.argmax(err)), err.shape)[1:]
            entry = f"M[{names[index[0]]}, {names[index[1]]}]" if len(index) == 2 else names[index[0]]
            off.append(f"{what} (off by up to {err.max():.3g} at {entry})")
        else:
            agree.append(what)
    if not off:
        return []
    text = "the inverse dynamics your forward dynamics implies has its " + " and ".join(off)
    if agree:
        text += f"; its {' and '.join(agree)} agree{'s' if len(agree) == 1 else ''}"
    return [text + f" (recovered at {n} states by unit torques: M_yours^-1 = [f(q, 0, e_i) - f(q, 0, 0)])"]
