"""Sphinx extension: the API reference's lists of names, taken from the package itself.

``{crossdyn-short-api}``
    autodoc of every name of the front door, ``crossdyn.NAME``, in the order
    ``crossdyn.API`` lists them (the one place that list lives).
``{crossdyn-modules} PACKAGE``
    ``automodule`` of PACKAGE and every module under it, in name order (each
    module's ``__all__`` chooses its members).
``{crossdyn-source} PATH``
    the repository's file PATH (``mjcf/pendulum.xml``) shown whole, highlighted by
    its suffix: a guide that shows the code it walks through shows the code itself.
    The repository is found through the installed package (an editable install),
    so the pages build from a copy of docs/ too.

A name added to the short API, or a module added to a package, appears in the
reference with no edit to the documentation.

A short-API object is described once, on the API page; the module pages skip
it (its defining module's name stays a valid cross-reference target through
autodoc's canonical alias).  A package's own page shows its docstring only: its
members are its modules'.

Docstrings are plain-text first (they read well in ``help()``), so two marks
that reStructuredText would misread are escaped before Sphinx parses them:
``|x|`` (an absolute value, not a substitution) and a word ending in ``_`` (an
identifier such as ``plots_``, not a hyperlink).  Docstrings listed in the
``crossdyn_verbatim_docstrings`` setting (conf.py) are shown as written, in a
literal block: those whose layout reStructuredText cannot read, until they are
rewritten.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


def short_api() -> list[tuple[str, str]]:
    """``(autodoc directive, name)`` for each name of ``crossdyn.API``, in its order."""
    import crossdyn as api

    out = []
    for name in api.API:
        value = getattr(api, name)
        kind = "autoclass" if inspect.isclass(value) else "autofunction" if callable(value) else "autodata"
        out.append((kind, name))
    return out


def modules(package: str) -> list[str]:
    """``package`` and every module below it, sorted by name."""
    root = importlib.import_module(package)
    names = [package]
    if hasattr(root, "__path__"):
        names += [m.name for m in pkgutil.walk_packages(root.__path__, prefix=f"{package}.")
                  if not m.name.rsplit(".", 1)[-1].startswith("_")
                  # experiments/testing/ installs as crossdyn.testing (its own section), not under experiments
                  and not m.name.startswith("crossdyn.experiments.testing")]
    return sorted(names)


class _Generated(SphinxDirective):
    """Parses generated text in place of the directive: autodoc directives in an ``eval-rst`` block
    (autodoc writes reStructuredText, which the MyST page hands to the RST parser)."""

    def text(self) -> list[str]:
        raise NotImplementedError

    def run(self):
        node = nodes.container()
        self.state.nested_parse(StringList(self.text(), source=self.get_source_info()[0]), self.content_offset, node)
        return node.children


class ShortApiDirective(_Generated):
    def text(self) -> list[str]:
        lines = ["```{eval-rst}"]
        for kind, name in short_api():
            lines += [f".. {kind}:: crossdyn.{name}"]
            if kind == "autodata":
                lines += ["   :no-value:"]
            lines += [""]
        return lines + ["```"]


class ModulesDirective(_Generated):
    required_arguments = 1

    def text(self) -> list[str]:
        lines = ["```{eval-rst}"]
        for module in modules(self.arguments[0]):
            package = hasattr(importlib.import_module(module), "__path__")
            lines += [f".. automodule:: {module}"] + (["   :no-members:"] if package else []) + [""]
        return lines + ["```"]


_LITERAL = re.compile(r"(``.*?``|`[^`]*`)")
_ABS = re.compile(r"\|")
_TRAILING_UNDERSCORE = re.compile(r"(\w)_(?=\W|$)")


def escape_plain_text(line: str) -> str:
    """``|`` and a word's trailing ``_`` escaped outside inline literals and roles."""
    parts = _LITERAL.split(line)
    for i in range(0, len(parts), 2):  # even parts lie outside backticks
        parts[i] = _TRAILING_UNDERSCORE.sub(r"\1\\_", _ABS.sub(r"\\|", parts[i]))
    return "".join(parts)


def _process_docstring(app: Sphinx, what: str, name: str, obj, options, lines: list[str]) -> None:
    if name in app.config.crossdyn_verbatim_docstrings:
        text = inspect.getdoc(obj) or ""
        lines[:] = ["::", ""] + ["   " + line for line in text.splitlines()] + [""]
        return
    lines[:] = [escape_plain_text(line) for line in lines]


def _skip_short_api(app: Sphinx, what: str, name: str, obj, skip: bool, options):
    """On the module pages, leave the short API's objects to the API page."""
    if what == "module" and id(obj) in _short_api_ids():
        return True
    return None


_IDS: set[int] = set()


def _short_api_ids() -> set[int]:
    if not _IDS:
        import crossdyn as api

        _IDS.update(id(getattr(api, name)) for name in api.API
                    if inspect.isclass(getattr(api, name)) or callable(getattr(api, name)))
    return _IDS


_LANGUAGE = {".py": "python", ".xml": "xml", ".c": "c", ".toml": "toml"}


class SourceDirective(SphinxDirective):
    required_arguments = 1

    def run(self):
        import crossdyn.mjcf

        root = Path(crossdyn.mjcf.__file__).resolve().parents[1]
        path = root / self.arguments[0]
        if not path.is_file():
            raise self.error(f"crossdyn-source: no file {self.arguments[0]} in the repository ({root})")
        text = path.read_text(encoding="utf-8")
        node = nodes.literal_block(text, text, language=_LANGUAGE.get(path.suffix, "text"))
        caption = nodes.caption(self.arguments[0], self.arguments[0])
        return [nodes.container("", caption, node, classes=["literal-block-wrapper"], literal_block=True)]


def setup(app: Sphinx) -> dict:
    app.add_directive("crossdyn-source", SourceDirective)
    app.add_directive("crossdyn-short-api", ShortApiDirective)
    app.add_directive("crossdyn-modules", ModulesDirective)
    app.add_config_value("crossdyn_verbatim_docstrings", (), "env")
    # After napoleon's own handler (napoleon is set up first), on the reST it produced.
    app.connect("autodoc-process-docstring", _process_docstring, priority=600)
    app.connect("autodoc-skip-member", _skip_short_api)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
