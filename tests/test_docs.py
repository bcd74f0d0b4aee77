"""The documentation: its examples run, its commands parse, it builds with -W, and it renders.

- Every ```python block of a hand-written page runs as printed: a page's blocks in
  order, in one fresh interpreter, in an empty folder (as a reader would paste them).
- Every ``crossdyn ...`` line of a ```sh block is accepted by the real argument
  parser, and every experiment it names is registered.
- The site builds with warnings as errors, once per test session (shared by the
  xdist workers through a lock), its gallery running every registered experiment
  in short mode; every experiment then has a page with its plot, the CLI reference
  has every command and option, the API page every short-API name, and MathJax is
  served from the site itself.
- A real headless browser (Debian's chromium) opens the front page and a
  derivation page from disk, takes screenshots, and the math is typeset.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from crossdyn.experiments.core.cli import build_parser
from crossdyn.experiments.core.registry import experiments
from test_guides import PAGES as GUIDE_PAGES

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
GENERATED = ("_build", "gallery")  # folders the build writes, not pages to test


def _pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if not set(p.relative_to(DOCS).parts) & set(GENERATED))


def _blocks(page: Path, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", page.read_text(), flags=re.S | re.M)


# Pages whose examples tests/test_guides.py runs (and checks the numbers of), so they run once.
RUN_ELSEWHERE = {DOCS / page for page in GUIDE_PAGES}
PYTHON_PAGES = [p for p in _pages() if _blocks(p, "python") and p not in RUN_ELSEWHERE]


def test_the_pages_have_examples():
    # A guard for the two tests below: a change to the fence syntax must not leave them testing nothing.
    assert len(PYTHON_PAGES) >= 6, PYTHON_PAGES
    assert sum(len(_blocks(p, "sh")) for p in _pages()) >= 15


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=[str(p.relative_to(DOCS)) for p in PYTHON_PAGES])
def test_python_examples_run(page, tmp_path):
    code = "\n\n".join(_blocks(page, "python"))
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "MPLBACKEND": "Agg"})
    assert done.returncode == 0, f"{page.relative_to(ROOT)}:\n{done.stderr[-3000:]}"


def _command_lines(text: str) -> list[list[str]]:
    """The ``crossdyn ...`` commands of a shell block: continuation lines joined, comments dropped."""
    commands = []
    for line in text.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if words and words[0] == "crossdyn":
            commands.append(words[1:])
    return commands


DOC_COMMANDS = [(page, words) for page in _pages() for block in _blocks(page, "sh")
                for words in _command_lines(block)]


def _parse(words: list[str]) -> argparse.Namespace:
    try:
        return build_parser().parse_args(words)
    except SystemExit as exc:  # the parser's one-line refusal
        raise AssertionError(f"crossdyn {shlex.join(words)}: refused by the parser (exit {exc.code})") from None


def test_documented_commands_parse(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # output folders are judged relative to here
    assert len(DOC_COMMANDS) >= 25
    with pytest.raises(AssertionError, match="refused"):  # the check itself can fail
        _parse(["run", "--no-such-option"])
    registered = experiments()
    for page, words in DOC_COMMANDS:
        args = _parse(words)
        if args.command == "run" and not args.sources:  # the names of --from files are the user's
            unknown = [name for name in args.names if name not in registered]
            assert not unknown, f"{page.relative_to(ROOT)}: crossdyn {shlex.join(words)} names {unknown}"


# --------------------------------------------------------------------------- the built site


def _shared_root(tmp_path_factory) -> Path:
    """A folder every xdist worker of this session sees (the session's own base without xdist)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    """The site built once per session: ``-W --keep-going``, gallery from a fresh short run."""
    root = _shared_root(tmp_path_factory)
    result, html = root / "docs-build.json", root / "docs-site" / "html"
    with open(root / "docs-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the first worker builds; the others wait, then read its result
        if not result.is_file():
            source = root / "docs-source"
            shutil.rmtree(source, ignore_errors=True)
            shutil.copytree(DOCS, source, ignore=shutil.ignore_patterns(*GENERATED))
            env = {k: v for k, v in os.environ.items() if k != "CROSSDYN_DOCS_RESULTS"}  # run the experiments
            done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html",
                                   str(source), str(html)], capture_output=True, text=True, timeout=1200,
                                  env={**env, "MPLBACKEND": "Agg"})
            result.write_text(json.dumps({"returncode": done.returncode, "log": (done.stdout + done.stderr)[-6000:]}))
    built = json.loads(result.read_text())
    assert built["returncode"] == 0, f"the documentation does not build with -W:\n{built['log']}"
    return html


def test_docs_build_with_warnings_as_errors(site):
    assert (site / "index.html").is_file() and (site / "derivations" / "two-link.html").is_file()


class _Tags(HTMLParser):
    """Every start tag's attributes, by tag name."""

    def __init__(self):
        super().__init__()
        self.tags: dict[str, list[dict]] = {}

    def handle_starttag(self, tag, attrs):
        self.tags.setdefault(tag, []).append(dict(attrs))


def _tags(page: Path) -> dict[str, list[dict]]:
    parser = _Tags()
    parser.feed(page.read_text())
    return parser.tags


def test_gallery_has_every_experiment_with_its_plot(site):
    own = {name: exp for name, exp in experiments().items() if exp.run.__module__.startswith("crossdyn.")}
    index = (site / "gallery" / "index.html").read_text()
    for name, exp in own.items():
        page = site / "gallery" / f"{name}.html"
        assert page.is_file(), f"no gallery page for {name}"
        assert f'href="{name}.html"' in index, f"the gallery's index does not link {name}"
        images = [img["src"] for img in _tags(page).get("img", []) if "_images/" in img.get("src", "")]
        assert images, f"{name}'s page shows no plot"
        assert all((page.parent / unquote(src)).resolve().is_file() for src in images), images
        text = page.read_text()
        assert "pass</strong>" in text, f"{name} did not pass in the gallery's run"
        for key in exp.params:
            assert f"<code class=\"docutils literal notranslate\"><span class=\"pre\">{key}</span></code>" in text, \
                f"{name}'s page does not list its parameter {key}"


def _walk(parser: argparse.ArgumentParser, command: str):
    yield command, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, f"{command} {name}")


def test_cli_reference_has_every_command_and_option(site):
    text = (site / "reference" / "cli.html").read_text()
    for command, parser in _walk(build_parser(), "crossdyn"):
        assert f'id="cli-{command.replace(" ", "-").lower()}"' in text, f"no section for {command}"
        for action in parser._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert option in text, f"{command} {option} is missing from the CLI reference"


def test_front_door_is_documented(site):
    import crossdyn

    text = (site / "reference" / "api.html").read_text()
    missing = [name for name in crossdyn.API if f'id="crossdyn.{name}"' not in text]
    assert not missing, missing


def test_mathjax_is_served_from_the_site(site):
    assert (site / "_static" / "mathjax" / "tex-svg.js").stat().st_size > 1_000_000
    for page in site.rglob("*.html"):
        scripts = [s["src"] for s in _tags(page).get("script", []) if "src" in s]
        remote = [s for s in scripts if re.match(r"^[a-z]+:|^//", s)]
        assert not remote, f"{page.relative_to(site)} loads scripts from the network: {remote}"
    derivation = (site / "derivations" / "two-link.html").read_text()
    assert "mathjax/tex-svg.js" in derivation


# --------------------------------------------------------------------------- in a real browser


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("CI"):  # CI installs it (.ci/run); its absence there is a failure, not a skip
        pytest.fail("chromium is not installed (apt-get install chromium)")
    pytest.skip("no chromium on this machine (apt-get install chromium)")


def _browser(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=15000"]
    return subprocess.run([_chromium(), *flags, *args], capture_output=True, text=True, timeout=180)


ERROR_MARK = re.compile(r'<g[^>]*(?:data-mml-node="merror"|fill="red")')


def _math_elements(page: Path) -> int:
    return sum("math" in (tag.get("class") or "").split() for name in ("span", "div")
               for tag in _tags(page).get(name, []))


def _ink(png: Path) -> float:
    """Share of the screenshot's pixels that are not background white."""
    from PIL import Image

    with Image.open(png) as image:
        grey = image.convert("L")
        histogram = grey.histogram()
    return 1.0 - sum(histogram[245:]) / (grey.width * grey.height)


@pytest.mark.parametrize("page", ["index.html", "derivations/two-link.html"])
def test_browser_renders_page_and_math(site, tmp_path, page):
    path = site / page
    url = path.as_uri()
    shot = tmp_path / (page.replace("/", "_") + ".png")
    done = _browser(tmp_path, "--window-size=1280,1600", f"--screenshot={shot}", url)
    assert shot.is_file(), done.stderr[-2000:]
    if keep := os.environ.get("CROSSDYN_SCREENSHOTS"):  # a folder to keep them in (CI: an artifact)
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)
    assert _ink(shot) > 0.02, f"the screenshot of {page} is blank"
    dom = _browser(tmp_path, "--dump-dom", url).stdout
    assert "crossdyn" in dom and "</html>" in dom
    expected = _math_elements(path)
    typeset = dom.count("<mjx-container")
    assert typeset >= expected, f"{page}: {typeset} of {expected} math elements typeset"
    # MathJax's marks of TeX it could not read: an merror node, or an undefined macro drawn in red.
    # (TeX it cannot even parse stays untypeset, which the count above catches.)
    errors = ERROR_MARK.findall(dom)
    assert not errors, f"{page}: MathJax reports {len(errors)} TeX errors"
    if page.startswith("derivations"):
        assert expected >= 20 and dom.count("<svg") >= expected  # SVG output, glyphs drawn as paths
