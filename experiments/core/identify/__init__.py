"""Is the MJCF the robot?  Identification from a robot's logs, and a check that keeps asking.

- :mod:`.logs`: the log format (CSV or ``.npz``), read against a model's own names;
- :mod:`.noise`: each reading's noise, stated or estimated only where the log can tell;
- :mod:`.spec`: what ``--fit`` may change, as ``mujoco.sysid`` parameters;
- :mod:`.fit`: re-anchored rollouts and ``mujoco.sysid``'s least squares and intervals;
- :mod:`.power`: what a log can tell of a model's own parameters: their tests and power;
- :mod:`.outputs`: the sentences, ``identified.json``, ``identified.xml``, plots and page;
- :mod:`.check_model`: does a model reproduce a log (``crossdyn check model``): pass, fail or inconclusive;
- :mod:`.self_test`: the check's false alarms and power, and identify's coverage, counted on simulated repeats
  of the user's own logs (``--self-test``);
- :mod:`.excite`: commands to log, and what such a log would leave undetermined;
- :mod:`.record`: logs made in simulation, as a robot's logger would write them (``crossdyn record``).
"""

from typing import Any

__all__ = ["sysid"]


class _Sysid:
    """``mujoco.sysid``, imported on first use: it brings SciPy's signal and stats (about a second), which a
    command that identifies nothing (``crossdyn list``, any run) should not wait for."""

    def __getattr__(self, name: str) -> Any:
        from mujoco import sysid as module  # late: SciPy's signal and stats, ~1 s (see the class)

        return getattr(module, name)


sysid: Any = _Sysid()
