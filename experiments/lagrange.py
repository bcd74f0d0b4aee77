"""The symbolic Lagrange recipe of an article on robot dynamics (docs/derivations/lagrange.md) against the
closed form, RNEA and MuJoCo.

``lagrange-symbolic``: the RR arm derived in SymPy equals the two-link closed form symbolically, M is SPD,
``Mdot - 2C`` skew-symmetric and its torques match ``mj_inverse``; the PR arm matches ``analytic.rnea`` on an
independent :class:`~crossdyn.analytic.rnea.Tree` (:func:`pr_arm_tree`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..analytic.rnea import Tree, rnea
from .common.two_link_arm import two_link_params
from .core import figures
from .core.checks.inverse_dynamics import check
from .core.checks.report import CheckReport
from .core.models import load_model
from .core.registry import Verdict, experiment
from .core.runner import Context

if TYPE_CHECKING:  # SymPy is imported by the runs themselves: a second of start-up every command would pay
    from ..analytic import lagrange as lagrange_module

# The gallery's heading for this module's experiments, and the docs/derivations page of what they check.
GALLERY_HEADING = "Generic algorithms: RNEA, unit vectors, symbolic Lagrange"
DERIVATION_PAGE = "lagrange"

__all__ = ["pr_arm_tree", "symbolic_properties", "SymbolicResult", "symbolic_lagrange", "judge_symbolic",
           "plot_symbolic"]

# The symbolic torques vs mj_inverse (RR) and RNEA (PR), |error| <= 1e-9 (1 + |tau|): torques of a few N m
# round off at ~1e-15 N m; the rest is room for the symbolic forms' different order of operations.
RNEA_TOL = 1e-9


def pr_arm_tree(values: dict) -> Tree:
    """The worked PR arm of the article as a :class:`Tree` for ``analytic.rnea``: a slide along world x (link 1's
    CoM at ``q1 - dc1``), then a hinge about z (link 2's CoM at ``dc2``, inertia ``I2zz``); no gravity."""
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


@dataclass(frozen=True)
class SymbolicResult:
    """The Lagrange recipe on the RR and PR arms, checked symbolically and numerically.

    Attributes:
      symbolic_equal: check (``"M"``, ``"c"``, ``"g"``, ``"Mdot_minus_2C_skew"``, ``"c_is_C_qd"``) -> whether
        the RR arm's symbolic difference simplifies to zero.
      rr, pr: the derived models.
      rr_report: the RR arm with ``two_link_arm``'s parameters vs ``mj_inverse`` (N m).
      rr_properties, pr_properties: :func:`symbolic_properties` at seeded states.
      pr_values: the PR arm's illustrative parameters (kg, m, kg m^2).
      pr_vs_rnea: max |PR torque - RNEA on :func:`pr_arm_tree`|, N or N m.
    """

    symbolic_equal: dict[str, bool]
    rr: lagrange_module.LagrangeModel
    pr: lagrange_module.LagrangeModel
    rr_report: CheckReport
    rr_properties: dict[str, float]
    pr_properties: dict[str, float]
    pr_values: dict[str, float]
    pr_vs_rnea: float


def symbolic_lagrange(samples: int = 2000, seed: int = 0) -> SymbolicResult:
    """Derive both arms in SymPy and check them at ``samples`` seeded states (no files)."""
    import sympy as sp  # late, as SymPy's models below: a second of start-up every command would pay

    from ..analytic import lagrange as lagrange_module  # late: it imports SymPy

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
    report = check(rr.inverse_dynamics(vars(params)), model, samples=samples, seed=seed,
                   atol=RNEA_TOL, rtol=RNEA_TOL, label="lagrange rr_arm")
    rr_props = symbolic_properties(rr, vars(params), samples, seed)

    pr = lagrange_module.pr_arm()
    pr_values = {"m1": 1.5, "m2": 0.8, "dc1": 0.1, "dc2": 0.25, "I2zz": 0.02}  # illustrative, SI
    rng = np.random.default_rng(seed)
    q, qd, qdd = (rng.uniform(-3, 3, (samples, 2)) for _ in range(3))
    pr_tau = pr.inverse_dynamics(pr_values)(q, qd, qdd)
    pr_vs_rnea = float(np.abs(pr_tau - rnea(pr_arm_tree(pr_values), q, qd, qdd)).max())
    return SymbolicResult({k: bool(v) for k, v in symbolic_diff.items()}, rr, pr, report, rr_props,
                          symbolic_properties(pr, pr_values, samples, seed), pr_values, pr_vs_rnea)


def judge_symbolic(result: SymbolicResult) -> tuple[Verdict, dict]:
    """Every symbolic difference zero; RR vs MuJoCo and PR vs RNEA within ``RNEA_TOL``; both M symmetric
    positive definite, ``Mdot - 2C`` skew to 1e-12 (round-off).  Returns the verdict and the metrics."""
    rr, pr, report = result.rr, result.pr, result.rr_report
    symbolic_ok = all(result.symbolic_equal.values())
    numeric_ok = (report.passed and result.pr_vs_rnea <= RNEA_TOL
                  and all(p["M_min_eigenvalue"] > 0 and p["skew_error"] <= 1e-12 and p["M_asymmetry"] == 0
                          for p in (result.rr_properties, result.pr_properties)))
    verdict = Verdict(symbolic_ok and numeric_ok,
                      f"symbolic diff zero: {symbolic_ok}; RR vs MuJoCo {report.max_abs_error:.0e}; "
                      f"PR vs RNEA {result.pr_vs_rnea:.0e}")
    return verdict, {
        **verdict.as_metrics(),
        "symbolic_equal_to_closed_form": result.symbolic_equal,
        "rr_M": str(rr.M),
        "rr_c": str(rr.c.T),
        "rr_g": str(rr.g.T),
        "pr_M": str(pr.M),
        "pr_c": str(pr.c.T),
        "rr_vs_mj_inverse": report.to_dict(),
        "rr_properties": result.rr_properties,
        "pr_properties": result.pr_properties,
        "pr_vs_rnea_max_abs_error": result.pr_vs_rnea,
        "pr_values": result.pr_values,
    }


def plot_symbolic(result: SymbolicResult, out_dir) -> list[Path]:
    """The RR arm's term errors against ``mj_inverse`` (``term_errors.png``) into ``out_dir``."""
    return [figures.save(figures.term_errors(result.rr_report, "symbolic RR arm vs mj_inverse"), out_dir,
                       "term_errors.png")]


@experiment(
    "lagrange-symbolic",
    summary="the Lagrange recipe of an article, in SymPy: PR and RR arms; RR vs the closed-form two-link dynamics and "
    "mj_inverse, PR vs RNEA",
    expected="RR equals the closed form symbolically; M SPD, Mdot-2C skew; numeric checks to 1e-9",
)
def lagrange_symbolic(ctx: Context) -> dict:
    result = symbolic_lagrange(200 if ctx.short else 2000, ctx.seed)
    plot_symbolic(result, ctx.out_dir)
    return judge_symbolic(result)[1]
