"""When the episode runner ends an episode, from what the graph reports (rclpy-free).

setup: sim (lab_sim resets), operator (a real cell: the world estimator's scene check
is asked until it matches), rehearsal (lab_sim resets, the scene check must confirm it
from the sensors, and a shadow referee scores beside the referee)."""
from __future__ import annotations

import json
import os

from labference_ros.core.failures import LATE_ROWS

# sim: lab_sim resets the scene; operator: a person sets it up and the world estimator's
# scene check says when it matches; rehearsal: lab_sim resets it, the scene check must then
# confirm it from the sensors, and a shadow referee scores each episode from lab_sim's state.
SETUP_MODES = ("sim", "operator", "rehearsal")
REHEARSAL_COMPLETION_GRACE_S = 5.0  # sim seconds the second referee has to see a completion too

# Topics whose publisher and subscriber must both be in the graph before the first episode.
CONNECTED_TOPICS = ("/evaluator/world_state", "/balance/wrench", "/balance/reading", "/joint_states",
                    "/cameras/front/image_raw", "/panda_arm_controller/joint_trajectory",
                    "/panda_gripper/command", "/policy/receipts", "/referee/receipts")
# A real cell has no simulated load cell: the balance itself publishes readings.
OPERATOR_CONNECTED_TOPICS = tuple(t for t in CONNECTED_TOPICS if t != "/balance/wrench")
# The rehearsal's sensing: marker detections, and the simulated load cell behind the serial line.
REHEARSAL_CONNECTED_TOPICS = CONNECTED_TOPICS + ("/markers/poses", "/sim_balance/reading", "/shadow/world_state")


def connected_topics(setup: str, has_balance: bool, step_mode: str, shadow: bool = True) -> tuple[str, ...]:
    """The topics to see connected before the first episode, for this set-up (`shadow`: a
    rehearsal's shadow referee reads the simulator's own world state)."""
    topics = {"operator": OPERATOR_CONNECTED_TOPICS, "rehearsal": REHEARSAL_CONNECTED_TOPICS}.get(
        setup, CONNECTED_TOPICS)
    if not shadow:
        topics = tuple(t for t in topics if t != "/shadow/world_state")
    if not has_balance:  # no balance, no load cell
        topics = tuple(t for t in topics if not t.startswith("/balance/"))
    if step_mode == "sync":  # the bridge takes the joint state from lab_sim's advance answers
        topics = tuple(t for t in topics if t != "/joint_states")
    return topics


def late_rows_event(text: str) -> tuple[str, dict]:
    """A /arm/late_rows message (JSON, nodes/franka_arm_bridge.py) as (episode id, the tested
    system's event for its attempt); raises ValueError, KeyError or TypeError when unreadable."""
    data = json.loads(text)
    return str(data["episode_id"]), {"kind": LATE_ROWS, "cause": str(data["cause"]), "t": data.get("t"),
                                     "row_age_s": data.get("row_age_s")}


def stop_reason() -> str:
    """Why the launcher is stopping the graph ('' when it did not say: another launcher,
    a plain SIGTERM), e.g. "node lab_sim left the graph: it died (exit code 3)"."""
    path = os.environ.get("LABFERENCE_STOP_REASON_FILE")
    if not path:
        return ""
    try:
        with open(path, encoding="utf-8") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return ""
    return lines[0] if lines else ""


class EpisodeWatch:
    """What the graph reports, keyed by episode id so a late message of an earlier
    episode never ends the current one, and the finish reason it implies."""

    def __init__(self, rehearsal: bool, deadline_s: float):
        self.rehearsal, self.deadline_s = rehearsal, deadline_s
        self.complete: set[str] = set()
        self.shadow_complete: set[str] = set()
        self.first_complete_t: dict[str, float] = {}  # sim time one of the two referees saw completion
        self.bridge: dict[str, tuple[str, str]] = {}  # the bridge's (state, reason)
        self.hardware_faults: dict[str, str] = {}  # a real arm's faults (nodes/franka_arm_bridge.py)
        self.sim_start: float | None = None  # sim time at the current episode's reset

    def note_bridge_status(self, text: str) -> None:
        """/policy_bridge/status; ValueError, KeyError or TypeError when unreadable."""
        data = json.loads(text)
        self.bridge[str(data["episode_id"])] = (str(data["state"]), str(data.get("reason", "")))

    def note_hardware_fault(self, text: str) -> None:
        """/hardware/fault; ValueError, KeyError or TypeError when unreadable."""
        data = json.loads(text)
        self.hardware_faults.setdefault(str(data["episode_id"]), str(data["cause"]))

    def finish_reason(self, attempt, sim_now: float | None) -> str | None:
        """Why the episode should end now by what was reported and the sim-time deadline,
        else None (the graph's own health is the node's to check). A validity error is
        put on ``attempt``."""
        eid = attempt.episode_id
        if self.rehearsal:
            # Both referees score the episode to its end: it ends when both saw it complete, or
            # REHEARSAL_COMPLETION_GRACE_S after the first did (the other disagrees: on record).
            if eid in self.complete and eid in self.shadow_complete:
                return "completed"
            if (eid in self.complete or eid in self.shadow_complete) and sim_now is not None:
                first = self.first_complete_t.setdefault(eid, sim_now)
                if sim_now - first >= REHEARSAL_COMPLETION_GRACE_S:
                    return "completed"
        elif eid in self.complete:
            return "completed"
        if eid in self.hardware_faults:
            attempt.fail(f"hardware_fault: {self.hardware_faults[eid]}")
            return "error"
        state, why = self.bridge.get(eid, ("running", ""))
        if state == "done":
            return "policy_stop"
        if state == "error":
            attempt.fail(f"policy_bridge reported an error: {why}")
            return "error"
        if sim_now is not None:
            if self.sim_start is None or sim_now < self.sim_start:
                self.sim_start = sim_now  # no clock at reset, or a sim that restarts its clock
            if sim_now - self.sim_start >= self.deadline_s:
                return "deadline"
        return None
