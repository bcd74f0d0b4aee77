"""A --states CSV may start with a header row naming its coordinates."""

from __future__ import annotations

import numpy as np

from crossdyn.experiments.core.cli import main
from crossdyn.experiments.core.cli.check import load_states


def test_a_header_row_is_read_as_names_and_the_numbers_as_states(tmp_path):
    rows = np.random.default_rng(0).normal(size=(3, 6))
    plain, named = tmp_path / "plain.csv", tmp_path / "named.csv"
    np.savetxt(plain, rows, delimiter=",")
    named.write_text("# two-link states\nq1, q2, qd1, qd2, qdd1, qdd2\n" + plain.read_text())
    for got, want in zip(load_states(str(named), 2, 2), load_states(str(plain), 2, 2), strict=True):
        np.testing.assert_array_equal(got, want)
    assert load_states(str(named), 2, 2)[0].shape == (3, 2)


def test_check_takes_a_states_file_with_a_header(tmp_path, capsys):
    named = tmp_path / "named.csv"
    named.write_text("q1,q2,qd1,qd2,qdd1,qdd2\n0.1,0.2,0.3,0.4,0.5,0.6\n-0.3,1.0,0,0,2.0,0\n")
    assert main(["check", "two-link", "--states", str(named), "--out", str(tmp_path / "out")]) == 0
    assert "over 2 states" in capsys.readouterr().out
