"""Seed 000's spatial-velocity RNEA against ``mj_inverse`` (SPEC §2).

Experiments ``rnea-two-link-arm``, ``rnea-spatial-arm``, ``rnea-free-tree``:
:func:`crossdyn.analytic.rnea.rnea` on a :class:`~crossdyn.analytic.rnea.Tree`
read from each model (:func:`~crossdyn.experiments.core.derivation.tree_from_model`)
vs ``mj_inverse`` at seeded random states, term by term; the unit-vector mass
matrix and bias (:mod:`crossdyn.experiments.unit_vector`) vs ``mj_fullM`` and
``qfrc_bias``.
"""

from __future__ import annotations

import functools

from crossdyn.analytic.rnea import rnea
from crossdyn.experiments.core import plots
from crossdyn.experiments.core.crosscheck import check
from crossdyn.experiments.core.derivation import tree_from_model
from crossdyn.experiments.core.models import load_model
from crossdyn.experiments.core.registry import Param, experiment
from crossdyn.experiments.core.results import Context
from crossdyn.experiments.unit_vector import MATRIX_RTOL, unit_vector_errors

__all__ = ["RNEA_TOL", "RNEA_MODELS"]

# rnea vs mj_inverse: |error| <= 1e-9 (1 + |tau|).  Torques reach ~500 N m on the
# free tree (fast random states), so round-off is ~1e-13 N m; 1e-9 leaves 4 orders.
RNEA_TOL = 1e-9
RNEA_MODELS = ("two_link_arm", "spatial_arm", "free_tree")


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
