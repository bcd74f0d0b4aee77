"""Where a check's function is off: per-entry errors of each part, drawn (headless figures).

:func:`entry_errors` draws one panel per part: a matrix part as a map of ``log10``
of each entry's largest error, a vector or scalar part as bars with the tolerance.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from .. import figures

__all__ = ["entry_errors", "draw_part"]

# Exact zeros cannot be drawn on a log scale.
FLOOR = 1e-18
# Tick labels are written out up to this many entries per axis.
MAX_TICKS = 40


def draw_part(ax, part, atol: float, title: str | None = None) -> None:
    """One part's per-entry largest errors on ``ax``."""
    errors = np.maximum(np.asarray(part.entry_max_abs, dtype=float), FLOOR)
    off = ~np.asarray(part.entry_passed, dtype=bool)
    if errors.ndim == 2:
        image = ax.imshow(np.log10(errors), cmap="viridis", vmin=-16, vmax=max(0.0, float(np.log10(errors.max()))),
                          aspect="auto", interpolation="nearest")
        rows, cols = np.nonzero(off)
        ax.scatter(cols, rows, marker="s", s=30, facecolors="none", edgecolors="red", linewidths=0.8)
        for axis, labels in ((ax.set_yticks, part.labels[0]), (ax.set_xticks, part.labels[1])):
            if len(labels) <= MAX_TICKS:
                axis(range(len(labels)), labels, fontsize=6)
        for label in ax.get_xticklabels():
            label.set_rotation(90)
        ax.figure.colorbar(image, ax=ax, label="log10 max |error|", shrink=0.8)
    else:
        values = np.atleast_1d(errors)
        labels = part.labels[0] if part.labels else (part.symbol,)
        colors = np.where(np.atleast_1d(off), "tab:red", "tab:blue")
        ax.bar(range(values.size), values, color=colors)
        ax.set_yscale("log")
        ax.axhline(atol, color="k", ls="--", lw=0.8, label=f"atol {atol:g}")
        if len(labels) <= MAX_TICKS:
            ax.set_xticks(range(len(labels)), labels, fontsize=6, rotation=90)
        ax.set_ylabel("max |error|")
        ax.legend(fontsize=6)
    ax.set_title(title or f"{part.name}{' (off)' if not part.passed else ''}", fontsize=9)


def entry_errors(report, title: str) -> Figure:
    """A figure with one panel per part of ``report``: where the function is off."""
    names = list(report.parts)
    fig, axes = figures.figure(1, len(names), width=min(5.0 * len(names), 16.0), height=4.2)
    axes = np.atleast_1d(axes)
    for ax, name in zip(axes, names, strict=False):
        draw_part(ax, report.parts[name], report.atol)
    fig.suptitle(title, fontsize=10)
    return fig
