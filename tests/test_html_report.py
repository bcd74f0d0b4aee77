"""OUT/index.html: escaped, self-contained, and shown by a real headless browser.

The browser test needs Debian's ``chromium``; .ci/run installs it, and under
CI=true a machine without it is a failure, not a skip (as the video test does
for EGL).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time

import numpy as np
import pytest

from crossdyn.experiments.core.baseline import DEFAULT_TOLERANCE, Comparison, Drift
from crossdyn.experiments.core.html_report import render
from crossdyn.experiments.core.registry import get
from crossdyn.experiments.core.runner import Outcome, run_experiments

HOSTILE = '<script>alert("x")</script> & |error|'


def _render(outcomes, metrics=None) -> str:
    return render(outcomes, metrics or {}, command=f"crossdyn run --set note={HOSTILE}", seed=7, short=True,
                  overrides={"note": HOSTILE}, started=time.time(), versions_={"python": "3", "mujoco": "4"})


def test_every_text_is_escaped():
    outcome = Outcome(HOSTILE, HOSTILE, HOSTILE, False, 1.0, error=HOSTILE, files=[f"{HOSTILE}/plot.png"])
    page = _render([outcome], {HOSTILE: {"label": HOSTILE, "value": 2.0}})
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert page.count("<table") == 3  # run info, summary, headline metrics: no table markup smuggled in
    # The plot's link is URL-quoted, so no raw quote or angle bracket reaches an attribute.
    assert re.search(r'<img src="[^"<>]*plot\.png"', page)


def test_summary_shows_expected_measured_result_and_baseline_change():
    drift = Comparison("b", drifted=[Drift("settle_s", 1.0, 1.05, DEFAULT_TOLERANCE)])
    page = _render([Outcome("a", "exp a", "meas a", True, 1.0, baseline=Comparison("a")),
                    Outcome("b", "exp b", "meas b", True, 2.0, baseline=drift)])
    rows = re.findall(r"<tr><td><a href=\"#(\w)\">.*?</tr>", page)
    assert rows == ["a", "b"]
    assert "no drift" in page and "1 drifted" in page and "settle_s: baseline 1, now 1.05, change +5 %" in page
    assert "crossdyn run: 1/2 as expected" in page  # a drift counts against the run
    assert "seed</td><td>7" in page


def _browser_or_skip() -> str:
    binary = shutil.which("chromium")
    if binary is None:
        message = "chromium unavailable: apt-get install chromium"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return binary


def _chromium(binary: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
                          capture_output=True, text=True, timeout=120)


def test_index_html_in_a_headless_browser(tmp_path):
    """A short run's report: the DOM has the summary rows and the plot, the screenshot shows both."""
    binary = _browser_or_skip()
    out = tmp_path / "results"
    run_experiments([get("two-link-lagrange"), get("rnea-two-link-arm")], out, short=True)
    url = (out / "index.html").as_uri()

    dom = _chromium(binary, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    body = re.search(r'<table id="summary">(.*?)</table>', dom.stdout, flags=re.S).group(1)
    assert re.findall(r'<a href="#([\w-]+)">', body) == ["two-link-lagrange", "rnea-two-link-arm"]
    assert body.count('class="pass"') == 2
    images = re.findall(r'<img src="([^"]+)"', dom.stdout)
    assert images == ["two-link-lagrange/term_errors.png", "rnea-two-link-arm/term_errors.png"], images
    assert all((out / src).is_file() for src in images)  # relative links to files beside index.html

    shot = tmp_path / "shot.png"
    taken = _chromium(binary, f"--screenshot={shot}", "--window-size=1200,1800", url)
    assert taken.returncode == 0 and shot.is_file(), taken.stderr[-2000:]
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)[..., :3]  # RGB in [0, 1]
    assert pixels.std() > 0.05  # not a blank page
    # The table's pass cells (#d9f2d9) and the plot's markers (matplotlib's first colour, #1f77b4)
    # are on screen: the page rendered with its styles and loaded the PNG over file://.
    for colour, least in (((0xd9, 0xf2, 0xd9), 500), ((0x1f, 0x77, 0xb4), 200)):
        close = np.all(np.abs(pixels * 255 - np.array(colour)) < 12, axis=-1)
        assert close.sum() > least, f"colour {colour} covers {close.sum()} pixels"


def test_plots_videos_and_other_files_are_linked_relative():
    files = ["jump/states.png", "jump/jump.mp4", "errata/errata.md"]
    page = _render([Outcome("jump", "up", "0.2 m", True, 1.0, files=files)])
    assert '<img src="jump/states.png"' in page and '<video controls src="jump/jump.mp4"' in page
    assert '<a href="errata/errata.md">' in page
    assert "http://" not in page and "https://" not in page  # nothing to fetch from a network
