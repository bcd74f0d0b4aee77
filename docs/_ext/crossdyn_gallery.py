"""Sphinx extension: the gallery of every registered experiment, and roles that link to it.

At ``builder-inited`` (before Sphinx reads any page) the extension gets one run of
every experiment crossdyn registers (``crossdyn list``):

- from the folder named by the environment variable ``CROSSDYN_DOCS_RESULTS``, the
  ``--out`` folder of an earlier ``crossdyn run --short``; or
- by running ``crossdyn run --short --workers 2`` into ``gallery-results/`` beside
  the build's output folder.

It then writes ``gallery/index.md`` and one ``gallery/NAME.md`` per experiment
into the documentation's source folder (generated, not committed): what the
experiment shows (its registered summary), its parameters with defaults, ranges
and help, its expected outcome, what the run measured, pass or fail, its headline
metrics and explanation, its plots and tables, and the pages that explain it.
Everything comes from the registry and the run's own files, so an experiment
added to crossdyn appears here with no edit to the docs.

Roles, for the hand-written pages:

``{experiment}`NAME```
    a link to NAME's gallery page; an unknown NAME is a build warning (an error
    under ``-W``), so a renamed or removed experiment cannot leave a dead link.
``{experiment}`expects:PHRASE```
    the same, for the one experiment whose expected outcome contains PHRASE.
``{variant}`expects:PHRASE```
    the ``crossdyn check two-link --variant`` value of the printed two-link form
    whose experiment expects PHRASE (rendered as code).

The pages that use ``{experiment}`` are listed on the experiment's gallery page
("Explained in").
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective, SphinxRole

logger = logging.getLogger(__name__)

GALLERY = "gallery"  # the generated folder, under the documentation's source folder
RESULTS_ENV = "CROSSDYN_DOCS_RESULTS"
PLOT_SUFFIXES = (".png", ".svg", ".jpg", ".jpeg", ".gif")
TABLE_SUFFIXES = (".md",)
BOOKKEEPING = {"metrics.json", "timing.json", "error.txt"}
# Metrics every experiment carries, shown elsewhere on the page.
NOT_HEADLINE = {"experiment", "expected", "short", "seed", "params", "passed", "measured", "explanation",
                "diagnosis", "error"}
MAX_HEADLINE_METRICS = 16
LONG_TEXT = 120  # characters: a longer string metric is not a headline

# The gallery's sections are declared by the systems themselves: each experiment's module
# (or a package above it) sets GALLERY_HEADING and DERIVATION_PAGE (Experiment.declared).


# --------------------------------------------------------------------------- the registry


def registered() -> dict:
    """crossdyn's own registered experiments, by name, in run order (no users' entry points)."""
    from crossdyn.experiments.core.registry import experiments

    return {name: exp for name, exp in experiments().items()
            if exp.run.__module__.startswith("crossdyn.experiments.")}


def _by_expectation(phrase: str) -> list[str]:
    return [name for name, exp in registered().items()
            if phrase in exp.expected_for({k: p.default for k, p in exp.params.items()})]


def resolve_experiment(target: str) -> tuple[str | None, str]:
    """An experiment name for ``NAME`` or ``expects:PHRASE``, or ``(None, why)``."""
    if target.startswith("expects:"):
        phrase = target.removeprefix("expects:").strip()
        found = _by_expectation(phrase)
        if len(found) != 1:
            return None, f"{len(found)} registered experiments expect {phrase!r} (need exactly one): {found}"
        return found[0], ""
    if target not in registered():
        return None, f"no registered experiment {target!r} (crossdyn list)"
    return target, ""


def resolve_variant(target: str) -> tuple[str | None, str]:
    """The two-link ``--variant`` value of the printed form whose experiment expects PHRASE."""
    from crossdyn.experiments.two_link import EXPECTED_MISMATCH

    if not target.startswith("expects:"):
        return None, f"write {{variant}}`expects:PHRASE`, got {target!r}"
    phrase = target.removeprefix("expects:").strip()
    found = [variant for variant, (expected, *_) in EXPECTED_MISMATCH.items() if phrase in expected]
    if len(found) != 1:
        return None, f"{len(found)} printed two-link variants expect {phrase!r} (need exactly one): {found}"
    return found[0], ""


# --------------------------------------------------------------------------- getting a run


def _run_experiments(app: Sphinx, names: list[str]) -> Path:
    out = Path(app.outdir).parent / "gallery-results"
    shutil.rmtree(out, ignore_errors=True)  # no plot of an earlier run may linger
    command = [sys.executable, "-m", "crossdyn.experiments", "run", "--short", "--workers",
               str(app.config.crossdyn_gallery_workers), "--out", str(out), *names]
    logger.info("gallery: running %d experiments in short mode (%s)", len(names), " ".join(command[1:]))
    env = {**os.environ, "MPLBACKEND": "Agg"}
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode not in (0, 1):  # 1: an expectation was missed, shown on its page
        raise ExtensionError(f"gallery: crossdyn run exited {done.returncode}:\n{done.stderr[-4000:]}")
    return out


def _results_folder(app: Sphinx, names: list[str]) -> Path:
    given = os.environ.get(RESULTS_ENV)
    if given:
        folder = Path(given).expanduser().resolve()
        if not folder.is_dir():
            raise ExtensionError(f"gallery: {RESULTS_ENV}={given} is not a folder")
        logger.info("gallery: using the results in %s", folder)
        return folder
    return _run_experiments(app, names)


# --------------------------------------------------------------------------- writing pages


def md_escape(text) -> str:
    """Plain text as Markdown that shows it literally (one line, no markup, no math)."""
    text = " ".join(str(text).split())
    return re.sub(r"([\\`*_\[\]<>$|#~{}])", r"\\\1", text)


def _number(value) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return md_escape(value)
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.4g}" if math.isfinite(value) else str(value)


def _headline(metrics: dict) -> list[tuple[str, str]]:
    rows = []
    for key, value in metrics.items():
        if key in NOT_HEADLINE or isinstance(value, (dict, list)):
            continue
        if isinstance(value, str) and len(value) > LONG_TEXT:
            continue
        rows.append((key, _number(value)))
    return rows[:MAX_HEADLINE_METRICS]


def _param_range(p) -> str:
    if p.low is None and p.high is None:
        return ""
    return f"{'' if p.low is None else _number(p.low)} .. {'' if p.high is None else _number(p.high)}"


def _files(folder: Path, name: str, summary: dict) -> list[Path]:
    """What the experiment wrote in the run (summary.json's list when it has one), plots and tables."""
    row = summary.get(name)
    if row is not None and row.get("files"):
        paths = [folder / f for f in row["files"]]
    else:
        paths = sorted((folder / name).iterdir()) if (folder / name).is_dir() else []
    return [p for p in paths if p.is_file() and p.name not in BOOKKEEPING
            and p.suffix.lower() in PLOT_SUFFIXES + TABLE_SUFFIXES]


def experiment_page(exp, metrics: dict, seconds: float | None, files: list[Path], media: str) -> str:
    """The Markdown of one experiment's gallery page; ``media`` is the folder of its copied files."""
    name = exp.name
    passed = bool(metrics.get("passed"))
    mode = "short run (`--short`)" if metrics.get("short") else "full run"
    lines = [f"({GALLERY}-{name})=", f"# {name}", "", md_escape(exp.summary), ""]
    lines += ["| | |", "|---|---|",
              f"| expected | {md_escape(metrics.get('expected', exp.expected))} |",
              f"| measured | {md_escape(metrics.get('measured', ''))} |",
              f"| result | {'**pass**' if passed else '**FAIL**'} |",
              f"| run | {mode}, seed {metrics.get('seed', 0)}"
              + (f", {seconds:.1f} s" if seconds is not None else "") + " |", ""]
    if metrics.get("error"):
        lines += [f"Error: {md_escape(metrics['error'])}", ""]
    lines += ["Run it yourself (the full version; `--short` for the reduced one shown here):", "",
              "```sh", f"crossdyn run {name}", "```", ""]
    if exp.params:
        lines += ["## Parameters", "", f"Set with `crossdyn run {name} --set KEY=VALUE`.", "",
                  "| key | default | range | meaning |", "|---|---|---|---|"]
        for key, p in exp.params.items():
            default = '`""`' if p.default == "" else f"`{p.default}`"
            lines.append(f"| `{key}` | {default} | {_param_range(p)} | {md_escape(p.help)} |")
        lines.append("")
    plots = [f for f in files if f.suffix.lower() in PLOT_SUFFIXES]
    tables = [f for f in files if f.suffix.lower() in TABLE_SUFFIXES]
    if plots:
        lines += ["## Plots", ""]
        for f in plots:
            lines += [f"```{{image}} {media}/{f.name}", f":alt: {f.stem.replace('_', ' ')} ({name})", "```", ""]
    for f in tables:
        lines += [f"## {md_escape(f.stem.replace('_', ' '))}", "", f.read_text().strip(), ""]
    headline = _headline(metrics)
    if headline:
        lines += ["## Headline metrics", "", "| metric | value |", "|---|---|"]
        lines += [f"| `{key}` | {value} |" for key, value in headline]
        lines += ["", f"Every metric of the run: {{download}}`metrics.json <{media}/metrics.json>`.", ""]
    for key in ("diagnosis", "explanation"):
        if isinstance(metrics.get(key), str) and metrics[key]:
            lines += [f"## {key.capitalize()}", "", md_escape(metrics[key]), ""]
    lines += ["## Explained in", "", "```{experiment-backlinks} " + name, "```", ""]
    return "\n".join(lines)


def index_page(groups: dict[str, list], outcomes: dict[str, dict]) -> str:
    lines = ["# Experiment gallery", "",
             "Every experiment crossdyn registers (`crossdyn list`), with what its last short run measured "
             "and its plots. The pages are generated while the documentation is built, from the registry "
             "and from the experiments' own output folders; nothing here is typed by hand.", ""]
    for title, exps in groups.items():
        lines += [f"## {md_escape(title)}", ""]
        pages = sorted({page for exp in exps if (page := exp.declared("DERIVATION_PAGE"))})
        if pages:
            links = ", ".join(f"[{page}](../derivations/{page}.md)" for page in pages)
            lines += [f"What these check is derived in {links}.", ""]
        lines += ["| experiment | what it shows | measured | result |", "|---|---|---|---|"]
        for exp in exps:
            m = outcomes[exp.name]
            result = "pass" if m.get("passed") else "**FAIL**"
            lines.append(f"| [{exp.name}]({exp.name}.md) | {md_escape(exp.summary)} | "
                         f"{md_escape(m.get('measured', ''))} | {result} |")
        lines += ["", "```{toctree}", ":hidden:", ""] + [exp.name for exp in exps] + ["```", ""]
    return "\n".join(lines)


def _write(path: Path, text: str) -> None:
    """Write only on change, so an unchanged page is not read again by an incremental build."""
    if not path.is_file() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def generate(app: Sphinx) -> None:
    exps = registered()
    folder = _results_folder(app, list(exps))
    summary_file = folder / "summary.json"
    summary = {row["name"]: row for row in json.loads(summary_file.read_text())} if summary_file.is_file() else {}
    gallery = Path(app.srcdir) / GALLERY
    gallery.mkdir(exist_ok=True)
    keep, outcomes, groups = {gallery / "index.md"}, {}, {}
    for name, exp in exps.items():
        metrics_file = folder / name / "metrics.json"
        if not metrics_file.is_file():
            logger.warning("gallery: experiment %r has no results in %s (run it, or unset %s)", name, folder,
                           RESULTS_ENV)
            metrics = {"passed": False, "measured": "not run", "expected": exp.expected}
        else:
            metrics = json.loads(metrics_file.read_text())
        if not metrics.get("passed"):
            logger.warning("gallery: experiment %r did not meet its expected outcome: %s", name,
                           metrics.get("error") or metrics.get("measured"))
        outcomes[name] = metrics
        heading = exp.declared("GALLERY_HEADING")
        if heading is None:
            logger.warning("gallery: experiment %r's module %s declares no GALLERY_HEADING (see the guide "
                           "'Add a system')", name, exp.run.__module__)
        groups.setdefault(heading or exp.run.__module__, []).append(exp)
        media = gallery / "_media" / name
        files = _files(folder, name, summary)
        for f in files + ([metrics_file] if metrics_file.is_file() else []):
            target = media / f.name
            if not target.is_file() or target.read_bytes() != f.read_bytes():
                media.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, target)
            keep.add(target)
        seconds = summary.get(name, {}).get("seconds")
        page = gallery / f"{name}.md"
        _write(page, experiment_page(exp, metrics, seconds, files, f"_media/{name}"))
        keep.add(page)
    _write(gallery / "index.md", index_page(groups, outcomes))
    for path in sorted(gallery.rglob("*"), reverse=True):  # pages of experiments that are gone
        if path.is_file() and path not in keep:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


# --------------------------------------------------------------------------- roles and backlinks


def _refused(role: SphinxRole, why: str):
    """What a role gives for text it cannot resolve: a warning saying ``why``, the text marked as a problem."""
    msg = role.inliner.reporter.warning(f"{role.name} role: {why}", line=role.lineno)
    return [role.inliner.problematic(role.rawtext, role.rawtext, msg)], [msg]


class ExperimentRole(SphinxRole):
    """``{experiment}`NAME``` or ``{experiment}`expects:PHRASE```: a link to the gallery page."""

    def run(self):
        name, why = resolve_experiment(self.text)
        if name is None:
            return _refused(self, why)
        refs = self.env.__dict__.setdefault("crossdyn_experiment_refs", {})
        refs.setdefault(name, set()).add(self.env.docname)
        node = addnodes.pending_xref("", nodes.literal(name, name), refdomain="std", reftype="doc",
                                     reftarget=f"/{GALLERY}/{name}", refexplicit=True, refwarn=True)
        return [node], []


class VariantRole(SphinxRole):
    """``{variant}`expects:PHRASE```: the ``--variant`` value of a printed two-link form, as code."""

    def run(self):
        variant, why = resolve_variant(self.text)
        if variant is None:
            return _refused(self, why)
        return [nodes.literal(variant, variant)], []


class backlinks(nodes.General, nodes.Element):
    """Placeholder for the list of pages that link to an experiment (filled in at resolve time)."""


class BacklinksDirective(SphinxDirective):
    required_arguments = 1

    def run(self):
        return [backlinks(experiment=self.arguments[0])]


def _fill_backlinks(app: Sphinx, doctree, docname: str) -> None:
    refs = getattr(app.env, "crossdyn_experiment_refs", {})
    for node in doctree.findall(backlinks):
        pages = sorted(refs.get(node["experiment"], ()))
        if not pages:
            node.replace_self(nodes.paragraph(text="No page of the documentation discusses it yet."))
            continue
        items = nodes.bullet_list()
        for page in pages:
            ref = nodes.reference("", "", internal=True, refuri=app.builder.get_relative_uri(docname, page))
            ref += nodes.Text(app.env.titles[page].astext() if page in app.env.titles else page)
            items += nodes.list_item("", nodes.paragraph("", "", ref))
        node.replace_self(items)


def _purge(app: Sphinx, env, docname: str) -> None:
    for pages in getattr(env, "crossdyn_experiment_refs", {}).values():
        pages.discard(docname)


def _merge(app: Sphinx, env, docnames, other) -> None:
    mine = env.__dict__.setdefault("crossdyn_experiment_refs", {})
    for name, pages in getattr(other, "crossdyn_experiment_refs", {}).items():
        mine.setdefault(name, set()).update(pages)


def setup(app: Sphinx) -> dict:
    app.add_config_value("crossdyn_gallery_workers", 2, "env")
    app.connect("builder-inited", generate)
    app.add_role("experiment", ExperimentRole())
    app.add_role("variant", VariantRole())
    app.add_node(backlinks)
    app.add_directive("experiment-backlinks", BacklinksDirective)
    app.connect("doctree-resolved", _fill_backlinks)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
