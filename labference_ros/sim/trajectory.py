"""JointTrajectoryController-style following of arm trajectories in sim time.

Replace semantics: a new trajectory replaces the old one from its start time
(header stamp; zero means "now"). Between the commanded position at the start
and each point, targets are interpolated linearly over time_from_start; after
the last point the arm holds it. A trajectory is validated whole before it
replaces anything, so a bad one leaves the robot holding still.
"""
from __future__ import annotations

import json
import struct

from labference_ros.sim.command_validation import validate_arm_command

CHECKPOINT_MAGIC = b"LFCKPT1"


def _duration_s(d) -> float:
    return d.sec + d.nanosec * 1e-9


class TrajectoryFollower:
    def __init__(self):
        self.clear()

    def clear(self) -> None:
        self.start_t: float | None = None
        self.times: list[float] = []
        self.points: list[tuple[float, ...]] = []
        self.origin: tuple[float, ...] = ()

    def replace(self, msg, now: float, current_targets: tuple[float, ...]) -> str:
        """Adopt ``msg`` (trajectory_msgs/JointTrajectory). Returns '' or the reason it was rejected."""
        if not msg.points:
            return "empty trajectory (no points)"
        times, points = [], []
        for i, pt in enumerate(msg.points):
            check, ordered = validate_arm_command(msg.joint_names, pt.positions)
            if not check.ok:
                return f"point {i}: {check.reason}"
            t = _duration_s(pt.time_from_start)
            if times and t <= times[-1]:
                return f"point {i}: time_from_start must increase"
            if t < 0:
                return f"point {i}: negative time_from_start"
            times.append(t)
            points.append(ordered)
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        self.start_t = stamp if stamp > 0 else now
        self.times, self.points, self.origin = times, points, tuple(current_targets)
        return ""

    def target_at(self, t: float) -> tuple[float, ...] | None:
        if self.start_t is None:
            return None
        rel = t - self.start_t
        if rel <= 0:
            return self.origin if self.times[0] > 0 else self.points[0]
        prev_t, prev_q = 0.0, self.origin
        for ti, qi in zip(self.times, self.points):
            if rel <= ti:
                if ti <= prev_t:
                    return qi
                a = (rel - prev_t) / (ti - prev_t)
                b = 1 - a
                # Seven floats: plain arithmetic, the same IEEE operations as numpy's, without its overhead.
                return tuple(b * p + a * q for p, q in zip(prev_q, qi))
            prev_t, prev_q = ti, qi
        return self.points[-1]

    # checkpoints ------------------------------------------------------------
    def to_json(self) -> str:
        return json.dumps({"start_t": self.start_t, "times": self.times, "points": self.points,
                           "origin": self.origin})

    @classmethod
    def from_json(cls, text: str) -> "TrajectoryFollower":
        data = json.loads(text)
        f = cls()
        f.start_t, f.times = data["start_t"], list(data["times"])
        f.points = [tuple(p) for p in data["points"]]
        f.origin = tuple(data["origin"])
        return f


def pack_checkpoint(sim_state: bytes, follower: TrajectoryFollower) -> bytes:
    return CHECKPOINT_MAGIC + struct.pack("<Q", len(sim_state)) + sim_state + follower.to_json().encode()


def unpack_checkpoint(blob: bytes) -> tuple[bytes, TrajectoryFollower]:
    if not blob.startswith(CHECKPOINT_MAGIC) or len(blob) < len(CHECKPOINT_MAGIC) + 8:
        raise ValueError("not a lab_sim checkpoint")
    (n,) = struct.unpack_from("<Q", blob, len(CHECKPOINT_MAGIC))
    start = len(CHECKPOINT_MAGIC) + 8
    if start + n > len(blob):
        raise ValueError("truncated lab_sim checkpoint")
    return blob[start:start + n], TrajectoryFollower.from_json(blob[start + n:].decode())
