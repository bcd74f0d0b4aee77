"""Test-wide settings: headless plotting, the project root on sys.path."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")
