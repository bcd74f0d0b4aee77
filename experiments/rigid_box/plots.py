"""The rigid box's figures: one ``plot_*`` per experiment, from its frozen result to the PNG paths written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from ...analytic import rigid_box as rb
from ..core import figures
from .free_rotation import FreeRotationResult
from .ground_contact import ContactResult, contact_metrics, contact_predictions
from .integrators import rotation_angle
from .pulled_box import POSE_TOL, PulledResult

__all__ = ["plot_free_rotation", "plot_pulled", "plot_contact"]


def plot_free_rotation(result: FreeRotationResult, out_dir) -> list[Path]:
    """The two plots the lecture draws (world L and omega), the drifts, and the flip, into ``out_dir``."""
    return [figures.save(_plot_momentum_and_velocity(result), out_dir, "momentum_and_velocity.png"),
            figures.save(_plot_drift(result), out_dir, "drift.png"),
            figures.save(_plot_flip(result), out_dir, "flip.png")]


def _plot_momentum_and_velocity(result: FreeRotationResult) -> Figure:
    runs, t = result.trajectories, result.trajectories["reference"].t
    fig, axes = figures.figure(2, 1, width=8.0, height=2.8, sharex=True)
    for name, style in (("lecture", "-"), ("mujoco_rk4", "--")):
        L = rb.angular_momentum(result.params, runs[name].R, runs[name].omega)
        for i, axis in enumerate("xyz"):
            axes[0].plot(t, L[:, i], style, lw=1, label=f"L_{axis} {name}")
            axes[1].plot(t, runs[name].omega[:, i], style, lw=1, label=f"omega_{axis} {name}")
    axes[0].set_ylabel("world L (kg m^2/s)")
    axes[1].set_ylabel("world omega (rad/s)")
    axes[1].set_xlabel("t (s)")
    for ax in axes:
        ax.legend(fontsize=6, ncol=2)
    axes[0].set_title("torque-free box: angular momentum and angular velocity (world frame)")
    return fig


def _plot_drift(result: FreeRotationResult) -> Figure:
    t = result.trajectories["reference"].t
    fig, axes = figures.figure(1, 2, width=11.0, height=3.2)
    floor = 1e-18  # exact zeros cannot be drawn on a log axis
    for name, tr in result.trajectories.items():
        if name == "reference":
            continue
        L = np.linalg.norm(rb.angular_momentum(result.params, tr.R, tr.omega), axis=1)
        E = rb.kinetic_energy(result.params, tr.v, tr.R, tr.omega)
        axes[0].semilogy(t, np.maximum(np.abs(L / L[0] - 1), floor), lw=1, label=name)
        axes[1].semilogy(t, np.maximum(np.abs(E / E[0] - 1), floor), lw=1, label=name)
    axes[0].set_title("relative drift of |L|")
    axes[1].set_title("relative drift of kinetic energy")
    for ax in axes:
        ax.set_xlabel("t (s)")
        ax.legend(fontsize=7)
    return fig


def _plot_flip(result: FreeRotationResult) -> Figure:
    ref, flips = result.trajectories["reference"], result.flip_times
    fig, ax = figures.figure(1, 1, width=8.0, height=3.2)
    for i, axis in enumerate("xyz"):
        ax.plot(ref.t, ref.omega_body[:, i], lw=1.2, label=f"omega_{axis} (body), reference")
    ax.plot(ref.t, result.trajectories["lecture"].omega_body[:, 1], "k:", lw=1, label="omega_y, first-order step")
    for tf in flips:
        ax.axvline(tf, color="0.6", lw=0.6)
    ax.set_xlabel("t (s)")
    ax.set_ylabel("rad/s")
    ax.set_title(f"intermediate-axis (y) flip: omega_y changes sign {len(flips)} times")
    ax.legend(fontsize=7)
    return fig


def plot_pulled(result: PulledResult, out_dir) -> list[Path]:
    """Both cases' motion and case B's pose errors (per-stage force and held xfrc) into ``out_dir``."""
    a, b = result.a, result.b
    ref = b.trajectories["reference"]
    t = ref.t
    fig, axes = figures.figure(2, 2, width=11.0, height=2.8, sharex=True)
    angle = np.unwrap(np.arctan2(ref.R[:, 0, 2], ref.R[:, 2, 2]))  # rotation about y (planar motion)
    axes[0, 0].plot(t, a.trajectories["mujoco_rk4"].c[:, 0], label="A: x, MuJoCo RK4")
    axes[0, 0].plot(t, 0.5 * result.force[0] / a.params.mass * t**2, "k:", label="f t^2 / 2m")
    axes[0, 0].plot(t, ref.c[:, 0], label="B: x, reference")
    axes[0, 0].plot(t, ref.c[:, 2], label="B: z, reference")
    axes[0, 0].set_ylabel("CoM (m)")
    axes[0, 0].legend(fontsize=7)
    axes[0, 1].plot(t, np.degrees(angle), label="B: rotation about y")
    axes[0, 1].plot(t, ref.omega[:, 1], label="B: omega_y (rad/s)")
    axes[0, 1].legend(fontsize=7)
    axes[0, 1].set_title("pulled box B: the point swings like a pendulum about the CoM")
    floor = 1e-18  # exact zeros cannot be drawn on a log axis
    curves = [(name, b.trajectories[name], ref) for name in ("lecture", "rk4", "mujoco_rk4")]
    curves += [(f"MuJoCo RK4, xfrc held, dt {h * 1e3:g} ms", tr, b.held_reference[h]) for h, tr in b.held.items()]
    for label, tr, tr_ref in curves:
        axes[1, 0].semilogy(tr.t, np.maximum(np.abs(tr.c - tr_ref.c).max(axis=1), floor), lw=1, label=label)
        axes[1, 1].semilogy(tr.t, np.maximum(rotation_angle(tr.R, tr_ref.R), floor), lw=1, label=label)
    axes[1, 0].set_ylabel("B: |CoM - reference| (m)")
    axes[1, 1].set_ylabel("B: angle to reference (rad)")
    for ax in axes[1]:
        ax.axhline(POSE_TOL, color="k", ls="--", lw=0.8)
        ax.set_xlabel("t (s)")
        ax.legend(fontsize=6)
    return [figures.save(fig, out_dir, "pulled.png")]


def plot_contact(result: ContactResult, out_dir) -> list[Path]:
    """The drop and slide (with zooms at rest and on the lift), and the penalty's impact force, into ``out_dir``."""
    return [figures.save(_plot_contact_runs(result), out_dir, "contact.png"),
            figures.save(_plot_impact_force(result), out_dir, "impact_force.png")]


def _plot_contact_runs(result: ContactResult) -> Figure:
    half = result.params.half_sizes
    predictions = contact_predictions(result.params, result.slide_speed)
    rest, coulomb = predictions["rest_penetration_m"], predictions["coulomb_slide_distance_m"]
    drops = (("penalty", result.drop.penalty, "-"), ("MuJoCo matched", result.drop.mujoco, "--"),
             ("MuJoCo default solimp", result.drop_default_solimp.mujoco, ":"))
    slides = (("penalty", result.slide.penalty, "-"), ("MuJoCo matched", result.slide.mujoco, "--"))
    fig, axes = figures.figure(3, 2, width=11.0, height=2.6)
    for label, r, style in drops:
        axes[0, 0].plot(r.t, r.c[:, 2] - half[0], style, lw=1.2, label=label)
        axes[0, 1].plot(r.t, r.v[:, 2], style, lw=1.2, label=label)
    axes[0, 0].axhline(-rest, color="k", lw=0.6, ls="--", label="-m g / 4K")
    axes[0, 0].set_ylabel("bottom-face height (m)")
    axes[0, 0].set_title("drop: CoM height minus half thickness")
    axes[0, 1].set_ylabel("vertical speed (m/s)")
    for label, r, style in slides:
        axes[1, 0].plot(r.t, r.c[:, 0], style, lw=1.2, label=label)
        axes[1, 1].plot(r.t, r.v[:, 0], style, lw=1.2, label=label)
    axes[1, 0].axhline(coulomb, color="k", lw=0.6, ls="--", label="v0^2 / 2 mu g")
    axes[1, 0].set_ylabel("slide: x (m)")
    axes[1, 1].set_ylabel("slide: x speed (m/s)")
    # Zooms: the rest penetration (invisible at the drop's scale) and the sliding box's lift.
    for label, r, style in drops:
        late = r.t > 0.5 * result.duration
        axes[2, 0].plot(r.t[late], 1e3 * (r.c[late, 2] - half[0]), style, lw=1.2, label=label)
    axes[2, 0].axhline(-1e3 * rest, color="k", lw=0.6, ls="--", label="-m g / 4K")
    axes[2, 0].set_ylabel("drop, at rest: bottom face (mm)")
    for label, r, style in slides:
        axes[2, 1].plot(r.t, 1e3 * (r.c[:, 2] - r.c[0, 2]), style, lw=1.2, label=label)
    axes[2, 1].set_ylabel("slide: CoM lift (mm)")
    for ax in axes.ravel():
        ax.set_xlabel("t (s)")
        ax.legend(fontsize=7)
    return fig


def _plot_impact_force(result: ContactResult) -> Figure:
    r, p = result.drop, result.params
    t = r.penalty.t
    k0 = int(round(contact_metrics(r.penalty, p.half_sizes)["touchdown_s"] / (t[1] - t[0])))
    window = slice(max(k0 - 10, 0), min(k0 + 400, t.size))
    fig, ax = figures.figure(1, 1, width=8.0, height=3.0)
    ax.plot(t[window], r.penalty_normal_force[window], lw=1.2, label="penalty: sum of corner normal forces")
    ax.axhline(p.body.mass * -p.gravity[2], color="k", lw=0.6, ls="--", label="m g")
    ax.set_xlabel("t (s)")
    ax.set_ylabel("N")
    ax.set_title("impact: normal force of the penalty model")
    ax.legend(fontsize=7)
    return fig
