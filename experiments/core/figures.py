"""Plot helpers shared by experiments (headless: figures are never shown).

Figures are built with ``matplotlib.figure.Figure`` directly rather than pyplot,
so no GUI backend is touched and no global figure state leaks between runs.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from .checks.report import TERMS, CheckReport

__all__ = ["figure", "term_errors", "save"]

_TERM_TITLE = {"torque": "torque", "mass_matrix": "mass matrix", "velocity": "velocity terms", "gravity": "gravity"}


def figure(rows: int = 1, cols: int = 1, *, width: float = 7.0, height: float = 3.0, **kwargs):
    """A new figure and its axes array (squeezed like ``plt.subplots``).

    ``width`` is the figure's total width and ``height`` each row's, in inches.
    """
    fig = Figure(figsize=(width, height * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=True, **kwargs)
    return fig, axes


def term_errors(report: CheckReport, title: str) -> Figure:
    """Per-sample error of the torque and of each term, log scale, with the tolerance.

    A derivation that is right sits at round-off (1e-16 .. 1e-13); a wrong term
    stands orders of magnitude above the tolerance line in its own panel.
    """
    fig, axes = figure(1, 4, width=11.0, height=3.0, sharey=True)
    floor = 1e-18  # exact zeros cannot be drawn on a log axis
    for ax, name in zip(axes, ("torque",) + TERMS, strict=False):
        err = np.maximum(report.per_sample[name], floor)
        failed = name != "torque" and not report.terms[name].passed
        ax.semilogy(err, ".", ms=2, color="tab:red" if failed else "tab:blue")
        ax.axhline(report.atol, color="k", ls="--", lw=0.8, label=f"atol {report.atol:g}")
        ax.set_title(_TERM_TITLE[name] + (" (off)" if failed else ""))
        ax.set_xlabel("sample")
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel("max |candidate - MuJoCo|")
    axes[0].legend(loc="lower right", fontsize=7)
    fig.suptitle(title)
    return fig


def save(fig: Figure, out_dir: str | os.PathLike, filename: str) -> Path:
    """Write ``fig`` as ``out_dir/filename`` (110 dpi, tight box, the folder created) and return the path."""
    path = Path(out_dir) / filename
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path
