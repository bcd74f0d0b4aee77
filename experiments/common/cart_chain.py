"""LQR balance of poles on a cart, from MuJoCo's linearization alone: what the cart-pole and the double pendulum share.

For any model whose ``qpos`` is ``[x, angles...]`` (m, rad) with an ``upright`` keyframe and one cart
actuator: :func:`design` the LQR, run a tilted start (:func:`balance`) and a cart step (:func:`step`),
:func:`judge` the slowest mode's measured decay against the design; :func:`lqr_batch` runs many in two batches.
"""

from __future__ import annotations

import mujoco
import numpy as np

from ..core import figures
from ..core.baseline import Tolerance
from ..core.design_check import compare_to_design
from ..core.loop.batch import simulate_batch
from ..core.loop.simulate import simulate
from ..core.loop.trace import Trace
from ..core.margins import LoopSetup, write_margins
from ..core.models import load_model
from ..core.registry import Param, Verdict
from ..core.regulator import Regulator, Switch, measured_decay, regulator
from ..core.runner import Context

__all__ = ["CONTROL_DT", "DECAY_TOL", "design", "balance", "step", "judge", "plot", "settling_time", "weight_params",
           "model_param", "lqr_params", "lqr_experiment", "lqr_batch", "loop_setup", "margins", "EXPECTED",
           "TOLERANCES"]

CONTROL_DT = 0.002  # s: the model's step; a sampled loop moves the poles by O(dt |lambda|), here < 1 %
DECAY_TOL = 0.10  # the measured slowest decay within 10 % of the designed pole's real part
SETTLED_ANGLE = np.radians(0.5)  # rad
SETTLED_X = 0.01  # m, of the cart's target
EXPECTED = f"balanced and tracked; slowest mode decays within {100 * DECAY_TOL:g} % of the designed pole"
# The settling times' baseline tolerances, s: ten 2 ms control periods (a settling time is read where the
# sampled trace enters its band, which a change of round-off can move by a few samples).
TOLERANCES: dict[str, float | Tolerance] = {"settling_time_s": 0.02, "step_settling_time_s": 0.02}


def design(weights: dict, mjcf: str | mujoco.MjModel, names: dict) -> Regulator:
    """The LQR at the upright keyframe for ``weights`` by name (one per state, positions then velocities,
    then ``r``; missing ones: the defaults ``names``, in that order) on ``mjcf`` (a name, path or model).

    Raises:
      ParameterError: no stabilizing design for the weights.
    """
    w = {**names, **weights}
    *q, r = w.values()
    return regulator(_compiled(mjcf), q, r, keyframe="upright")


def _compiled(mjcf: str | mujoco.MjModel) -> mujoco.MjModel:
    """The model itself, or compiled from a name or path (a run compiles it once, not per simulation)."""
    return mjcf if isinstance(mjcf, mujoco.MjModel) else load_model(mjcf)


def settling_time(trace: Trace, x_target: float = 0.0, start: float = 0.0) -> float:
    """From ``start`` until every pole angle stays within 0.5 deg and the cart within 1 cm of its target, s."""
    ok = (np.abs(trace.qpos[:, 1:]) < SETTLED_ANGLE).all(axis=1) & (np.abs(trace.qpos[:, 0] - x_target) < SETTLED_X)
    bad = np.flatnonzero((trace.t >= start) & ~ok)
    if bad.size == 0:
        return 0.0
    return float(trace.t[bad[-1] + 1] - start) if bad[-1] + 1 < trace.t.size else float("inf")


def balance(reg: Regulator, angle: float, duration: float, mjcf: str | mujoco.MjModel) -> Trace:
    """Balance from the (lowest) pole tilted by ``angle`` rad, the others aligned with it, the cart at rest at 0."""
    model = _compiled(mjcf)
    qpos = np.zeros(model.nq)
    qpos[1] = angle
    return simulate(model, reg, duration, keyframe="upright", qpos=qpos, control_dt=CONTROL_DT)


def step(reg: Regulator, distance: float, duration: float, mjcf: str | mujoco.MjModel, at: float = 0.5) -> Trace:
    """Upright at rest; at ``at`` s the cart's target jumps to ``distance`` m along the rail."""
    return simulate(_compiled(mjcf), _step_switch(reg, distance, at), duration, keyframe="upright",
                    control_dt=CONTROL_DT)


def _step_switch(reg: Regulator, distance: float, at: float) -> Switch:
    """The regulator switching at ``at`` s to hold the cart at ``distance`` m."""
    target = np.zeros(reg.linearization.qpos.size)
    target[0] = distance
    return Switch(reg, reg.to(target), at)


def judge(reg: Regulator, balanced: Trace, stepped: Trace, distance: float, at: float = 0.5) -> tuple[Verdict, dict]:
    """Balanced, tracked, and the slowest mode decaying at its designed rate."""
    designed = reg.slowest.real
    measured = measured_decay(balanced, reg, start=1.0)
    error = abs(measured - designed) / abs(designed)
    settle = settling_time(balanced)
    step_settle = settling_time(stepped, distance, start=at)
    overshoot = max(0.0, float((stepped.qpos[:, 0].max() - distance) / distance * 100)) if distance else 0.0
    # The peak force asked (what a --constraint bounds); trace.ctrl is MuJoCo's, clamped to the motor's 20 N.
    force = np.abs(np.concatenate([balanced.command[:, 0], stepped.command[:, 0]]))
    passed = bool(np.isfinite(settle) and np.isfinite(step_settle) and error <= DECAY_TOL)
    measured_text = (f"slowest mode {measured:.3f} 1/s vs designed {designed:.3f} ({100 * error:.1f} %); settled in "
                     f"{settle:.2f} s, step in {step_settle:.2f} s")
    for label, trace in (("balance", balanced), ("step", stepped)):
        if trace.saturation():
            measured_text += f"; {label} {trace.saturation()}"
    against = compare_to_design(balanced, reg).sentence  # "" when every excited mode decays as designed
    if against:
        measured_text += f"; {against}"
    return Verdict(passed, measured_text), {
        "decay_rate_measured": measured, "decay_rate_designed": designed, "decay_error_pct": 100 * error,
        "settling_time_s": settle, "step_settling_time_s": step_settle, "step_overshoot_pct": overshoot,
        "max_force_N": float(force.max()), "effort_N2s": float(np.sum(balanced.ctrl[:, 0] ** 2) * CONTROL_DT),
        "poles_real": sorted(float(p.real) for p in reg.design.poles),
        "saturated_steps": int(balanced.saturated.sum() + stepped.saturated.sum()),
        "gain": reg.design.K.ravel().tolist(),
    }


def plot(reg: Regulator, balanced: Trace, stepped: Trace, title: str):
    """States of both runs, and the slowest mode's projection against its designed decay (log scale)."""
    fig, (a1, a2, a3) = figures.figure(1, 3, width=14.0, height=3.4)
    names = reg.linearization.state_names[1 : reg.linearization.nv]
    for trace, style, label in ((balanced, "-", "balance"), (stepped, "--", "step")):
        for k, name in enumerate(names, start=1):
            a1.plot(trace.t, np.degrees(trace.qpos[:, k]), style, label=f"{label}: {name}")
        a2.plot(trace.t, trace.qpos[:, 0], style, label=f"{label}: cart")
    a1.set(xlabel="t (s)", ylabel="angle (deg)")
    a2.set(xlabel="t (s)", ylabel="cart x (m)")
    lin = reg.linearization
    values, left = np.linalg.eig((lin.A - lin.B @ reg.design.K).T)
    w = left[:, int(np.argmin(np.abs(values - reg.slowest)))]
    z = np.abs(np.array([lin.deviation(q, v) for q, v in zip(balanced.qpos, balanced.qvel, strict=False)]) @ w.conj())
    a3.semilogy(balanced.t, z, label="|w^H x| measured")
    a3.semilogy(balanced.t, z[0] * np.exp(reg.slowest.real * balanced.t), "k--",
                label=f"designed e^({reg.slowest.real:.2f} t)")
    a3.set(xlabel="t (s)", ylabel="slowest mode")
    for ax in (a1, a2, a3):
        ax.legend(fontsize=7)
    fig.suptitle(title)
    return fig


def model_param(default: str) -> Param:
    """``--set mjcf=PATH`` (or ``--mjcf``): a cart carrying a chain of poles, ``qpos = [x, angles...]``, with an
    ``upright`` keyframe and one cart actuator; checked to load when set."""
    return Param(default, "the model: a built-in name or an MJCF path (qpos [x, angles...], an 'upright' keyframe)",
                 check=load_model)


def weight_params(weights: dict, states: list[str]) -> dict[str, Param]:
    """``--set`` parameters of the LQR weights: one per state (``states``: what each weighs, with its unit), then r."""
    out = {name: Param(value, f"LQR weight on {what}", 0.0, 1e6)
           for (name, value), what in zip(list(weights.items())[:-1], states, strict=False)}
    out["r"] = Param(weights["r"], "LQR weight on the cart force, 1/N^2 (> 0)", 1e-6, 1e6)
    return out


def lqr_params(model: str, weights: dict, states: list[str], initial_angle: Param) -> dict[str, Param]:
    """An LQR experiment's ``--set`` parameters: the weights (:func:`weight_params`), the first pole's
    ``initial_angle_deg``, the cart's ``step_m`` and the model (:func:`model_param`, default ``model``)."""
    return {**weight_params(weights, states), "initial_angle_deg": initial_angle,
            "step_m": Param(0.5, "cart step along the rail, m", -1.5, 1.5), "mjcf": model_param(model)}


def lqr_experiment(ctx: Context, weights: dict, title: str) -> dict:
    """One LQR run's metrics: the design for ``ctx.params``' weights (``weights``: names and defaults, as
    :func:`design` takes them), balanced from a tilt, stepped, judged; ``title`` heads ``states.png``."""
    mjcf = load_model(ctx.params["mjcf"])  # compiled once for the design and both runs
    reg = design({k: ctx.params[k] for k in weights}, mjcf, weights)
    duration = 6.0 if ctx.short else 8.0
    balanced = balance(reg, np.radians(ctx.params["initial_angle_deg"]), duration, mjcf)
    stepped = step(reg, ctx.params["step_m"], duration, mjcf)
    verdict, metrics = judge(reg, balanced, stepped, ctx.params["step_m"])
    if ctx.plots:  # a sweep's runs draw nothing
        ctx.savefig(plot(reg, balanced, stepped, f"{title}: {verdict.measured}"), "states.png")
        margins(ctx, reg, mjcf, title)
    return {**verdict.as_metrics(), **metrics}


# Frequencies of the loop measurements, rad/s: 0.3 to 60 (both designs' crossovers are near 12), fewer in short runs.
FREQUENCIES, SHORT_FREQUENCIES = np.geomspace(0.3, 60.0, 30), np.geomspace(1.0, 50.0, 14)


def loop_setup(reg: Regulator, mjcf: mujoco.MjModel, short: bool) -> LoopSetup:
    """The regulator's loop as ``crossdyn margins`` measures it: at the upright keyframe, the cart force broken."""
    return LoopSetup(mjcf, reg, CONTROL_DT, keyframe="upright",
                     frequencies=tuple(SHORT_FREQUENCIES if short else FREQUENCIES))


def margins(ctx: Context, reg: Regulator, mjcf: mujoco.MjModel, title: str) -> None:
    """The loop's margins measured in MuJoCo beside the design's: ``bode.png`` and the table ``loop_margins.md``
    in the experiment's folder (files, not metrics: a sweep measures no loop)."""
    write_margins(ctx, loop_setup(reg, mjcf, ctx.short), f"{title}: loop broken at the cart force")


def lqr_batch(contexts: list[Context], weights: dict) -> list:
    """The metrics (or the exception) of each context's LQR run, as the experiment gives them run alone.

    Runs of one model and length share two batches (``simulate_batch``, bit for bit ``simulate``'s traces):
    every balancing, every cart step.  ``weights`` as in :func:`lqr_experiment`.
    """
    results: list = [None] * len(contexts)
    groups: dict[tuple, list[int]] = {}
    for i, ctx in enumerate(contexts):
        groups.setdefault((ctx.params["mjcf"], ctx.short), []).append(i)
    for (mjcf, short), members in groups.items():
        try:
            model = load_model(mjcf)
        except Exception as exc:
            for i in members:
                results[i] = exc
            continue
        regs = {}
        for i in members:
            try:
                regs[i] = design({k: contexts[i].params[k] for k in weights}, model, weights)
            except Exception as exc:
                results[i] = exc
        ran = list(regs)
        if not ran:
            continue
        duration = 6.0 if short else 8.0
        starts = np.zeros((len(ran), model.nq))
        starts[:, 1] = [np.radians(contexts[i].params["initial_angle_deg"]) for i in ran]
        balanced = simulate_batch(model, [regs[i] for i in ran], duration, keyframe="upright", qpos=starts,
                                  control_dt=CONTROL_DT, nthread=1)
        switches = [_step_switch(regs[i], contexts[i].params["step_m"], 0.5) for i in ran]
        stepped = simulate_batch(model, switches, duration, keyframe="upright", control_dt=CONTROL_DT, nthread=1)
        for j, i in enumerate(ran):
            try:
                verdict, metrics = judge(regs[i], balanced[j], stepped[j], contexts[i].params["step_m"])
                results[i] = {**verdict.as_metrics(), **metrics}
            except Exception as exc:
                results[i] = exc
    return results
