"""Generic dynamics against MuJoCo, and ``crossdyn check derivation``.

- :func:`tree_from_model` reads an :class:`analytic.rnea.Tree` from a compiled
  model, refusing (with :class:`ModelError`) anything the rigid-body algorithms do
  not describe, instead of silently dropping it.
- :func:`load_derivation` / :func:`check_derivation`: the user's own inverse
  dynamics ``FILE.py:FUNC`` checked against ``mj_inverse`` term by term
  (``experiments.crosscheck.check``).

Experiments (``crossdyn run``):

- ``rnea-two-link-arm``, ``rnea-spatial-arm``, ``rnea-free-tree``: seed 000's spatial
  RNEA vs ``mj_inverse`` at random states; mass matrix and bias by the unit-vector
  method vs ``mj_fullM`` and ``qfrc_bias``.
- ``unit-vector-simulator``: the unit-vector forward dynamics integrated by
  semi-implicit Euler vs MuJoCo's Euler integrator, fixed and floating base.
- ``lagrange-symbolic``: seed 003's recipe in SymPy; the RR arm equals SPEC §1's
  closed form, M is SPD and Mdot - 2C skew, and its torques match ``mj_inverse``.
- ``derivation-attribution``: four derivations of the two-link arm, each checked
  against MuJoCo; the checker must blame the right term.
"""

from __future__ import annotations

import copy as copy_module
import dataclasses
import functools
import importlib.util
import os
import sys
from pathlib import Path
from typing import Callable

import mujoco
import numpy as np
import sympy as sp

from analytic import lagrange as lagrange_module
from analytic import two_link
from analytic.rnea import Tree, rnea
from analytic.unit_vector import mass_matrix_and_bias, simulate
from experiments import plots
from experiments.crosscheck import Report, check, sample_states
from experiments.errors import DerivationError, ModelError
from experiments.registry import Param, experiment
from experiments.results import Context
from experiments.truth import (
    bias_force,
    check_exact_dynamics,
    load_model,
    mass_matrix,
    two_link_params,
)

__all__ = [
    "tree_from_model",
    "load_derivation",
    "check_derivation",
    "mujoco_euler",
    "faulty_two_link",
    "FAULTS",
]

_TYPES = {
    int(mujoco.mjtJoint.mjJNT_HINGE): "hinge",
    int(mujoco.mjtJoint.mjJNT_SLIDE): "slide",
    int(mujoco.mjtJoint.mjJNT_FREE): "free",
}


def _quat_mat(quat) -> np.ndarray:
    out = np.empty(9)
    mujoco.mju_quat2Mat(out, np.asarray(quat, dtype=float))
    return out.reshape(3, 3)


def tree_from_model(model: mujoco.MjModel) -> Tree:
    """Describe a compiled model as a :class:`~analytic.rnea.Tree`.

    Reads body placements (``body_pos``, ``body_quat``), inertial frames
    (``body_ipos``, ``body_iquat``, ``body_inertia``: the principal inertia is
    rotated back to a full tensor in the body frame), joint axes and anchors
    (``jnt_axis``, ``jnt_pos``), reference positions (``qpos0``) and gravity
    (zero if the gravity flag is disabled).

    Raises:
      ModelError: a ball joint (not supported: replace it with three hinges),
        armature, damping, stiffness, frictionloss or active equality constraints
        (``experiments.truth.check_exact_dynamics``), gravity compensation, fluid
        forces, or tendon springs/dampers: all would make ``mj_inverse`` differ from
        the rigid-body model, so they are refused rather than ignored.
    """
    check_exact_dynamics(model)
    problems = []
    for j in range(model.njnt):
        if int(model.jnt_type[j]) not in _TYPES:
            problems.append(f"joint {model.joint(j).name!r} is a ball joint (use three hinges)")
    for b in np.flatnonzero(model.body_gravcomp != 0):
        problems.append(f"body {model.body(int(b)).name!r} has gravcomp={model.body_gravcomp[b]:g}")
    if model.opt.density != 0 or model.opt.viscosity != 0 or np.any(model.opt.wind != 0):
        problems.append("fluid forces are on (option density, viscosity or wind)")
    if model.ntendon and (np.any(model.tendon_stiffness != 0) or np.any(model.tendon_damping != 0)):
        problems.append("a tendon has stiffness or damping")
    if problems:
        raise ModelError("model cannot be described as a rigid-body tree for analytic.rnea: "
                         + "; ".join(problems) + ".")

    nb = model.nbody - 1  # MuJoCo's body 0 is the world
    gravity = np.array(model.opt.gravity, dtype=float)
    if model.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_GRAVITY:
        gravity = np.zeros(3)
    inertia = np.empty((nb, 3, 3))
    for b in range(nb):
        R = _quat_mat(model.body_iquat[b + 1])
        inertia[b] = R @ np.diag(model.body_inertia[b + 1]) @ R.T
    kinds = tuple(_TYPES[int(k)] for k in model.jnt_type)
    ref = np.array([model.qpos0[model.jnt_qposadr[j]] if kinds[j] != "free" else 0.0 for j in range(model.njnt)])
    try:
        tree = Tree(
            parent=np.asarray(model.body_parentid[1:], dtype=int) - 1,
            pos=np.array(model.body_pos[1:], dtype=float),
            rot=np.array([_quat_mat(q) for q in model.body_quat[1:]]).reshape(nb, 3, 3),
            mass=np.array(model.body_mass[1:], dtype=float),
            com=np.array(model.body_ipos[1:], dtype=float),
            inertia=inertia,
            joint_body=np.asarray(model.jnt_bodyid, dtype=int) - 1,
            joint_type=kinds,
            joint_axis=np.array(model.jnt_axis, dtype=float).reshape(-1, 3),
            joint_pos=np.array(model.jnt_pos, dtype=float).reshape(-1, 3),
            joint_ref=ref,
            gravity=gravity,
            body_names=tuple(model.body(b + 1).name for b in range(nb)),
            joint_names=tuple(model.joint(j).name for j in range(model.njnt)),
        )
    except ValueError as exc:
        raise ModelError(f"model cannot be described as a tree for analytic.rnea: {exc}") from None
    if not (np.array_equal(tree.qpos_adr, model.jnt_qposadr) and np.array_equal(tree.dof_adr, model.jnt_dofadr)):
        raise ModelError("the model's joint coordinates are not packed joint by joint; cannot map them")
    return tree


def load_derivation(spec: str) -> Callable:
    """Import ``FILE.py:FUNC`` and return the function.

    Raises:
      DerivationError: malformed spec, missing file, the file fails to import, no
        such function, or it is not callable.
    """
    path_text, sep, name = spec.rpartition(":")
    if not sep or not path_text or not name:
        raise DerivationError(f"expected FILE.py:FUNC, got {spec!r}")
    path = Path(path_text).expanduser()
    if not path.is_file():
        raise DerivationError(f"no derivation file {path_text!r}")
    module_name = f"crossdyn_user_{path.stem}_{abs(hash(str(path.resolve())))}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise DerivationError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[module_name] = module
    try:
        loader_spec.loader.exec_module(module)
    except Exception as exc:  # the user's module: show what it raised, on one line
        sys.modules.pop(module_name, None)
        detail = " ".join(str(exc).split())
        raise DerivationError(f"{path} failed to import: {type(exc).__name__}: {detail}") from None
    fn = getattr(module, name, None)
    if fn is None:
        public = sorted(k for k, v in vars(module).items() if callable(v) and not k.startswith("_"))
        defined = ", ".join(public) or "nothing callable"
        raise DerivationError(f"{path} has no function {name!r} (it defines: {defined})")
    if not callable(fn):
        raise DerivationError(f"{path}: {name!r} is a {type(fn).__name__}, not a function")
    return fn


def check_derivation(spec: str, model: mujoco.MjModel, samples: int = 1000, seed: int = 0) -> Report:
    """Check the user's ``FILE.py:FUNC`` (``tau = FUNC(q, qd, qdd)``) against ``mj_inverse``.

    Raises:
      DerivationError: the function cannot be loaded, raises, or returns the
        wrong shape; ModelError: the model has passive or constraint forces.
    """
    fn = load_derivation(spec)
    return check(fn, model, samples=samples, seed=seed, label=os.path.basename(spec))


def mujoco_euler(model: mujoco.MjModel, qpos, qvel, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """MuJoCo's own trajectory with the Euler integrator and zero controls.

    Returns:
      ``qpos (steps + 1, nq)``, ``qvel (steps + 1, nv)``.
    """
    model = copy_module.copy(model)
    model.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = qpos, qvel
    qs, vs = [data.qpos.copy()], [data.qvel.copy()]
    for _ in range(steps):
        mujoco.mj_step(model, data)
        qs.append(data.qpos.copy())
        vs.append(data.qvel.copy())
    return np.array(qs), np.array(vs)


# --- Wrong derivations of the two-link arm, for the attribution showcase --------

def _gravity_flipped(params, q, qd, qdd):
    # Potential energy written with the wrong sign of g.
    return two_link.lagrange(dataclasses.replace(params, g=-params.g), q, qd, qdd)


def _coriolis_dropped(params, q, qd, qdd):
    # The closed form with tau1's Coriolis term -2 h qd1 qd2 forgotten.
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    h = params.m2 * params.l1 * params.p2 * np.sin(q[..., 1])
    tau = two_link.lagrange(params, q, qd, qdd)
    tau[..., 0] += 2 * h * qd[..., 0] * qd[..., 1]
    return tau


# fault -> (derivation(params, q, qd, qdd), the term the checker must blame or None)
FAULTS: dict[str, tuple[Callable, str | None]] = {
    "correct": (two_link.lagrange, None),
    "seed-000-printed": (two_link.seed_000_printed, "mass_matrix"),
    "gravity-sign-flipped": (_gravity_flipped, "gravity"),
    "coriolis-dropped": (_coriolis_dropped, "velocity"),
}


def faulty_two_link(fault: str, params: two_link.TwoLinkParams) -> Callable:
    """A two-link derivation ``tau(q, qd, qdd)`` with a known fault (``FAULTS``)."""
    return functools.partial(FAULTS[fault][0], params)


# --- Experiments ----------------------------------------------------------------

# rnea vs mj_inverse: |error| <= 1e-9 (1 + |tau|).  Torques reach ~500 N m on the
# free tree (fast random states), so round-off is ~1e-13 N m; 1e-9 leaves 4 orders.
RNEA_TOL = 1e-9
# Unit-vector A and b vs mj_fullM / qfrc_bias: 1e-10 x the largest entry; both are
# sums of a few dozen products, so round-off is ~1e-15 x scale.
MATRIX_RTOL = 1e-10
# The unit-vector simulator vs MuJoCo's Euler at the same dt: the two integrate the
# same equations in the same order, so only round-off (1e-16 per step) separates
# them, amplified by the system's own sensitivity over 2 s.
TRAJECTORY_TOL = 1e-8
RNEA_MODELS = ("two_link_arm", "spatial_arm", "free_tree")


def _initial_state(model: mujoco.MjModel, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A seeded start: joints displaced up to 0.5 rad (m), velocities up to 1 rad/s (m/s)."""
    rng = np.random.default_rng(seed)
    tree = tree_from_model(model)
    qpos = model.qpos0.copy()
    for kind, qa in zip(tree.joint_type, tree.qpos_adr):
        if kind == "free":
            quat = np.array([1.0, *rng.uniform(-0.3, 0.3, 3)])
            qpos[qa + 3 : qa + 7] = quat / np.linalg.norm(quat)
        else:
            qpos[qa] += rng.uniform(-0.5, 0.5)
    return qpos, rng.uniform(-1.0, 1.0, model.nv)


def unit_vector_errors(model: mujoco.MjModel, samples: int, seed: int) -> dict:
    """Unit-vector ``A``, ``b`` (with ``rnea`` inside) vs ``mj_fullM`` and ``qfrc_bias``."""
    tree = tree_from_model(model)
    qpos, qvel, _ = sample_states(model, samples, seed)
    A, b = mass_matrix_and_bias(functools.partial(rnea, tree), qpos, qvel)
    M_ref, b_ref = mass_matrix(model, qpos), bias_force(model, qpos, qvel)
    return {
        "mass_matrix_max_abs_error": float(np.abs(A - M_ref).max()),
        "mass_matrix_scale": float(np.abs(M_ref).max()),
        "bias_max_abs_error": float(np.abs(b - b_ref).max()),
        "bias_scale": float(np.abs(b_ref).max()),
        "mass_matrix_symmetric_to": float(np.abs(A - np.swapaxes(A, 1, 2)).max()),
    }


def _rnea_experiment(name: str):
    @experiment(
        f"rnea-{name.replace('_', '-')}",
        summary=f"seed 000's spatial RNEA vs mj_inverse on {name}; unit-vector A, b vs mj_fullM, qfrc_bias",
        expected=f"|tau error| <= {RNEA_TOL:g} (1 + |tau|); A, b within {MATRIX_RTOL:g} x scale",
        params={"samples": Param(1000, "number of random states", 1, 1_000_000)},
    )
    def run(ctx: Context) -> dict:
        model = load_model(name)
        tree = tree_from_model(model)
        samples = 200 if ctx.short else int(ctx.params["samples"])
        report = check(functools.partial(rnea, tree), model, samples=samples, seed=ctx.seed,
                       atol=RNEA_TOL, rtol=RNEA_TOL, label="analytic.rnea")
        matrices = unit_vector_errors(model, min(samples, 200), ctx.seed)
        ctx.savefig(plots.term_errors(report, f"spatial RNEA vs mj_inverse on {name} ({samples} states)"),
                    "term_errors.png")
        ok_matrices = (matrices["mass_matrix_max_abs_error"] <= MATRIX_RTOL * matrices["mass_matrix_scale"]
                       and matrices["bias_max_abs_error"] <= MATRIX_RTOL * matrices["bias_scale"])
        return {
            **report.to_dict(),
            **matrices,
            "model": name,
            "nq": model.nq,
            "nv": model.nv,
            "passed": bool(report.passed and ok_matrices),
            "measured": f"tau {report.max_abs_error:.1e} (rel {report.max_rel_error:.0e}); "
            f"A {matrices['mass_matrix_max_abs_error']:.0e}, b {matrices['bias_max_abs_error']:.0e}",
        }

    return run


for _name in RNEA_MODELS:
    _rnea_experiment(_name)


def simulator_error(model: mujoco.MjModel, seconds: float, seed: int) -> np.ndarray:
    """Unit-vector simulator vs MuJoCo's Euler from the same start; max |q error| per step.

    Positions are compared coordinate-wise (a quaternion's entries included).
    """
    tree = tree_from_model(model)
    qpos, qvel = _initial_state(model, seed)
    steps = int(round(seconds / model.opt.timestep))
    q_ours, v_ours = simulate(functools.partial(rnea, tree), tree.joint_type, qpos, qvel, model.opt.timestep, steps)
    q_mj, v_mj = mujoco_euler(model, qpos, qvel, steps)
    return np.maximum(np.abs(q_ours - q_mj).max(axis=1), np.abs(v_ours - v_mj).max(axis=1) * model.opt.timestep)


@experiment(
    "unit-vector-simulator",
    summary="unit-vector forward dynamics (spatial RNEA inside) + semi-implicit Euler vs MuJoCo's Euler",
    expected=f"2 s trajectories agree to {TRAJECTORY_TOL:g} (two-link, free tree); spatial arm over 0.5 s",
    params={"seconds": Param(2.0, "simulated time for the two-link arm and the free tree, s", 0.01, 20.0)},
)
def unit_vector_simulator(ctx: Context) -> dict:
    seconds = 0.5 if ctx.short else float(ctx.params["seconds"])
    # The spatial arm's mass matrix reaches condition number ~3e6 (a 0.3 kg hand on a
    # 2 kg base), so 1e-13 round-off differences in A become ~1e-9 relative in qacc,
    # and after ~1 s its chaotic motion grows them ~1e4-fold per 0.5 s, as MuJoCo's
    # own run does from a 1e-13 start offset.  So it is compared over 0.5 s.
    horizon = {"two_link_arm": seconds, "free_tree": seconds, "spatial_arm": min(seconds, 0.5)}
    errors = {name: simulator_error(load_model(name), t, ctx.seed) for name, t in horizon.items()}
    worst = {name: float(e.max()) for name, e in errors.items()}
    # How far MuJoCo drifts from *itself* when its start moves by 1e-14 (a few ulps
    # of a ~1 rad angle): the sensitivity that amplifies any round-off difference.
    sensitivity = {}
    for name, t in horizon.items():
        model = load_model(name)
        qpos, qvel = _initial_state(model, ctx.seed)
        steps = int(round(t / model.opt.timestep))
        a, _ = mujoco_euler(model, qpos, qvel, steps)
        b, _ = mujoco_euler(model, qpos, qvel + 1e-14, steps)
        sensitivity[name] = float(np.abs(a - b).max())

    fig, ax = plots.figure(1, 1, width=7.0, height=3.2)
    for name, e in errors.items():
        dt = load_model(name).opt.timestep
        ax.semilogy(np.arange(e.size) * dt, np.maximum(e, 1e-18), label=name)
    ax.axhline(TRAJECTORY_TOL, color="k", ls="--", lw=0.8, label=f"{TRAJECTORY_TOL:g}")
    ax.set_xlabel("t (s)")
    ax.set_ylabel("max |ours - MuJoCo Euler|")
    ax.set_title("semi-implicit Euler on unit-vector dynamics vs mj_step (Euler)")
    ax.legend(fontsize=7)
    ctx.savefig(fig, "trajectory_error.png")
    passed = all(v <= TRAJECTORY_TOL for v in worst.values())
    return {
        "passed": bool(passed),
        "measured": ", ".join(f"{k} {v:.0e}" for k, v in worst.items()),
        "max_error": worst,
        "mujoco_self_divergence_from_1e-14_start_offset": sensitivity,
        "horizon_s": horizon,
        "explanation": (
            "qpos compared directly; qvel error scaled by dt (its effect on qpos in one step). "
            "The spatial arm is compared over at most 0.5 s: its mass matrix is ill-conditioned "
            "(condition number ~3e6) and its motion chaotic, so round-off differences grow past "
            "1e-8 after ~1 s exactly as MuJoCo diverges from itself after a 1e-13 start offset."
        ),
    }


def pr_arm_tree(values: dict) -> Tree:
    """Seed 003's PR arm as a :class:`Tree` for ``analytic.rnea``: an independent path.

    Slide along world x (CoM of link 1 at ``q1 - dc1``), then a hinge about z at the
    slider's origin (CoM of link 2 at ``dc2`` along the link); no gravity.  Link
    1's rotational inertia never enters (it cannot rotate), link 2's is ``I2zz``.
    """
    eye = np.broadcast_to(np.eye(3), (2, 3, 3)).copy()
    return Tree(
        parent=np.array([-1, 0]),
        pos=np.zeros((2, 3)),
        rot=eye,
        mass=np.array([values["m1"], values["m2"]]),
        com=np.array([[-values["dc1"], 0.0, 0.0], [values["dc2"], 0.0, 0.0]]),
        inertia=np.array([np.zeros((3, 3)), np.diag([0.0, 0.0, values["I2zz"]])]),
        joint_body=np.array([0, 1]),
        joint_type=("slide", "hinge"),
        joint_axis=np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]),
        joint_pos=np.zeros((2, 3)),
        joint_ref=np.zeros(2),
        gravity=np.zeros(3),
    )


def symbolic_properties(lm: lagrange_module.LagrangeModel, values: dict, samples: int, seed: int) -> dict:
    """At seeded random states: M's symmetry and smallest eigenvalue, ``Mdot - 2C`` skew, ``c = C qd``."""
    rng = np.random.default_rng(seed)
    q, qd = rng.uniform(-np.pi, np.pi, (samples, lm.n)), rng.uniform(-10, 10, (samples, lm.n))
    f = lm.numeric(values)
    M, N = f["M"](q), f["Mdot"](q, qd) - 2 * f["C"](q, qd)
    return {
        "M_asymmetry": float(np.abs(M - np.swapaxes(M, 1, 2)).max()),
        "M_min_eigenvalue": float(np.linalg.eigvalsh(M).min()),
        "skew_error": float(np.abs(N + np.swapaxes(N, 1, 2)).max()),
        "c_equals_C_qd": float(np.abs(np.einsum("nij,nj->ni", f["C"](q, qd), qd) - f["c"](q, qd)).max()),
    }


@experiment(
    "lagrange-symbolic",
    summary="seed 003's Lagrange recipe in SymPy: PR and RR arms; RR vs SPEC §1 and mj_inverse, PR vs RNEA",
    expected="RR equals the closed form symbolically; M SPD, Mdot-2C skew; numeric checks to 1e-9",
)
def lagrange_symbolic(ctx: Context) -> dict:
    samples = 200 if ctx.short else 2000
    rr = lagrange_module.rr_arm()
    D, vel, grav = lagrange_module.rr_closed_form(rr)
    qdv = sp.Matrix(rr.qd)
    symbolic_diff = {
        "M": sp.simplify(rr.M - D) == sp.zeros(2, 2),
        "c": sp.simplify(rr.c - vel) == sp.zeros(2, 1),
        "g": sp.simplify(rr.g - grav) == sp.zeros(2, 1),
        "Mdot_minus_2C_skew": sp.simplify((rr.Mdot - 2 * rr.C) + (rr.Mdot - 2 * rr.C).T) == sp.zeros(2, 2),
        "c_is_C_qd": sp.simplify(rr.C * qdv - rr.c) == sp.zeros(2, 1),
    }
    model = load_model("two_link_arm")
    params = two_link_params(model)
    report = check(rr.inverse_dynamics(vars(params)), model, samples=samples, seed=ctx.seed,
                   atol=RNEA_TOL, rtol=RNEA_TOL, label="lagrange rr_arm")
    ctx.savefig(plots.term_errors(report, "symbolic RR arm vs mj_inverse"), "term_errors.png")
    rr_props = symbolic_properties(rr, vars(params), samples, ctx.seed)

    pr = lagrange_module.pr_arm()
    pr_values = {"m1": 1.5, "m2": 0.8, "dc1": 0.1, "dc2": 0.25, "I2zz": 0.02}  # illustrative, SI
    rng = np.random.default_rng(ctx.seed)
    q, qd, qdd = (rng.uniform(-3, 3, (samples, 2)) for _ in range(3))
    pr_tau = pr.inverse_dynamics(pr_values)(q, qd, qdd)
    pr_vs_rnea = float(np.abs(pr_tau - rnea(pr_arm_tree(pr_values), q, qd, qdd)).max())
    pr_props = symbolic_properties(pr, pr_values, samples, ctx.seed)

    numeric_ok = (report.passed and pr_vs_rnea <= RNEA_TOL
                  and all(p["M_min_eigenvalue"] > 0 and p["skew_error"] <= 1e-12 and p["M_asymmetry"] == 0
                          for p in (rr_props, pr_props)))
    return {
        "passed": bool(all(symbolic_diff.values()) and numeric_ok),
        "measured": f"symbolic diff zero: {all(symbolic_diff.values())}; RR vs MuJoCo {report.max_abs_error:.0e}; "
        f"PR vs RNEA {pr_vs_rnea:.0e}",
        "symbolic_equal_to_closed_form": {k: bool(v) for k, v in symbolic_diff.items()},
        "rr_M": str(rr.M),
        "rr_c": str(rr.c.T),
        "rr_g": str(rr.g.T),
        "pr_M": str(pr.M),
        "pr_c": str(pr.c.T),
        "rr_vs_mj_inverse": report.to_dict(),
        "rr_properties": rr_props,
        "pr_properties": pr_props,
        "pr_vs_rnea_max_abs_error": pr_vs_rnea,
        "pr_values": pr_values,
    }


@experiment(
    "derivation-attribution",
    summary="check derivation on four two-link derivations: correct, seed-000-printed, "
    "gravity flipped, Coriolis dropped",
    expected="correct passes; the others fail in exactly mass matrix / gravity / velocity",
    params={"samples": Param(1000, "number of random states", 1, 1_000_000)},
)
def derivation_attribution(ctx: Context) -> dict:
    model = load_model("two_link_arm")
    params = two_link_params(model)
    samples = 200 if ctx.short else int(ctx.params["samples"])
    cases, all_ok = {}, True
    for fault, (_, blamed) in FAULTS.items():
        report = check(faulty_two_link(fault, params), model, samples=samples, seed=ctx.seed, label=fault)
        expected = [] if blamed is None else [blamed]
        ok = report.failing_terms == expected and report.passed == (blamed is None)
        all_ok &= ok
        cases[fault] = {"expected_failing_terms": expected, "failing_terms": report.failing_terms,
                        "as_expected": bool(ok), "diagnosis": report.diagnosis,
                        "max_abs_error": report.max_abs_error}
        ctx.savefig(plots.term_errors(report, f"two-link derivation '{fault}' vs mj_inverse"), f"{fault}.png")
    return {
        "passed": bool(all_ok),
        "measured": "; ".join(f"{k}: {','.join(v['failing_terms']) or 'pass'}" for k, v in cases.items()),
        "cases": cases,
    }
