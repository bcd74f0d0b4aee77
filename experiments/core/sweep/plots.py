"""What a tune shows: the objective against each parameter, its front against a bounded metric, a search's
progress, a map's holding region."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
from matplotlib import ticker

from .. import figures as plots
from ..baseline import DEFAULT_TOLERANCE, Tolerance
from ..files import write_json
from .choice import best_row, pareto_front
from .table import cell

__all__ = ["draw", "heat", "outline", "holding_region", "held_map", "constant", "figures"]

_COLORS = {"pass": "tab:green", "fail": "tab:orange", "error": "black"}


def constant(values, tolerance: Tolerance = DEFAULT_TOLERANCE) -> float | None:
    """The one value ``values`` hold to within ``tolerance`` (their variation is round-off, never a signal to
    draw), or None when they vary more (or none is finite)."""
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    if not finite.size or not tolerance.allows(float(finite.min()), float(finite.max())):
        return None
    middle = float((finite.min() + finite.max()) / 2)
    return 0.0 if abs(middle) <= tolerance.abs else middle


def figures(values, tolerance: Tolerance = DEFAULT_TOLERANCE) -> list[str]:
    """Each value as a map's cell shows it (3 digits): the one value they all hold when they differ by round-off
    only (:func:`constant`), a value within the tolerance's absolute part of 0 as 0; a non-finite one as ""."""
    held = constant(values, tolerance)
    out = []
    for v in np.asarray(values, dtype=float):
        shown = held if held is not None else (0.0 if abs(v) <= tolerance.abs else v)
        out.append(f"{shown:.3g}" if math.isfinite(v) else "")
    return out


def _constant_words(value: float, tolerance: Tolerance) -> str:
    return f"constant {value:.4g}: its variation is within its tolerance ({tolerance}), round-off"


def draw(out: Path, result, search: str) -> list[str]:
    """The plots of a tune (:class:`~crossdyn.experiments.core.sweep.experiment.TuneResult`); their file names."""
    files = []
    if result.minimize is not None:
        _objective(result, out / "objective.png")
        files.append("objective.png")
        if result.constraints:
            _pareto(result, out / "pareto.png")
            files.append("pareto.png")
        if search == "optuna":
            _progress(result, out / "progress.png")
            files.append("progress.png")
    if search == "grid" and len(result.space) == 2:
        files += _map(result, out)
    return files


def _objective(result, path: Path) -> None:
    """The minimized metric against each varied parameter, by outcome; defaults and best marked.  A metric
    that varies by round-off only is drawn flat (its axis spans far more than its tolerance), and said so."""
    space, rows, metric = result.space, result.rows, result.minimize
    tolerance = result.tolerances.get(metric, DEFAULT_TOLERANCE)
    held = constant([cell(r, metric) for r in rows], tolerance)
    fig, axes = plots.figure(1, len(space), width=4.0 * len(space) + 1.0, height=3.2, sharey=True)
    axes = np.atleast_1d(axes)
    for ax, v in zip(axes, space, strict=False):
        for outcome, color in _COLORS.items():
            pts = [r for r in rows if r["outcome"] == outcome and math.isfinite(cell(r, metric))]
            ax.scatter([cell(r, v.name) for r in pts], [cell(r, metric) for r in pts], s=14, color=color,
                       alpha=0.8, label=f"{outcome} ({len(pts)})")
        for row, marker, label in ((rows[0], "*", "defaults"), (result.best, "o", "best")):
            if row is not None and math.isfinite(cell(row, metric)):
                ax.scatter([cell(row, v.name)], [cell(row, metric)], s=150, marker=marker, facecolors="none",
                           edgecolors="k", linewidths=1.4, label=label)
        if v.log:
            ax.set_xscale("log")
        ax.set_xlabel(v.name)
        if held is not None:  # +-10 % of the value (at least 1000 tolerances): round-off stays a flat line
            half = max(0.1 * abs(held), 1e3 * (tolerance.abs + tolerance.rel * abs(held)))
            ax.set_ylim(held - half, held + half)
    axes[0].set_ylabel(metric)
    axes[0].legend(fontsize=7)
    constraints = "; ".join(f"{m} {op} {lim:g}" for m, op, lim in result.constraints)
    fig.suptitle(f"{result.experiment}: {metric} over {len(rows)} runs" + (f" ({constraints})" if constraints else "")
                 + (f"\n{metric} {_constant_words(held, tolerance)}" if held is not None else ""))
    fig.savefig(path, dpi=110, bbox_inches="tight")


def _pareto(result, path: Path) -> None:
    """The minimized metric against the first bounded one, by outcome: the passing runs' front (neither metric
    beaten by another passing run), the bound, the defaults and the best marked."""
    rows, metric, (bounded, op, limit) = result.rows, result.minimize, result.constraints[0]
    fig, ax = plots.figure(1, 1, width=7.0, height=4.5)
    shown = [r for r in rows if math.isfinite(cell(r, metric)) and math.isfinite(cell(r, bounded))]
    for outcome, color in _COLORS.items():
        pts = [r for r in shown if r["outcome"] == outcome]
        if pts:
            ax.scatter([cell(r, bounded) for r in pts], [cell(r, metric) for r in pts], s=18, color=color, alpha=0.8,
                       label=f"{outcome} ({len(pts)})")
    front = pareto_front([r for r in shown if r["outcome"] == "pass"], bounded, metric)
    if front:
        ax.step([cell(r, bounded) for r in front], [cell(r, metric) for r in front], where="post", color="tab:green",
                lw=1.0, label="front of the passing runs")
    if math.isfinite(limit):
        ax.axvline(limit, color="k", ls=":", lw=0.8, label=f"{bounded} {op} {limit:.4g}")
    for row, marker, label in ((rows[0], "*", "defaults"), (result.best, "o", "best")):
        if row is not None and row in shown:
            ax.scatter([cell(row, bounded)], [cell(row, metric)], s=160, marker=marker, facecolors="none",
                       edgecolors="k", linewidths=1.5, label=label)
    if shown and min(cell(r, bounded) for r in shown) > 0:
        ax.set_xscale("log")
        # Labels at 1, 2, 5 x 10^k: the default labels every minor tick of a span under a decade, overlapping.
        ax.xaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    ax.set(xlabel=bounded, ylabel=metric,
           title=f"{result.experiment}: {len(shown)} of {len(rows)} runs (those with both metrics finite)")
    ax.legend(fontsize=7)
    fig.savefig(path, dpi=110, bbox_inches="tight")


def _progress(result, path: Path) -> None:
    """The search's best feasible value so far, trial by trial, over every trial's value."""
    rows, metric = result.rows, result.minimize
    values = np.array([cell(r, metric) for r in rows])
    best = [cell(b, metric) if (b := best_row(rows[: i + 1], metric, result.constraints)) else math.nan
            for i in range(len(rows))]
    fig, ax = plots.figure(1, 1, width=7.0, height=3.5)
    ax.scatter(np.arange(len(rows)), values, s=10, color="tab:gray", label="trial")
    ax.step(np.arange(len(rows)), best, where="post", color="tab:green", label="best so far (passing, constrained)")
    ax.set_xlabel("trial")
    ax.set_ylabel(metric)
    ax.legend(fontsize=7)
    fig.savefig(path, dpi=110, bbox_inches="tight")


def _map(result, out: Path) -> list[str]:
    """The grid of two parameters as a map of the experiment's verdict, its holding region outlined."""
    a, b = result.space
    xs = sorted({cell(r, a.name) for r in result.rows[1:]})
    ys = sorted({cell(r, b.name) for r in result.rows[1:]})
    held = np.zeros((len(xs), len(ys)), dtype=bool)
    text = [["" for _ in ys] for _ in xs]
    tolerance = result.tolerances.get(result.minimize, DEFAULT_TOLERANCE)
    values = [cell(row, result.minimize) if result.minimize else math.nan for row in result.rows[1:]]
    for row, shown in zip(result.rows[1:], figures(values, tolerance), strict=True):
        i, j = xs.index(cell(row, a.name)), ys.index(cell(row, b.name))
        held[i, j] = row["outcome"] == "pass"
        text[i][j] = shown or row["outcome"]
    axes = {a.name: xs, b.name: ys}
    same = constant(values, tolerance)
    region = held_map(out / "map.png", axes, held, text, f"{result.experiment}: green where it passes "
                      f"({int(held.sum())}/{held.size})" + (f"; text: {result.minimize}" if result.minimize else "")
                      + (f" ({_constant_words(same, tolerance)})" if same is not None else ""))
    write_json(out / "map.json", {"experiment": result.experiment, "axes": axes,
                                  "passed_fraction": float(held.mean()), "holding_region": region})
    return ["map.png", "map.json"]


def held_map(path: Path, axes: dict[str, list[float]], held: np.ndarray, text: list[list[str]], title: str) -> dict:
    """Draw a two-axis map of where runs hold (green) into ``path``, the holding region outlined.

    ``axes`` is ``{a: values (n,), b: values (m,)}``, ``held`` ``(n, m)`` true where the run at
    ``(a[i], b[j])`` holds, ``text[i][j]`` a cell's label.  Returns :func:`holding_region`'s.
    """
    (a, xs), (b, ys) = axes.items()
    fig, ax = plots.figure(1, 1, width=7.0, height=4.5)
    heat(ax, fig, xs, ys, held.astype(float), a, b, title, cmap="RdYlGn", annotate=text, limits=(0, 1),
         colorbar=False)
    outline(ax, held.astype(bool))
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return holding_region(axes, held)


def heat(ax, fig, xs, ys, values, xlabel, ylabel, title, cmap="viridis_r", annotate=None, limits=(None, None),
         colorbar=True, tolerance: Tolerance = DEFAULT_TOLERANCE):
    """A heat-map of ``values[i, j]`` over ``xs[i]`` (columns) and ``ys[j]`` (rows), NaN blank.

    Values that differ by less than ``tolerance`` (round-off) are drawn in one colour, without a colour
    bar, and the title says so: a colour scale stretched over 1e-12 would draw round-off as a signal.
    """
    held = constant(values, tolerance) if limits == (None, None) else None
    if held is not None:
        limits, colorbar = (held, held), False
        title = f"{title}\n{_constant_words(held, tolerance)}"
    im = ax.imshow(values.T, origin="lower", aspect="auto", cmap=cmap, interpolation="nearest", vmin=limits[0],
                   vmax=limits[1])
    ax.set_xticks(range(len(xs)), [f"{x:.3g}" for x in xs], fontsize=7, rotation=45)
    ax.set_yticks(range(len(ys)), [f"{y:.3g}" for y in ys], fontsize=7)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    if annotate is not None:
        for i, j in itertools.product(range(len(xs)), range(len(ys))):
            if annotate[i][j]:
                ax.text(i, j, annotate[i][j], ha="center", va="center", fontsize=6,
                        bbox={"boxstyle": "round,pad=0.15", "fc": "white", "alpha": 0.6, "lw": 0})
    if colorbar:
        fig.colorbar(im, ax=ax)


def outline(ax, held: np.ndarray) -> None:
    """Draw the border of the holding cells ``held[i, j]`` (column i, row j of the heat-map)."""
    n, m = held.shape
    for i, j in zip(*np.nonzero(held), strict=False):
        for di, dj, (x0, x1, y0, y1) in ((-1, 0, (-.5, -.5, -.5, .5)), (1, 0, (.5, .5, -.5, .5)),
                                         (0, -1, (-.5, .5, -.5, -.5)), (0, 1, (-.5, .5, .5, .5))):
            inside = 0 <= i + di < n and 0 <= j + dj < m
            if not inside or not held[i + di, j + dj]:
                ax.plot([i + x0, i + x1], [j + y0, j + y1], color="k", lw=2.0)


def holding_region(axes: dict[str, list[float]], held: np.ndarray) -> dict:
    """Where a map holds: ``held_cells``, the ``[a, b]`` pairs that hold; ``by``, the first axis's name; and
    ``rows``, per value of the first axis: the second axis's holding values, their ``span`` ``[lo, hi]``
    (None if none) and ``contiguous`` (False where a failing cell lies between holding ones)."""
    (a, va), (b, vb) = axes.items()
    rows = []
    for i, x in enumerate(va):
        ok = np.flatnonzero(held[i])
        rows.append({a: float(x), b: [float(vb[j]) for j in ok],
                     "span": [float(vb[ok[0]]), float(vb[ok[-1]])] if ok.size else None,
                     "contiguous": bool(ok.size == 0 or ok[-1] - ok[0] + 1 == ok.size)})
    cells = [[float(va[i]), float(vb[j])] for i, j in zip(*np.nonzero(held), strict=False)]
    return {"held_cells": cells, "by": a, "rows": rows}
