"""``OUT/index.html``: a run's report, for a person to open in a browser.

The summary table, then each experiment's headline metrics, baseline drift, plots
and videos, and the run's command line, seed, versions and date.  It opens from
``file://`` with no network (inline styles, no scripts or fonts, plots linked
beside it), and every text from an experiment or the command line is escaped.
"""

from __future__ import annotations

import html
import platform
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from string import Template
from urllib.parse import quote

from .baseline import NOT_MEASURED
from .files import write_text
from .safe_text import escape

__all__ = ["write_report", "render", "versions"]

IMAGE_SUFFIXES = (".png", ".svg", ".jpg", ".jpeg", ".gif")
VIDEO_SUFFIXES = (".mp4", ".webm")
# Top-level scalar metrics shown per experiment; the rest stay in metrics.json.
MAX_HEADLINE_METRICS = 16

PAGE = Template("""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>$title</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; max-width: 80em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #eee; }
td.pass { background: #d9f2d9; }
td.fail { background: #f7d4d4; font-weight: bold; }
.run td:first-child { font-weight: bold; }
section { border-top: 2px solid #ccc; margin-top: 1.5em; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.3em 0; }
pre { background: #f6f6f6; padding: 0.5em; white-space: pre-wrap; }
</style>
</head>
<body>
<h1>$title</h1>
<table class="run">
$run_rows
</table>
<h2>Summary</h2>
<table id="summary">
<thead><tr><th>experiment</th><th>expected</th><th>measured</th><th>result</th><th>change from baseline</th>
<th>time (s)</th></tr></thead>
<tbody>
$summary_rows
</tbody>
</table>
$sections
</body>
</html>
""")

SECTION = Template("""<section id="$anchor">
<h2>$name</h2>
<p>expected: $expected<br>measured: $measured<br>result: <strong>$result</strong></p>
$error
$baseline
$metrics
$media
</section>
""")


def _e(text) -> str:
    """Text for HTML: markup escaped; control codes and lone surrogates written as ``\\x1b``, ``\\ud800``."""
    return html.escape(escape(str(text)), quote=True)


def _url(path: str) -> str:
    """A relative link to a file the run wrote; a name that is not UTF-8 keeps its bytes."""
    return quote(path, errors="surrogateescape")


def versions() -> dict[str, str]:
    """Versions of crossdyn, Python, MuJoCo and NumPy, and the platform."""
    found = {"python": platform.python_version(), "platform": platform.platform()}
    for package in ("crossdyn", "mujoco", "numpy"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = "not installed"
    return found


def _headline_metrics(metrics: dict) -> str:
    rows = [(k, v) for k, v in metrics.items()
            if k not in NOT_MEASURED and isinstance(v, (int, float, bool, str)) and len(str(v)) <= 80]
    if not rows:
        return ""
    cells = "\n".join(f"<tr><td>{_e(k)}</td><td>{_e(_format(v))}</td></tr>" for k, v in rows[:MAX_HEADLINE_METRICS])
    return f'<table class="metrics">\n<tr><th>metric</th><th>value</th></tr>\n{cells}\n</table>'


def _format(value) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _media(files: list[str]) -> str:
    parts = []
    for path in files:
        src = _e(_url(path))
        if path.lower().endswith(IMAGE_SUFFIXES):
            parts.append(f'<img src="{src}" alt="{_e(path)}">')
        elif path.lower().endswith(VIDEO_SUFFIXES):
            parts.append(f'<video controls src="{src}" width="480"></video>')
        else:
            parts.append(f'<p><a href="{src}">{_e(path)}</a></p>')
    return "\n".join(parts)


def _result(outcome) -> tuple[str, str]:
    return ("pass", "pass") if outcome.passed else ("fail", "FAIL")


def render(outcomes, metrics_by_name: dict[str, dict] | None = None, *, command: str, seed: int, short: bool,
           overrides: dict[str, str], started: float, versions_: dict[str, str]) -> str:
    """The report's HTML.

    Args:
      outcomes: the run's :class:`~.results.Outcome`, in run order.
      metrics_by_name: each experiment's metrics by name (default: what each
        outcome carries).
      command: the command line of the run.
      seed, short, overrides: the run's settings.
      started: when the run started, s since the epoch.
      versions_: from :func:`versions`.
    """
    if metrics_by_name is None:
        metrics_by_name = {o.name: o.metrics for o in outcomes}
    ok = sum(o.ok for o in outcomes)
    title = f"crossdyn run: {ok}/{len(outcomes)} as expected"
    run_info = [("command", command), ("seed", seed), ("short", short),
                ("parameters (--set)", ", ".join(f"{k}={v}" for k, v in overrides.items()) or "defaults"),
                ("date", time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(started))),
                ("wall time", f"{time.time() - started:.1f} s"),
                *((f"{name} version" if name != "platform" else name, v) for name, v in versions_.items())]
    run_rows = "\n".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in run_info)
    summary_rows, sections = [], []
    for o in outcomes:
        css, label = _result(o)
        drift = o.baseline.headline if o.baseline is not None else "no baseline given"
        drift_css = "" if o.baseline is None or o.baseline.passed else ' class="fail"'
        summary_rows.append(
            f'<tr><td><a href="#{_e(quote(o.name))}">{_e(o.name)}</a></td><td>{_e(o.expected)}</td>'
            f'<td>{_e(o.measured)}</td><td class="{css}">{label}</td><td{drift_css}>{_e(drift)}</td>'
            f"<td>{o.seconds:.1f}</td></tr>")
        details = o.baseline.lines() if o.baseline is not None else []
        sections.append(SECTION.substitute(
            anchor=_e(quote(o.name)), name=_e(o.name), expected=_e(o.expected), measured=_e(o.measured),
            result=label,
            error=f"<pre>{_e(o.error)}</pre>" if o.error else "",
            baseline=("<p>change from baseline:</p><ul>" + "".join(f"<li>{_e(line)}</li>" for line in details)
                      + "</ul>") if details else "",
            metrics=_headline_metrics(metrics_by_name.get(o.name, {})),
            media=_media(o.files)))
    return PAGE.substitute(title=_e(title), run_rows=run_rows, summary_rows="\n".join(summary_rows),
                           sections="".join(sections))


def write_report(out: Path, outcomes, *, command: str, seed: int, short: bool, overrides: dict[str, str],
                 started: float) -> Path:
    """Write ``out/index.html`` for the run (atomically) and return its path (metrics from the outcomes)."""
    page = render(outcomes, command=command, seed=seed, short=short, overrides=overrides,
                  started=started, versions_=versions())
    path = Path(out) / "index.html"
    write_text(path, page)
    return path
