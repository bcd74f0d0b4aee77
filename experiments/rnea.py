"""The spatial-velocity RNEA of a robotics lecture on dynamics against ``mj_inverse`` (docs/derivations/rnea.md).

``rnea-<model>`` for each of :data:`RNEA_MODELS`: ``analytic.rnea`` on the tree read from the model vs
``mj_inverse`` at seeded random states, term by term, and the unit-vector ``A``, ``b`` vs ``mj_fullM``,
``qfrc_bias``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from ..analytic.rnea import rnea
from .common.unit_vector_matrices import MATRIX_RTOL, unit_vector_errors
from .core import figures
from .core.checks.inverse_dynamics import check
from .core.checks.report import CheckReport
from .core.checks.tree import tree_from_model
from .core.models import load_model
from .core.registry import Param, Verdict, experiment
from .core.runner import Context

# The gallery's heading for this module's experiments, and the docs/derivations page of what they check.
GALLERY_HEADING = "Generic algorithms: RNEA, unit vectors, symbolic Lagrange"
DERIVATION_PAGE = "rnea"

__all__ = ["RNEA_TOL", "RNEA_MODELS", "RneaCheck", "rnea_check", "judge_rnea", "plot_rnea"]

RNEA_TOL = 1e-9  # |error| <= 1e-9 (1 + |tau|): ~500 N m torques on the free tree round off at ~1e-13 N m
RNEA_MODELS = ("two_link_arm", "spatial_arm", "free_tree")


@dataclass(frozen=True)
class RneaCheck:
    """The spatial-velocity RNEA and the unit-vector A, b against MuJoCo on the model ``model`` (``nq``,
    ``nv``): ``report`` term by term (N m or N), ``matrices`` ``unit_vector_errors`` at up to 200 states."""

    model: str
    nq: int
    nv: int
    report: CheckReport
    matrices: dict[str, float]


def rnea_check(name: str, samples: int = 1000, seed: int = 0) -> RneaCheck:
    """Check ``analytic.rnea`` on the model ``name`` at seeded random states (no files)."""
    model = load_model(name)
    tree = tree_from_model(model)
    report = check(functools.partial(rnea, tree), model, samples=samples, seed=seed,
                   atol=RNEA_TOL, rtol=RNEA_TOL, label="analytic.rnea")
    return RneaCheck(name, model.nq, model.nv, report, unit_vector_errors(model, min(samples, 200), seed))


def judge_rnea(result: RneaCheck) -> tuple[Verdict, dict]:
    """tau within :data:`RNEA_TOL` (1 + |tau|), A and b within :data:`MATRIX_RTOL` x their scales; the
    verdict and the metrics."""
    report, matrices = result.report, result.matrices
    ok_matrices = (matrices["mass_matrix_max_abs_error"] <= MATRIX_RTOL * matrices["mass_matrix_scale"]
                   and matrices["bias_max_abs_error"] <= MATRIX_RTOL * matrices["bias_scale"])
    verdict = Verdict(report.passed and ok_matrices,
                      f"tau {report.max_abs_error:.1e} (rel {report.max_rel_error:.0e}); "
                      f"A {matrices['mass_matrix_max_abs_error']:.0e}, b {matrices['bias_max_abs_error']:.0e}")
    metrics = {**report.to_dict(), **matrices, "model": result.model, "nq": result.nq, "nv": result.nv}
    metrics.update(verdict.as_metrics())
    return verdict, metrics


def plot_rnea(result: RneaCheck, out_dir) -> list[Path]:
    """Each term's per-sample error with the tolerance (``term_errors.png``) into ``out_dir``."""
    title = f"spatial RNEA vs mj_inverse on {result.model} ({result.report.samples} states)"
    return [figures.save(figures.term_errors(result.report, title), out_dir, "term_errors.png")]


def _rnea_experiment(name: str):
    @experiment(
        f"rnea-{name.replace('_', '-')}",
        summary=f"spatial-velocity RNEA vs mj_inverse on {name}; unit-vector A, b vs mj_fullM, qfrc_bias",
        expected=f"|tau error| <= {RNEA_TOL:g} (1 + |tau|); A, b within {MATRIX_RTOL:g} x scale",
        params={"samples": Param(1000, "number of random states", 1, 1_000_000)},
    )
    def run(ctx: Context) -> dict:
        result = rnea_check(name, 200 if ctx.short else int(ctx.params["samples"]), ctx.seed)
        plot_rnea(result, ctx.out_dir)
        return judge_rnea(result)[1]

    return run


for _name in RNEA_MODELS:
    _rnea_experiment(_name)
