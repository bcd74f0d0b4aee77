"""Rotations: quaternions, matrices, cross-product matrices and Z-Y-X Euler angles.

The one home of these conversions for every layer (``analytic``, ``controllers``
and ``experiments`` import them from here).  Quaternions are ``[w, x, y, z]``,
MuJoCo's order; every function takes a single value or a batch along the leading
axes.
"""

from __future__ import annotations

import numpy as np

__all__ = ["skew", "quat_to_matrix", "matrix_to_quat", "euler_zyx", "euler_rates", "pitch"]


def skew(v) -> np.ndarray:
    """The cross-product matrix ``v^`` with ``v^ u = v x u``; ``(..., 3) -> (..., 3, 3)``."""
    v = np.asarray(v, dtype=float)
    out = np.zeros(v.shape + (3,))
    out[..., 0, 1], out[..., 0, 2] = -v[..., 2], v[..., 1]
    out[..., 1, 0], out[..., 1, 2] = v[..., 2], -v[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -v[..., 1], v[..., 0]
    return out


def quat_to_matrix(quat) -> np.ndarray:
    """Rotation matrices of quaternions ``[w, x, y, z]`` (normalized first); ``(..., 4) -> (..., 3, 3)``."""
    quat = np.asarray(quat, dtype=float)
    # One quaternion is normalized by its 2-norm (a dot product), a batch row by row.
    norm = np.linalg.norm(quat) if quat.ndim == 1 else np.linalg.norm(quat, axis=-1, keepdims=True)
    w, x, y, z = np.moveaxis(quat / norm, -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


def matrix_to_quat(R) -> np.ndarray:
    """Quaternion ``[w, x, y, z]`` of one rotation matrix ``(3, 3)``, sign chosen so ``w >= 0``."""
    R = np.asarray(R, dtype=float)
    trace = np.trace(R)
    if trace > 0:
        s = 2.0 * np.sqrt(1.0 + trace)
        q = np.array([0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s])
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        q = np.zeros(4)
        q[0] = (R[k, j] - R[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (R[j, i] + R[i, j]) / s
        q[1 + k] = (R[k, i] + R[i, k]) / s
    return q if q[0] >= 0 else -q


def euler_zyx(quat):
    """``(roll, pitch, yaw)`` of unit quaternions ``(..., 4)``, Z-Y-X convention, rad.

    A single quaternion gives three floats; a batch gives three arrays ``(...)``.
    """
    quat = np.asarray(quat, dtype=float)
    w, x, y, z = quat[..., 0], quat[..., 1], quat[..., 2], quat[..., 3]
    roll = np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    pitch_ = np.arcsin(np.clip(2 * (w * y - z * x), -1.0, 1.0))
    yaw = np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return roll[()], pitch_[()], yaw[()]


def euler_rates(roll, pitch, gyro):
    """Z-Y-X Euler angle rates from the body-frame angular velocity (gyro) ``(..., 3)``, rad/s."""
    gyro = np.asarray(gyro, dtype=float)
    wx, wy, wz = gyro[..., 0], gyro[..., 1], gyro[..., 2]
    sr, cr = np.sin(roll), np.cos(roll)
    cp, tp = np.cos(pitch), np.tan(pitch)
    return (
        (wx + sr * tp * wy + cr * tp * wz)[()],
        (cr * wy - sr * wz)[()],
        ((sr * wy + cr * wz) / cp)[()],
    )


def pitch(quat) -> float:
    """Pitch of one unit quaternion: rotation about +y (positive leaning forward), rad.

    The Z-Y-X pitch of :func:`euler_zyx`, in plain floats: the closed loop calls it
    at every control step.
    """
    w, x, y, z = (float(c) for c in quat)
    s = 2.0 * (w * y - z * x)
    return float(np.arcsin(1.0 if s > 1.0 else -1.0 if s < -1.0 else s))
