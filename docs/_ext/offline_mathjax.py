"""Sphinx extension: MathJax 3 served from the built site itself, never from a CDN.

Sphinx's math renderer (``sphinx.ext.mathjax``) loads MathJax from a CDN by
default, and the machines crossdyn is built and tested on reach no network
beyond the package index.  The MathJax 3.2.2 distribution ships in the PyPI
package ``sphinx-mathjax-offline`` (the ``docs`` extra installs it); this
extension copies the one component the pages need, ``tex-svg.js`` (TeX input,
SVG output), and the TeX extensions it may load on demand into
``_static/mathjax/`` of the build, and points ``mathjax_path`` at it.

SVG output, not CHTML: SVG needs no web fonts.  CHTML's ``.woff`` fonts are
fetched by CSS, and a browser refuses cross-origin font loads for a page opened
from ``file://``, so the site would show broken glyphs when opened from disk.
"""

from __future__ import annotations

import importlib.metadata
import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

PACKAGE = "sphinx-mathjax-offline"
COMPONENT = "tex-svg.js"
# What tex-svg.js loads at run time: TeX packages named by \require or autoloaded
# by a macro (e.g. \boldsymbol, \cancel).
ON_DEMAND = ("input/tex/extensions",)


def mathjax_source() -> Path:
    """The folder of the packaged MathJax distribution.

    Raises:
      ExtensionError: the package is not installed (``pip install -e '.[docs]'``).
    """
    try:
        dist = importlib.metadata.distribution(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise ExtensionError(f"MathJax is served locally from the PyPI package {PACKAGE!r}, which is not "
                             "installed: pip install -e '.[docs]'") from None
    folder = Path(dist.locate_file(f"{PACKAGE}/static/mathjax"))
    if not (folder / COMPONENT).is_file():
        raise ExtensionError(f"{PACKAGE} has no {COMPONENT} at {folder}; reinstall it")
    return folder


def _copy(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    source, target = mathjax_source(), Path(app.outdir) / "_static" / "mathjax"
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source / COMPONENT, target / COMPONENT)
    for folder in ON_DEMAND:
        shutil.copytree(source / folder, target / folder, dirs_exist_ok=True)


def _configure(app: Sphinx, config) -> None:
    mathjax_source()  # fail at once, not after the whole build, when MathJax is missing
    # A relative path is taken relative to the build's _static folder.
    config.mathjax_path = f"mathjax/{COMPONENT}"


def setup(app: Sphinx) -> dict:
    app.setup_extension("sphinx.ext.mathjax")
    app.connect("config-inited", _configure)
    app.connect("build-finished", _copy)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
