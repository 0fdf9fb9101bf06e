"""Demonstration steps from one episode bag: (observation k, applied command k,
observation k+1) on the primary camera's frame clock.

The applied arm command of step k is where the active JointTrajectory (JTC
replace semantics, sim/trajectory.py) commands the arm at the end of the step;
without a trajectory the arm holds its measured position. The gripper command
is the last one sent before the step ends.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from labference_ros.msgconv import stamp_to_s
from labference_ros.sim.backend import ARM_JOINT_NAMES
from labference_ros.sim.trajectory import TrajectoryFollower

from .completeness import describe_gaps, gaps
from .topics import camera_of
from .videos import image_array, stream_fps

PRIMARY_CAMERA = "front"
ACTION_UNITS = {"arm_joint_positions": "rad (absolute joint targets, panda_joint1..7)",
                "gripper_width": "m (commanded distance between the fingers)",
                "gripper_grasp": "bool (grasp with force rather than move to width)"}


@dataclass
class EpisodeSteps:
    times: np.ndarray                       # [K] observation times (primary camera stamps)
    images: dict[str, np.ndarray]           # camera -> [K,H,W,3] uint8
    image_stamps: dict[str, np.ndarray]     # camera -> [K] stamp of the frame used
    joint_names: list[str]
    joint_positions: np.ndarray             # [K,J]
    arm_action: np.ndarray                  # [K-1,7]
    gripper_width: np.ndarray               # [K-1]
    gripper_grasp: np.ndarray               # [K-1] bool
    control_mask: np.ndarray                # [K-1] 1 = tested system in control
    frame_rate_hz: float
    policy_control_hz: float = 0.0
    first_delivery_t: float | None = None
    notes: list[str] = field(default_factory=list)


def _latest_before(stamps: list[float], t: float) -> int:
    """Index of the last stamp <= t (or 0)."""
    return max(bisect.bisect_right(stamps, t + 1e-9) - 1, 0)


def read_steps(reader, end_t: float | None, environment_intervals=()) -> EpisodeSteps:
    cams: dict[str, list] = {}
    joints, trajs, grips, chunks, deliveries = [], [], [], [], []
    for topic, _t, msg in reader.messages(decoder="rosbags"):
        if camera_of(topic):
            cams.setdefault(camera_of(topic), []).append((stamp_to_s(msg.header.stamp), msg))
        elif topic == "/joint_states":
            joints.append((stamp_to_s(msg.header.stamp), list(msg.name), np.asarray(msg.position, float)))
        elif topic.endswith("/joint_trajectory"):
            trajs.append((stamp_to_s(msg.header.stamp), msg))
        elif topic == "/panda_gripper/command":
            grips.append((stamp_to_s(msg.header.stamp), msg))
        elif topic == "/policy/action_chunks":
            chunks.append(msg)
        elif topic == "/policy/receipts" and msg.kind == "observation" and msg.status == "delivered":
            deliveries.append(stamp_to_s(msg.header.stamp))
    if PRIMARY_CAMERA not in cams or not joints:
        raise ValueError("the bag has no front camera frames or no joint states")
    for items in (*cams.values(), joints, trajs, grips):
        items.sort(key=lambda x: x[0])
    if end_t is not None:
        cams = {c: [x for x in v if x[0] <= end_t + 1e-9] for c, v in cams.items()}
    times, filled, period = _frame_clock([t for t, _ in cams[PRIMARY_CAMERA]])
    images, image_stamps = {}, {}
    for cam, items in sorted(cams.items()):
        stamps = [t for t, _ in items]
        idx = [_latest_before(stamps, t) for t in times]
        images[cam] = np.stack([image_array(items[i][1]) for i in idx])
        image_stamps[cam] = np.array([stamps[i] for i in idx])
    j_stamps = [t for t, _, _ in joints]
    names = joints[0][1]
    q = np.stack([joints[_latest_before(j_stamps, t)][2] for t in times])

    arm_idx = [names.index(n) for n in ARM_JOINT_NAMES]
    arm = _arm_commands(times, trajs, j_stamps, joints, arm_idx)
    g_stamps = [t for t, _ in grips]
    width, grasp = [], []
    for k in range(len(times) - 1):
        i = bisect.bisect_left(g_stamps, times[k + 1] - 1e-9) - 1  # sent before the step ends
        width.append(grips[i][1].width if i >= 0 else np.nan)
        grasp.append(bool(grips[i][1].grasp) if i >= 0 else False)

    first = min(deliveries) if deliveries else None
    mask = np.array([_in_control(t, first, end_t, environment_intervals) for t in times[:-1]], dtype=np.uint8)
    hz = [c.control_frequency_hz for c in chunks if c.control_frequency_hz > 0]
    return EpisodeSteps(times=times, images=images, image_stamps=image_stamps, joint_names=names,
                        joint_positions=q, arm_action=arm, gripper_width=np.array(width, float),
                        gripper_grasp=np.array(grasp, bool), control_mask=mask,
                        frame_rate_hz=stream_fps(list(times)), policy_control_hz=float(hz[0]) if hz else 0.0,
                        first_delivery_t=first,
                        notes=_held_image_notes(times, filled, image_stamps, period) + _gap_notes(getattr(reader, "custom", {})))


def _gap_notes(custom: dict) -> list[str]:
    """The recorder's own tally of what it missed (recording/completeness.py), per topic."""
    found = gaps(custom)
    return [f"recorder gaps (messages the recorder did not write): {describe_gaps(found)}"] if found else []


def _frame_clock(stamps: list[float]) -> tuple[np.ndarray, list[float], float]:
    """The primary camera's frame times, with a step put back wherever the bag lacks
    frames between two it has (a gap of 1.5 periods or more): a recorder short of CPU
    can lose a camera sample, and a dataset on a fixed frame rate (LeRobot) needs every
    step. Such a step keeps the last earlier image, as image_stamps show. The period is
    the smallest gap: frames are stamped in sim time, and a lost one only widens a gap."""
    gaps = [b - a for a, b in zip(stamps, stamps[1:]) if b - a > 1e-9]
    if not gaps:
        return np.array(stamps), [], 0.0
    period = min(gaps)
    times: list[float] = []
    filled: list[float] = []
    for t in stamps:
        if times and t - times[-1] >= 1.5 * period:
            missing = int(round((t - times[-1]) / period)) - 1
            start = times[-1]
            added = [start + k * period for k in range(1, missing + 1)]
            times += added
            filled += added
        times.append(t)
    return np.array(times), filled, period


def _held_image_notes(times: np.ndarray, filled: list[float], image_stamps: dict[str, np.ndarray],
                      period: float) -> list[str]:
    """One note per camera whose image at some step is older than that step's frame tick."""
    notes = []
    if filled:
        at = ", ".join(f"{t:.3f}" for t in filled[:5]) + (", ..." if len(filled) > 5 else "")
        notes.append(f"{len(filled)} {PRIMARY_CAMERA} camera frame(s) missing from the bag (t = {at} s): "
                     "each such step keeps the last earlier image")
    if period <= 0.0:
        return notes
    for cam, stamps in sorted(image_stamps.items()):
        if cam == PRIMARY_CAMERA:
            continue
        held = int(np.sum(times - stamps > 0.5 * period))
        if held:
            notes.append(f"{held} step(s) of the {cam} camera hold an earlier image (frames missing from the bag)")
    return notes


def _arm_commands(times, trajs, j_stamps, joints, arm_idx) -> np.ndarray:
    follower = TrajectoryFollower()
    t_stamps = [t for t, _ in trajs]
    adopted = -1
    out = []
    for k in range(len(times) - 1):
        t_end = times[k + 1]
        i = bisect.bisect_right(t_stamps, t_end + 1e-9) - 1
        while adopted < i:  # adopt every trajectory sent up to the end of this step
            adopted += 1
            ts, msg = trajs[adopted]
            held = joints[_latest_before(j_stamps, ts)][2][arm_idx]
            if follower.replace(msg, ts, tuple(float(x) for x in held)):
                follower.clear()  # rejected by the controller: the arm holds
        target = follower.target_at(t_end)
        if target is None:
            target = joints[_latest_before(j_stamps, times[k])][2][arm_idx]
        out.append(np.asarray(target, float))
    return np.stack(out) if out else np.zeros((0, len(arm_idx)))


def _in_control(t: float, first_delivery: float | None, end_t: float | None, intervals) -> int:
    """Environment-controlled: before the first delivered observation (settling,
    readiness), after the finish, and any declared environment interval."""
    if first_delivery is None or t < first_delivery - 1e-9:
        return 0
    if end_t is not None and t >= end_t - 1e-9:
        return 0
    return 0 if any(a - 1e-9 <= t < b for a, b in intervals) else 1
