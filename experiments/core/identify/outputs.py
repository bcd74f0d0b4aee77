"""What ``crossdyn identify`` writes: the sentences, ``identified.json``, ``identified.xml``, plots and a page.

``identified.xml`` is the MJCF's own text with only the fitted numbers changed (an
attribute set or replaced in place, an ``<inertial>`` added to a body that had
none), so ``diff model.xml identified.xml`` shows exactly what the logs changed.
Included files are copied beside it (or, when they lie outside the folder, the
include points at them by absolute path).  A fitted delay goes into the model
itself as every actuator's ``delay``, ``nsample`` and ``interp="linear"``: MuJoCo
replays the commands late natively.  With the RK4 integrator MuJoCo reads a delayed
command at the middle of the step, so the written delay is the fitted one plus half
a time step (the fitted delay is what the rollouts applied, each step's command
held over the step).  A sensor's bias has no MJCF attribute: it stays in the JSON.
"""

from __future__ import annotations

import html
import math
import re
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import quote

import mujoco
import numpy as np

from ..html_report import PAGE, versions
from ..safe_text import escape as safe
from .fit import FitResult
from .spec import Quantity

__all__ = ["sentence", "sentences", "as_json", "write_xml", "write_values", "plot_signals", "figure_signals",
           "write_html"]


def _digits(value: float, half: float) -> str:
    """``value`` with enough digits that its interval's half-width shows (two significant digits of it)."""
    if value == 0:
        return "0"
    if not math.isfinite(half) or half <= 0:
        return f"{value:.4g}"
    decimals = max(0, 1 - int(math.floor(math.log10(half))))
    if abs(value) >= 1e5 or (abs(value) < 1e-4 and value != 0):
        return f"{value:.{max(2, decimals + int(math.floor(math.log10(abs(value)))) + 1)}g}"
    return f"{value:.{min(decimals, 12)}f}"


def _who(target: Quantity) -> str:
    return "commands" if target.kind == "delay" else f"{target.kind} {target.element!r}"


def sentence(target: Quantity, value: np.ndarray, half: np.ndarray, identified: bool, moved: float,
             at_bound: np.ndarray | None = None) -> str:
    """One line in crossdyn's words.

    ``body 'link2': mass 0.460 (0.459 .. 0.461) kg where the model has 0.4 (+15 %)``; a value the fit
    stopped at its bound says so, ``joint 'elbow': damping 0 (at its lower bound) .. 0.031 N m s/rad ...``;
    a quantity the logs cannot pin down, ``joint 'idle': damping not identified (the logs never move it)``.
    """
    who, attr = _who(target), target.attr + (f"[{target.component}]" if target.component is not None else "")
    if not identified:
        if moved <= 1e-3:
            return f"{who}: {attr} not identified (the logs never move it)"
        spread = ", ".join(f"± {h:.3g}" for h in half)
        return f"{who}: {attr} not identified (the logs leave it undetermined: {spread} {target.unit})".rstrip()
    scale, unit = (1e3, "ms") if target.kind == "delay" else (1.0, target.unit)
    bound = np.zeros(value.size, int) if at_bound is None else np.asarray(at_bound)
    parts = []
    for v, h, n, b, lo, hi in zip(value * scale, half * scale, target.nominal * scale, bound, target.low * scale,
                                  target.high * scale, strict=True):
        if b < 0:
            text = f"{_digits(lo, h)} (at its lower bound) .. {_digits(v + h, h)}"
        elif b > 0:
            text = f"{_digits(v - h, h)} .. {_digits(hi, h)} (at its upper bound)"
        else:
            text = f"{_digits(v, h)} ({_digits(v - h, h)} .. {_digits(v + h, h)})"
        parts.append((text, v, n))
    if len(parts) == 1:
        text, v, n = parts[0]
        change = f" ({(v - n) / abs(n) * 100:+.0f} %)" if n != 0 else ""
        unit_text = f" {unit}" if unit else ""
        return f"{who}: {attr} {text}{unit_text} where the model has {n:.4g}{change}"
    values = ", ".join(p[0] for p in parts)
    model = ", ".join(f"{p[2]:.4g}" for p in parts)
    return f"{who}: {attr} [{values}] {unit} where the model has [{model}]"


def sentences(result: FitResult) -> list[str]:
    """One :func:`sentence` per fitted quantity."""
    bounds: list[np.ndarray | None] = list(result.at_bound) if result.at_bound else [None] * len(result.targets)
    return [sentence(t, v, h, ok, m, b) for t, v, h, ok, m, b in
            zip(result.targets, result.value, result.half_width, result.identified, result.moved, bounds,
                strict=True)]


def _num(a: np.ndarray) -> float | list[float]:
    a = np.asarray(a, float).reshape(-1)
    return float(a[0]) if a.size == 1 else [float(v) for v in a]


def as_json(result: FitResult, *, model: Path, logs: list[str], validation: dict, window: float,
            noise: dict | None = None, verdicts: dict | None = None) -> dict:
    """``identified.json``'s content.

    Args:
      result: the fit.
      model, logs: what was fitted.
      validation: per validation log and reading, the RMS misfit ``before`` and ``after``.
      window: the replay's window, s.
      noise: each reading's noise and its source (``{signal: {"value", "source", "detail"}}``).
      verdicts: the fitted model judged against each log, as ``check model`` judges (``{log: verdict json}``).
    """
    parameters = []
    for k, (t, v, ok) in enumerate(zip(result.targets, result.value, result.identified, strict=True)):
        entry: dict[str, Any] = {"name": t.spec, "model": _num(t.nominal), "unit": t.unit, "identified": ok}
        if ok:
            low, high = result.bounds(k)
            entry |= {"value": _num(v), "low": _num(low), "high": _num(high)}
            if result.at_bound and np.any(result.at_bound[k]):
                entry["at_bound"] = ["lower" if b < 0 else "upper" if b > 0 else None for b in result.at_bound[k]] \
                    if t.size > 1 else ("lower" if result.at_bound[k][0] < 0 else "upper")
        else:  # never a confident number
            entry |= {"value": _num(t.nominal), "low": None, "high": None}
        parameters.append(entry)
    residuals = {log: {key: {"before": result.residual_before[log][key], "after": after}
                       for key, after in signals.items()} for log, signals in result.residual_after.items()}
    return {"model": str(model), "logs": logs, "window_s": window, "parameters": parameters,
            "intervals": result.intervals, "noise": noise or {}, "residuals": residuals, "validation": validation,
            "verdicts": verdicts or {},
            "residual_units": "RMS of (measured - predicted) / the reading's noise (see \"noise\" for each figure's "
                              "source)", "seconds": result.seconds, "jacobians": result.iterations}


# -- identified.xml --------------------------------------------------------------------------------------------
_ACTUATOR_TAGS = ("general", "motor", "position", "velocity", "intvelocity", "damper", "cylinder", "muscle",
                  "adhesion", "dcmotor", "plugin")


def _fmt(v: float) -> str:
    return f"{float(v):.8g}"


def _start_tag(text: str, tags: tuple[str, ...], name: str) -> re.Match | None:
    pattern = rf"<({'|'.join(tags)})\b[^>]*?\bname\s*=\s*([\"']){re.escape(name)}\2[^>]*?>"
    return re.search(pattern, text)


def _set_attr(tag: str, attr: str, value: str) -> str:
    found = re.search(rf"(\s{attr}\s*=\s*)([\"'])(.*?)\2", tag)
    if found:
        return tag[: found.start(3)] + value + tag[found.end(3) :]
    end = len(tag) - (2 if tag.endswith("/>") else 1)
    return f"{tag[:end].rstrip()} {attr}=\"{value}\"{tag[end:] if tag[end - 1] != ' ' else tag[end:]}"


def _get_attr(tag: str, attr: str) -> str | None:
    found = re.search(rf"\s{attr}\s*=\s*([\"'])(.*?)\1", tag)
    return found.group(2) if found else None


def _replace(text: str, match: re.Match, new: str) -> str:
    return text[: match.start()] + new + text[match.end() :]


# Attributes only an actuator shortcut has: a <general> written in its place carries their effect as numbers.
_SHORTCUT_ONLY = ("kp", "kv", "dampratio", "timeconst", "inheritrange", "area", "diameter", "bias", "tau")


def _biased(tag: str, model: mujoco.MjModel, name: str, bias: float) -> str:
    """An actuator's start tag with a constant force ``bias`` (MuJoCo's affine ``biasprm[0]``).

    A ``<general>`` gets ``biastype="affine"`` and its ``biasprm`` with the first number replaced; a
    shortcut (``<motor>``, ``<position>``, ``<velocity>``) has no bias attribute, so it becomes the
    ``<general>`` it stands for, its gains and bias written out from the compiled model.
    """
    a = model.actuator(name)
    prm = np.array(a.biasprm, float)
    prm[0] = bias
    last = max(int(np.max(np.flatnonzero(prm), initial=0)), 2) + 1
    biasprm = " ".join(_fmt(v) for v in prm[:last])
    kind = re.match(r"<(\w+)", tag).group(1)  # type: ignore[union-attr]
    if kind != "general":
        for attr in _SHORTCUT_ONLY:
            tag = re.sub(rf"\s{attr}\s*=\s*([\"']).*?\1", "", tag)
        tag = "<general" + tag[len(kind) + 1 :]
        gain = np.array(a.gainprm, float)
        tag = _set_attr(tag, "gaintype", "fixed")
        tag = _set_attr(tag, "gainprm", " ".join(_fmt(v) for v in gain[: max(int(np.max(np.flatnonzero(gain),
                                                                                        initial=0)), 0) + 1]))
        if model.actuator_ctrllimited[a.id]:
            tag = _set_attr(tag, "ctrlrange", " ".join(_fmt(v) for v in model.actuator_ctrlrange[a.id]))
    tag = _set_attr(tag, "biastype", "affine")
    return _set_attr(tag, "biasprm", biasprm)


def _files(path: Path, seen: set[Path] | None = None) -> list[Path]:
    """The MJCF and every file it includes, depth first."""
    seen = seen if seen is not None else set()
    out = [path]
    seen.add(path.resolve())
    for include in re.findall(r"<include\b[^>]*\bfile\s*=\s*[\"']([^\"']+)[\"']", path.read_text()):
        child = (path.parent / include).resolve()
        if child.is_file() and child not in seen:
            out += _files(child, seen)
    return out


def write_xml(model_path: Path, result: FitResult, model: mujoco.MjModel, out: Path) -> Path:
    """Write ``out/identified.xml``: the MJCF with only the fitted values changed (see the module docstring)."""
    values = [(t.kind, t.element, t.attr if t.component is None else f"{t.attr}[{t.component}]", np.asarray(v, float))
              for t, v, ok in zip(result.targets, result.value, result.identified, strict=True) if ok]
    return write_values(model_path, values, model, out)


def write_values(model_path: Path, values: list[tuple[str, str, str, np.ndarray]], model: mujoco.MjModel,
                 out: Path, filename: str = "identified.xml") -> Path:
    """Write ``out/filename``: the MJCF with only ``values`` changed, as ``identified.xml`` is written.

    Args:
      model_path: the MJCF.
      values: ``(kind, element, attr, value)`` per quantity (``body``, ``link2``, ``mass``, (1,)), in the
        units of ``identified.json``; a delay as the rollouts apply it (see the module docstring).
      model: the MJCF compiled (the values it does not change, the time step).
      out: the folder (included files are copied into it).
      filename: the written file's name.
    """
    files = _files(model_path)
    texts = {f: f.read_text() for f in files}

    def edit(tags: tuple[str, ...], name: str, change) -> None:
        for f in files:
            match = _start_tag(texts[f], tags, name)
            if match:
                texts[f] = change(texts[f], match)
                return

    by_body: dict[str, dict[str, np.ndarray]] = {}
    for kind, element, attr, v in values:
        if kind == "body":
            part = re.fullmatch(r"(com|inertia)\[(\d)\]", attr)
            if part:  # one component: the rest as the model (or another fitted component) has it
                whole = part.group(1)
                b = model.body(element)
                current = by_body.setdefault(element, {}).get(whole, np.array(b.ipos if whole == "com" else
                                                                            b.inertia, float).copy())
                current[int(part.group(2))] = float(v[0])
                by_body[element][whole] = current
            else:
                by_body.setdefault(element, {})[attr] = v
        elif kind == "actuator" and attr == "bias":
            edit(_ACTUATOR_TAGS, element, lambda s, m, element=element, v=v: _replace(
                s, m, _biased(m.group(0), model, element, float(v[0]))))
        elif kind == "joint":
            def joint(s, m, attr=attr, v=v):
                return _replace(s, m, _set_attr(m.group(0), attr, _fmt(v[0])))
            edit(("joint",), element, joint)
        elif kind == "actuator":
            def gear(s, m, v=v):
                old = (_get_attr(m.group(0), "gear") or "1").split()
                old[0] = _fmt(v[0])
                return _replace(s, m, _set_attr(m.group(0), "gear", " ".join(old)))
            edit(_ACTUATOR_TAGS, element, gear)
        elif kind == "delay":
            dt = float(model.opt.timestep)
            written = float(v[0]) + (dt / 2 if model.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4 else 0.0)
            nsample = int(math.ceil(written / dt)) + 2  # the history must reach back past the delay
            for a in range(model.nu):
                def delayed(s, m, written=written, nsample=nsample):
                    tag = _set_attr(m.group(0), "delay", _fmt(written))
                    tag = _set_attr(tag, "nsample", str(nsample))
                    return _replace(s, m, _set_attr(tag, "interp", "linear"))
                edit(_ACTUATOR_TAGS, model.actuator(a).name, delayed)
    for body, fitted in by_body.items():
        b = model.body(body)
        mass0, inertia0 = float(b.mass[0]), np.array(b.inertia, float)
        mass = float(fitted["mass"][0]) if "mass" in fitted else mass0
        inertia = fitted.get("inertia", inertia0 * (mass / mass0) if "mass" in fitted else inertia0)
        com = fitted.get("com", np.array(b.ipos, float))

        def inertial(s, m, b=b, mass=mass, inertia=inertia, com=com):
            start = m.end()
            child = re.compile(r"<(inertial|body)\b[^>]*?>").search(s, start)
            if child and child.group(1) == "inertial" and not m.group(0).endswith("/>"):
                tag = child.group(0)
                tag = _set_attr(tag, "mass", _fmt(mass))
                tag = _set_attr(tag, "pos", " ".join(_fmt(c) for c in com))
                if _get_attr(tag, "fullinertia") is not None:
                    tag = re.sub(r"\sfullinertia\s*=\s*([\"']).*?\1", "", tag)
                    tag = _set_attr(tag, "quat", " ".join(_fmt(c) for c in b.iquat))
                tag = _set_attr(tag, "diaginertia", " ".join(_fmt(c) for c in inertia))
                return s[: child.start()] + tag + s[child.end() :]
            new = (f"<inertial pos=\"{' '.join(_fmt(c) for c in com)}\" quat=\"{' '.join(_fmt(c) for c in b.iquat)}\" "
                   f"mass=\"{_fmt(mass)}\" diaginertia=\"{' '.join(_fmt(c) for c in inertia)}\"/>")
            return s[:start] + new + s[start:]
        edit(("body",), body, inertial)

    out.mkdir(parents=True, exist_ok=True)
    main = texts[files[0]]
    for f in files[1:]:
        relative = f.relative_to(model_path.parent.resolve()) if f.is_relative_to(model_path.parent.resolve()) else None
        if relative is not None:
            (out / relative).parent.mkdir(parents=True, exist_ok=True)
            (out / relative).write_text(texts[f])
        else:
            target = out / f.name
            target.write_text(texts[f])
            main = re.sub(rf"(<include\b[^>]*\bfile\s*=\s*[\"'])[^\"']*{re.escape(f.name)}([\"'])",
                          rf"\g<1>{f.name}\2", main)
    path = out / filename
    path.write_text(main)
    for asset_dir in ("meshdir", "texturedir", "assetdir"):
        if re.search(rf"\b{asset_dir}\s*=", main):
            src = model_path.parent
            for item in src.iterdir():
                if item.is_dir() and not (out / item.name).exists():
                    shutil.copytree(item, out / item.name)
            break
    return path


# -- plots and the page ----------------------------------------------------------------------------------------
def plot_signals(path: Path, time: np.ndarray, measured: dict[str, np.ndarray], nominal: dict[str, np.ndarray],
                 identified: dict[str, np.ndarray] | None, title: str) -> Path:
    """One figure per log: each logged reading, measured / model / identified model (if any), against time."""
    import matplotlib.pyplot as plt  # late: pyplot's start-up is for commands that plot a log

    fig = figure_signals(time, measured, nominal, identified, title)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


# The plot's vertical margin beyond the measured readings, as a share of their range: a replay that leaves
# the log's range by more is drawn to the axis's edge (and said), so the log stays readable.
PLOT_MARGIN = 0.25


def figure_signals(time: np.ndarray, measured: dict[str, np.ndarray], nominal: dict[str, np.ndarray],
                   identified: dict[str, np.ndarray] | None, title: str):
    """The figure of :func:`plot_signals` (matplotlib ``Figure``), not saved.

    Each axis is scaled to the measured reading (plus :data:`PLOT_MARGIN`), not to a replay
    that diverges from it; a replay that leaves the axis is labelled so.
    """
    import matplotlib  # late, as in plot_signals; the backend is set before pyplot is imported

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after use("Agg"): the backend must be chosen first

    keys = list(measured)
    fig, axes = plt.subplots(len(keys), 1, figsize=(10, 2.2 * len(keys) + 0.6), sharex=True, squeeze=False)
    for ax, key in zip(axes[:, 0], keys, strict=True):
        low, high = float(np.min(measured[key])), float(np.max(measured[key]))
        pad = PLOT_MARGIN * max(high - low, 1e-9 * max(abs(high), 1.0))
        left = []
        for k in range(measured[key].shape[1]):
            suffix = f"[{k}]" if measured[key].shape[1] > 1 else ""
            ax.plot(time, measured[key][:, k], color="0.5", lw=1.0, label=f"measured{suffix}")
            for label, series, style in (("model", nominal, dict(color="tab:red", lw=0.9, ls="--")),
                                         ("identified", identified, dict(color="tab:blue", lw=0.9))):
                if series is None:
                    continue
                values = series[key][:, k]
                ax.plot(time, np.clip(values, low - pad, high + pad), label=f"{label}{suffix}", **style)
                if np.any((values < low - pad) | (values > high + pad)):
                    left.append(label)
        ax.set_ylim(low - pad, high + pad)
        ax.set_ylabel(key)
        if left:
            ax.text(0.01, 0.95, f"{' and '.join(sorted(set(left)))} leave{'s' if len(set(left)) == 1 else ''} "
                                f"this axis (drawn at its edge)", transform=ax.transAxes, va="top", fontsize="small",
                    color="tab:red")
        ax.legend(loc="upper right", fontsize="small", ncol=3)
    axes[-1, 0].set_xlabel("time (s)")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def write_html(path: Path, *, title: str, command: str, lines: list[str], table: list[dict], residuals: dict,
               validation: dict, plots: list[str]) -> Path:
    """``index.html`` in the style of ``crossdyn run``'s report: the sentences, the table, residuals, plots."""

    def escape(text) -> str:
        return html.escape(safe(str(text)))

    style = PAGE.template.split("<style>", 1)[1].split("</style>", 1)[0]
    rows = []
    for p in table:
        cls = "pass" if p["identified"] else "fail"
        shown = "not identified" if not p["identified"] else f"{p['value']} ({p['low']} .. {p['high']})"
        rows.append(f"<tr><td>{escape(p['name'])}</td><td>{escape(str(p['model']))}</td>"
                    f"<td class=\"{cls}\">{escape(shown)}</td><td>{escape(p['unit'])}</td></tr>")

    def residual_rows(block: dict) -> str:
        out = []
        for log, signals in block.items():
            for key, v in signals.items():
                out.append(f"<tr><td>{escape(Path(log).name)}</td><td>{escape(key)}</td>"
                           f"<td>{v['before']:.3g}</td><td>{v['after']:.3g}</td></tr>")
        return "\n".join(out)

    head = "<tr><th>log</th><th>signal</th><th>model</th><th>identified</th></tr>"
    valid = (f"<h2>Validation logs (replayed, not fitted)</h2><table>{head}{residual_rows(validation)}</table>"
             if validation else "")
    images = "\n".join(f'<img src="{quote(p)}" alt="{escape(p)}">' for p in plots)
    meta = "".join(f"<tr><td>{escape(k)}</td><td>{escape(v)}</td></tr>" for k, v in versions().items())
    page = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{escape(title)}</title>
<style>{style}</style>
</head>
<body>
<h1>{escape(title)}</h1>
<table class="run"><tr><td>command</td><td>{escape(command)}</td></tr>{meta}</table>
<h2>What the logs say</h2>
<pre>{escape(chr(10).join(lines))}</pre>
<table><thead><tr><th>parameter</th><th>model</th><th>identified (95 % interval)</th><th>unit</th></tr></thead>
<tbody>{''.join(rows)}</tbody></table>
<h2>Residuals (RMS, in units of each reading's own noise)</h2>
<table>{head}{residual_rows(residuals)}</table>
{valid}
<h2>Readings: measured, model, identified</h2>
{images}
</body>
</html>
"""
    path.write_text(page)
    return path
