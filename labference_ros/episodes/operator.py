"""The operator's part of an episode on a real cell (rclpy-free): the confirmation that
hands are clear before the episode starts, and the record of what the operator did.

The episode runner asks the scene check until the scene matches the instance; then,
with confirm=operator, it waits for a person to confirm (the runner's
/episode_runner/confirm service, `labference operator confirm`), and only then starts
the episode. With confirm=auto (simulation, rehearsal) the confirmation is given at
once and recorded as the runner's. Every step the operator takes or is asked for goes
to the episode's operator.jsonl with its times (OperatorLog)."""
from __future__ import annotations

import datetime
import json
import time
from pathlib import Path

from labference_ros.core.linefile import LineFile

CONFIRM_MODES = ("auto", "operator")

# The kinds of operator.jsonl entries (docs/records.md).
SCENE_REFUSED = "scene_check_refused"  # the scene check said what differs (each new answer once)
SCENE_PASSED = "scene_check_passed"  # the scene matches the instance's start (checks: how many asks)
CONFIRM_ASKED = "confirmation_asked"  # the runner waits for the operator's "hands clear"
CONFIRMED = "confirmed"  # the episode may start (by: operator | auto)
CONFIRM_REFUSED = "confirmation_refused"  # a confirmation that came when none was asked for that episode
NOT_CONFIRMED = "not_confirmed"  # no confirmation within the set-up time: the episode did not start
HAND_EVENT = "hand"  # the hand's bridge homed it or opened it at the episode's end (nodes/franka_gripper_bridge.py)
ARM_EVENT = "arm"  # the arm's bridge homed it, or lifted it clear and homed it after an episode (franka_arm_bridge)
PAUSE, RESUME = "pause", "resume"  # the operator stops the arm, or lets the system go on
INTERVENTION_FAILED = "intervention_failed"  # the policy bridge refused a pause or resume, or did not answer
OPERATOR_EVENT_KINDS = (SCENE_REFUSED, SCENE_PASSED, CONFIRM_ASKED, CONFIRMED, CONFIRM_REFUSED, NOT_CONFIRMED,
                        HAND_EVENT, ARM_EVENT, PAUSE, RESUME, INTERVENTION_FAILED)


def utc_text(wall_time: float) -> str:
    return datetime.datetime.fromtimestamp(wall_time, datetime.timezone.utc).isoformat(timespec="milliseconds")


class OperatorLog:
    """One episode's operator.jsonl: each entry its kind, the wall time (`wall_time`, Unix
    seconds, and `utc`), the episode's clock where known (`sim_time`: sim seconds in
    simulation, the nodes' clock on a real cell) and what the step says. An entry is kept
    in memory too (`entries`); the file is opened on the first entry."""

    def __init__(self, path: Path | None, wall_clock=time.time):
        self.path = Path(path) if path is not None else None
        self.wall_clock = wall_clock
        self.entries: list[dict] = []
        self._file: LineFile | None = None

    def note(self, kind: str, sim_time: float | None = None, **fields) -> dict:
        """Append one entry; raises OSError when the file cannot be written (the entry is kept)."""
        if kind not in OPERATOR_EVENT_KINDS:
            raise ValueError(f"unknown operator entry kind {kind!r}")
        wall = float(self.wall_clock())
        entry = {"kind": kind, "wall_time": round(wall, 3), "utc": utc_text(wall), "sim_time": sim_time, **fields}
        self.entries.append(entry)
        if self.path is not None:
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = LineFile(self.path)
            self._file.write_line(json.dumps(entry, sort_keys=True))
        return entry

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class ConfirmGate:
    """The "hands clear" confirmation: which episode waits for one, and the answer a
    confirmation gets. Only an episode whose scene check passed is waiting."""

    def __init__(self, mode: str):
        if mode not in CONFIRM_MODES:
            raise ValueError(f"confirm must be one of {', '.join(CONFIRM_MODES)}, got {mode!r}")
        self.mode = mode
        self.waiting: str | None = None  # the episode that waits for the operator
        self.confirmed: dict[str, str] = {}  # episode id -> who confirmed it

    def ask(self, episode_id: str) -> None:
        """The scene of `episode_id` matches: from now on it waits for the confirmation. One
        given before (a scene that changed after it was confirmed) no longer counts."""
        self.waiting = episode_id
        self.confirmed.pop(episode_id, None)
        if self.mode == "auto":
            self.confirmed[episode_id] = "auto"
            self.waiting = None

    def withdraw(self) -> None:
        """The wait ended without a confirmation (the set-up time ran out, the run stopped)."""
        self.waiting = None

    def answer(self, episode_id: str, operator: str) -> tuple[bool, str, str]:
        """A confirmation from `operator` for `episode_id` ('' for whichever waits):
        (accepted, what to tell the operator, the episode confirmed or waiting)."""
        if self.waiting is None:
            return False, "no episode is waiting for a confirmation (its scene check has not passed yet)", ""
        if episode_id and episode_id != self.waiting:
            return False, f"episode {self.waiting} is waiting, not {episode_id}", self.waiting
        eid, self.waiting = self.waiting, None
        self.confirmed[eid] = operator or "operator"
        return True, f"episode {eid} confirmed: it starts now", eid

    def is_confirmed(self, episode_id: str) -> bool:
        return episode_id in self.confirmed


def hand_event(text: str) -> tuple[str, dict]:
    """A /operator/events message (JSON: `episode_id`, '' for the session, `action`, `detail`)
    as (episode id, the fields of its operator.jsonl entry); ValueError, KeyError or
    TypeError when unreadable."""
    eid, _, fields = device_event(text)
    return eid, fields


def device_event(text: str) -> tuple[str, str, dict]:
    """A /operator/events message as (episode id, its operator.jsonl kind, the entry's fields):
    the hand's (no `device`, or `device` hand) or the arm's (`device` arm: `action` lift or
    home); ValueError, KeyError or TypeError when unreadable."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise TypeError(f"not a JSON object: {text!r}")
    kind = {"hand": HAND_EVENT, "arm": ARM_EVENT}[str(data.get("device", "hand"))]
    return str(data.get("episode_id", "")), kind, {"action": str(data["action"]),
                                                   "detail": str(data.get("detail", ""))}
