"""Every part of a hand derivation checked on one model: the ``showcase`` experiment.

The two-link arm's closed forms (``analytic.two_link``) go through all seven checks (``crossdyn check
kinematics`` ... ``linearization``) twice: as derived, which must agree with MuJoCo, and with one slip a
derivation really makes (:data:`DERIVATIONS`), which must fail with the slip named.  The energy as derived
measures its potential from the hanging tip, not MuJoCo's zero: it passes, and the report names the constant.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ..analytic import two_link
from ..analytic.two_link import TwoLinkParams
from .common.two_link_arm import two_link_params
from .core import figures
from .core.checks import check
from .core.checks import report as check_report
from .core.checks.entry_errors import draw_part
from .core.models import load_model
from .core.registry import Param, Verdict, experiment
from .core.runner import Context

# The gallery's heading for this module's experiments, and the docs/derivations page of what they check.
GALLERY_HEADING = "Two-link arm"
DERIVATION_PAGE = "two-link"

__all__ = ["DERIVATIONS", "derivations", "ShowcaseResult", "showcase_checks", "judge_showcase", "plot_showcase"]

MODEL = "two_link_arm"
SAMPLES, SHORT_SAMPLES = 2000, 200

# Per check: (what is wrong in the wrong derivation, a phrase its attribution must contain).
DERIVATIONS = {
    "kinematics": ("rotation transposed", "transpose"),
    "jacobian": ("local frame for a world-aligned Jacobian", "local frame"),
    "mass-matrix": ("link inertias left out", "inertia about the centre of mass"),
    "bias": ("gravity's sign", "opposite sign"),
    "energy": ("kinetic energy of point masses", "inertia"),
    "forward-dynamics": ("Coriolis and centrifugal forces dropped", "velocity terms"),
    "linearization": ("gravity's sign in d qdd / d q", "gravity-sign slip"),
}


def _point_masses(p: TwoLinkParams) -> TwoLinkParams:
    return replace(p, i1=0.0, i2=0.0)


def derivations(p: TwoLinkParams) -> dict[str, tuple]:
    """Per check: (the right function, the wrong one), from the arm's parameters."""

    def transposed(q):
        position, rotation = two_link.tip_pose(p, q)
        return position, np.swapaxes(rotation, -1, -2)

    def local(q):
        J = two_link.tip_jacobian(p, q)
        Rt = np.swapaxes(two_link.tip_pose(p, q)[1], -1, -2)
        return np.concatenate([Rt @ J[..., :3, :], Rt @ J[..., 3:, :]], axis=-2)

    def energy_from_hanging_tip(q, qd):  # zero of potential at the hanging pose: MuJoCo's plus a constant
        T, U = two_link.energy(p, q, qd)
        return T, U - two_link.energy(p, np.zeros(2), np.zeros(2))[1]

    def point_mass_energy(q, qd):
        return two_link.energy(_point_masses(p), q, qd)

    def gravity_flipped(q, qd):
        return two_link.lagrange(replace(p, g=-p.g), q, qd, np.zeros_like(qd))

    def no_coriolis(q, qd, tau):
        return two_link.forward_dynamics(p, q, np.zeros_like(qd), tau)

    def gravity_slip(q, qd, u):
        A, B = two_link.linearize_hanging(p)
        A[2:, :2] *= -1.0
        return A, B

    return {
        "kinematics": (partial(two_link.tip_pose, p), transposed),
        "jacobian": (partial(two_link.tip_jacobian, p), local),
        "mass-matrix": (partial(two_link.mass_matrix, p), partial(two_link.mass_matrix, _point_masses(p))),
        "bias": (lambda q, qd: two_link.lagrange(p, q, qd, np.zeros_like(qd)), gravity_flipped),
        "energy": (energy_from_hanging_tip, point_mass_energy),
        "forward-dynamics": (partial(two_link.forward_dynamics, p), no_coriolis),
        "linearization": (lambda q, qd, u: two_link.linearize_hanging(p), gravity_slip),
    }


@dataclass(frozen=True)
class ShowcaseResult:
    """Per check name, the right and the wrong derivation's ``CheckReport``; ``samples`` random states per
    check (the linearization has one operating point)."""

    right: dict[str, check_report.CheckReport]
    wrong: dict[str, check_report.CheckReport]
    samples: int


def showcase_checks(samples: int = SAMPLES, seed: int = 0, mjcf: str = "") -> ShowcaseResult:
    """Run all seven checks with the right and the wrong derivation (no files)."""
    model = load_model(mjcf or MODEL)
    functions = derivations(two_link_params(model))
    options: dict[str, dict[str, Any]] = {name: {"samples": samples, "seed": seed} for name in functions}
    options["kinematics"] |= {"site": "tip"}
    options["jacobian"] |= {"site": "tip"}
    options["linearization"] = {"qpos": np.zeros(model.nq), "qvel": np.zeros(model.nv), "ctrl": np.zeros(model.nu)}
    right, wrong = {}, {}
    for name, (good, bad) in functions.items():
        right[name] = check(name, good, model, **options[name])
        wrong[name] = check(name, bad, model, **options[name])
    return ShowcaseResult(right, wrong, samples)


def judge_showcase(result: ShowcaseResult) -> tuple[Verdict, dict]:
    """Every right derivation passes, every wrong one fails with its slip named; the verdict and metrics."""
    rows: dict[str, dict[str, Any]] = {}
    for name, (slip, phrase) in DERIVATIONS.items():
        good, bad = result.right[name], result.wrong[name]
        named = phrase in " ".join(bad.attribution)
        rows[name] = {"right_passed": good.passed, "right_max_abs_error": good.max_abs_error,
                      "wrong_passed": bad.passed, "wrong_max_abs_error": bad.max_abs_error, "slip": slip,
                      "wrong_named": named, "diagnosis": bad.diagnosis, "attribution": bad.attribution,
                      "right_notes": good.notes}
    caught = sum(r["right_passed"] and not r["wrong_passed"] and r["wrong_named"] for r in rows.values())
    verdict = Verdict(caught == len(rows), f"{caught} of {len(rows)} checks pass the right derivation and name the "
                                           "wrong one's slip")
    return verdict, {**verdict.as_metrics(), "checks": rows, "samples": result.samples}


def plot_showcase(result: ShowcaseResult, out_dir) -> list[Path]:
    """Where each wrong derivation is off (``showcase.png``): one panel per check, its worst part."""
    fig, axes = figures.figure(2, 4, width=17.0, height=3.8)
    axes = np.ravel(axes)
    for ax, (name, report) in zip(axes, result.wrong.items(), strict=False):
        part = max(report.parts.values(), key=lambda p: (not p.passed, p.max_abs_error))
        draw_part(ax, part, report.atol, title=f"{name}: {DERIVATIONS[name][0]}\n({part.name} off)")
    axes[-1].axis("off")
    axes[-1].text(0.0, 0.5, "each panel: the largest |yours - MuJoCo's| per entry\nover the states; red: outside "
                  "the tolerance.\nThe right derivations sit at round-off\n(1e-16 .. 1e-8) everywhere.",
                  fontsize=9, va="center")
    fig.suptitle("showcase: seven checks of the two-link arm's derivations, the wrong ones", fontsize=11)
    return [figures.save(fig, out_dir, "showcase.png")]


@experiment(
    "showcase",
    summary="all seven part checks (kinematics ... linearization) on the two-link arm, a right and a wrong "
            "derivation each",
    expected="each right derivation agrees; each wrong one fails with its slip named",
    params={"samples": Param(SAMPLES, "random states per check", 10, 1_000_000)},
)
def showcase_experiment(ctx: Context) -> dict:
    result = showcase_checks(SHORT_SAMPLES if ctx.short else int(ctx.params["samples"]), ctx.seed)
    plot_showcase(result, ctx.out_dir)
    return judge_showcase(result)[1]
