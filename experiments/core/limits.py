"""Every limit crossdyn puts on what it is asked to do, one value per meaning, each with its reason.

A limit refuses a request that cannot be meant (a typo's extra zeros) before time or memory is spent on it.
Requests that mean the same thing meet the same number; counts that cost differently have two names.
"""

from __future__ import annotations

__all__ = ["SEED_MAX", "STATES_MAX", "RUNS_MAX", "DURATION_MAX", "BODIES_MAX", "WORKERS_MAX", "TIMEOUT_MAX",
           "ATOL_MAX", "RTOL_MAX", "RANGE_MAX", "EPS_MIN", "EPS_MAX", "WINDOW_MIN", "WINDOW_MAX", "LOG_ROWS_MIN",
           "COMMAND_DELAY_MAX", "ADDED_DELAY_MAX", "REPEATS_MAX"]

# --- counts
# Seeds: NumPy's generators take any non-negative integer; 2**32 - 1 keeps seeds the size every other tool (and
# a CSV column) reads without surprise.
SEED_MAX = 2**32 - 1
# Random states of one check (``--samples``): they stream through in chunks (bounded memory), so the cap only
# bounds the time.
STATES_MAX = 1_000_000_000
# Runs of one tune (its samples, trials or grid cells): about a CPU-day at ~1 s a run, each a row of the table kept
# in memory and on disk; a bigger tune is refused before anything is allocated (split it over --out folders).
RUNS_MAX = 100_000
# Simulated repeats of a log in a self-test (``--self-test``): each is a whole check (half a second for a small
# arm's 3 s log, tens for a quadruped's), so 10 000 is already hours; 0 of 10 000 bounds a rate below 0.04 %.
REPEATS_MAX = 10_000
# Worker processes: far above any machine's cores, low enough that a typo is not a fork bomb.
WORKERS_MAX = 512

# --- sizes and durations
# Simulated seconds of one run or log (``simulate``, ``simulate_batch``, ``record``, an excitation, one run of a
# tune): an hour; at 1 kHz its table is 3.6 million rows, held in memory.
DURATION_MAX = 3600.0
# Bodies of a model crossdyn compiles: MuJoCo's compile time grows with the square of the body count or faster,
# so a model far beyond any robot (tens to hundreds) is refused at once.
BODIES_MAX = 10_000
# Rows of a robot's log, at least: a rollout window and the noise estimate (a second difference) need several.
LOG_ROWS_MIN = 20
# An identification's re-anchored window, s: a few steps of any model, and far past where a rollout of an unstable
# robot still says anything.
WINDOW_MIN, WINDOW_MAX = 0.005, 60.0
# A time limit (``--timeout``), s: a week; beyond it a typo, not a limit.
TIMEOUT_MAX = 7 * 24 * 3600.0

# --- numbers a check or a design takes
# Absolute tolerance, in the quantity's units: far above any physical quantity a check compares; beyond it a
# tolerance passes anything.
ATOL_MAX = 1e6
# Relative tolerance: 1 already accepts an answer off by 100 %.
RTOL_MAX = 1.0
# Largest bound of a sampled range (rad, m, rad/s, rad/s^2): squares of velocities stay far from overflow
# (1e6^2 = 1e12) and MuJoCo's "huge value" warning (1e10).
RANGE_MAX = 1e5
# A finite-difference step (rad, m, rad/s or a control's unit): beyond 0.1 the difference mixes in curvature, not a
# slope; a step cut so that no constraint is made or broken stops at 1e-12, below which round-off (1e-16 |qacc| /
# 1e-12 = 1e-4 of the scale) swamps the slope, and a constraint still changing is at its boundary.
EPS_MIN, EPS_MAX = 1e-12, 0.1
# A command's delay identification may find, s: far beyond any robot's bus, a bound the optimizer needs.
COMMAND_DELAY_MAX = 0.2
# A delay added to a loop to measure its margin, control periods: a second at 1 kHz, past any loop's delay margin.
ADDED_DELAY_MAX = 1000
