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

import math
import re
import shutil
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from crossdyn.experiments.core.identify.fit import FitResult
from crossdyn.experiments.core.identify.spec import Quantity

__all__ = ["sentence", "sentences", "as_json", "write_xml", "write_values", "plot_signals", "figure_signals",
           "write_html"]


def _digits(value: float, half: float) -> str:
    """``value`` with enough digits that its interval's half-width shows (two significant digits of it)."""
    if not math.isfinite(half) or half <= 0:
        return f"{value:.4g}"
    decimals = max(0, 1 - int(math.floor(math.log10(half))))
    if abs(value) >= 1e5 or (abs(value) < 1e-4 and value != 0):
        return f"{value:.{max(2, decimals + int(math.floor(math.log10(abs(value)))) + 1)}g}"
    return f"{value:.{min(decimals, 12)}f}"


def _who(target: Quantity) -> str:
    return "commands" if target.kind == "delay" else f"{target.kind} {target.element!r}"


def sentence(target: Quantity, value: np.ndarray, half: np.ndarray, identified: bool, moved: float) -> str:
    """One line in crossdyn's words.

    ``body 'link2': mass 0.460 (0.459 .. 0.461) kg where the model has 0.4 (+15 %)``, or for a
    quantity the logs cannot pin down ``joint 'idle': damping not identified (the logs never move it)``.
    """
    who, attr = _who(target), target.attr
    if not identified:
        if moved <= 1e-3:
            return f"{who}: {attr} not identified (the logs never move it)"
        spread = ", ".join(f"± {h:.3g}" for h in half)
        return f"{who}: {attr} not identified (the logs leave it undetermined: {spread} {target.unit})".rstrip()
    scale, unit = (1e3, "ms") if target.kind == "delay" else (1.0, target.unit)
    parts = []
    for v, h, n in zip(value * scale, half * scale, target.nominal * scale, strict=True):
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
    return [sentence(t, v, h, ok, m) for t, v, h, ok, m in
            zip(result.targets, result.value, result.half_width, result.identified, result.moved, strict=True)]


def _num(a: np.ndarray) -> float | list[float]:
    a = np.asarray(a, float).reshape(-1)
    return float(a[0]) if a.size == 1 else [float(v) for v in a]


def as_json(result: FitResult, *, model: Path, logs: list[str], validation: dict, window: float) -> dict:
    """``identified.json``'s content."""
    parameters = []
    for t, v, h, ok in zip(result.targets, result.value, result.half_width, result.identified, strict=True):
        entry: dict[str, Any] = {"name": t.spec, "model": _num(t.nominal), "unit": t.unit, "identified": ok}
        if ok:
            entry |= {"value": _num(v), "low": _num(v - h), "high": _num(v + h)}
        else:  # never a confident number
            entry |= {"value": _num(t.nominal), "low": None, "high": None}
        parameters.append(entry)
    residuals = {log: {key: {"before": result.residual_before[log][key], "after": after}
                       for key, after in signals.items()} for log, signals in result.residual_after.items()}
    return {"model": str(model), "logs": logs, "window_s": window, "parameters": parameters,
            "residuals": residuals, "validation": validation,
            "residual_units": "RMS of (measured - predicted) / the reading's noise estimated from its log",
            "seconds": result.seconds, "jacobians": result.iterations}


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
    values = [(t.kind, t.element, t.attr, np.asarray(v, float))
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
            by_body.setdefault(element, {})[attr] = v
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
                 identified: dict[str, np.ndarray], title: str) -> Path:
    """One figure per log: each logged reading, measured / nominal model / identified model, against time."""
    import matplotlib.pyplot as plt

    fig = figure_signals(time, measured, nominal, identified, title)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def figure_signals(time: np.ndarray, measured: dict[str, np.ndarray], nominal: dict[str, np.ndarray],
                   identified: dict[str, np.ndarray], title: str):
    """The figure of :func:`plot_signals` (matplotlib ``Figure``), not saved."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(measured)
    fig, axes = plt.subplots(len(keys), 1, figsize=(10, 2.2 * len(keys) + 0.6), sharex=True, squeeze=False)
    for ax, key in zip(axes[:, 0], keys, strict=True):
        for k in range(measured[key].shape[1]):
            suffix = f"[{k}]" if measured[key].shape[1] > 1 else ""
            ax.plot(time, measured[key][:, k], color="0.5", lw=1.0, label=f"measured{suffix}")
            ax.plot(time, nominal[key][:, k], color="tab:red", lw=0.9, ls="--", label=f"model{suffix}")
            ax.plot(time, identified[key][:, k], color="tab:blue", lw=0.9, label=f"identified{suffix}")
        ax.set_ylabel(key)
        ax.legend(loc="upper right", fontsize="small", ncol=3)
    axes[-1, 0].set_xlabel("time (s)")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def write_html(path: Path, *, title: str, command: str, lines: list[str], table: list[dict], residuals: dict,
               validation: dict, plots: list[str]) -> Path:
    """``index.html`` in the style of ``crossdyn run``'s report: the sentences, the table, residuals, plots."""
    import html
    from urllib.parse import quote

    from crossdyn.experiments.core.html_report import PAGE, versions
    from crossdyn.experiments.core.safe_text import escape as safe

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
