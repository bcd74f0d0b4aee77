"""Sphinx configuration of crossdyn's documentation.

Build it from the repository root, with the ``docs`` extra installed
(``pip install -e '.[docs]'``)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

``-W`` turns every warning (a broken reference, an unknown experiment, a bad
docstring) into an error.  The gallery runs every registered experiment in short
mode during the build (about 30 s on two cores); set ``CROSSDYN_DOCS_RESULTS`` to
the folder of an earlier ``crossdyn run --short`` to reuse its results instead.
"""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "crossdyn"
author = "the crossdyn authors"
copyright = "the crossdyn authors"  # noqa: A001 (Sphinx's name)
release = importlib.metadata.version("crossdyn")
version = release

extensions = [
    "myst_parser",  # pages in Markdown (MyST), math with $...$ and $$...$$
    "sphinx.ext.autodoc",  # the API reference from the docstrings
    "sphinx.ext.napoleon",  # ... which are Google style
    "offline_mathjax",  # MathJax 3 served from the build itself, no CDN
    "crossdyn_gallery",  # one page per registered experiment, and the {experiment} role
    "crossdyn_cli",  # the command-line reference, from the argument parser
    "crossdyn_api",  # the API reference's lists of names, from the package
]

source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "README.md", "gallery/_media"]
root_doc = "index"

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# Google-style "Attributes:" sections become :ivar: fields, so a dataclass's fields
# are not described twice (once by napoleon, once by autodoc).
napoleon_use_ivar = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": False}

html_theme = "furo"
html_title = f"crossdyn {release}"
html_static_path = ["_static"]
html_css_files = ["crossdyn.css"]
html_show_sourcelink = False

# Docstrings whose plain-text layout reStructuredText cannot read (an equation
# block right under a sentence, a literal spanning lines in a Returns entry, a
# continued argument list): shown as written, in a literal block, until they are
# rewritten in the package (then drop them from this list; the build then checks them).
crossdyn_verbatim_docstrings = (
    "crossdyn.analytic.two_link.newton_euler",
    "crossdyn.experiments.core.cli",
)
