"""The episode loop at the policy boundary: one pure class that the
policy_bridge node, the Oracle's matched continuations and the tests' closed
loops all drive, so the protocol they run cannot differ.

Per handoff the driver calls, in order:
  stop_reason(t)     -- the deadline, or a finished system held for stop_hold_s
  observe(...)       -- the whitelist observation at t (numbered, with history)
  acknowledged(ev)   -- the referee's echo of that delivery (its evidence version)
  reports()          -- after the system acted: its explicit reports, bound to
                        the delivery they answered, opportunity "unstated"
  take_chunk(chunk)  -- the ActionSpec check with the current robot state, then
                        the safety envelope (core.safety) where the driver gives one
  next_command()     -- one row per hold interval (None: hold), until the queue
                        is empty or newer evidence invalidates it

Evidence versions reach the loop from the referee (note_evidence) however the
driver hears of them: topics in the graph, returned records in a continuation.
Transport, clocks and threads stay with the driver; nothing here imports rclpy
or a simulator."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from labference_ros.core.action_conversion import ActionConversion
from labference_ros.core.action_spec import REJECTED, STALE, ChunkVerdict
from labference_ros.core.observation import (OBSERVATION_HISTORY_STEPS, PolicyObservation, delivery_receipt,
                                            project_observation)
from labference_ros.core.operations import Operation
from labference_ros.core.rejections import RejectionRun
from labference_ros.core.safety import PANDA_MAX_ACCELERATION, smooth_stopping_rows, stopping_rows

EPS = 1e-6
# A system that says it is finished is held this long (sim s) before the episode
# stops, so the task's terminal dwell can still be observed (graph and continuations).
STOP_HOLD_S = 4.0
UNSTATED = -1  # a report's opportunity: the referee binds it by its evidence version


@dataclass(frozen=True)
class Command:
    """One hold interval: an arm row (None: hold the last target) and a new
    gripper target when it changed."""

    row: np.ndarray | None
    gripper: float | None = None


@dataclass(frozen=True)
class Report:
    """An explicit operation report for the referee's separately scored track."""

    operation: dict
    opportunity_id: int
    evidence_version: int
    source: str


# A pause's stop that the envelope refuses in its gentle form is tried smooth at these fractions
# of the robot's acceleration limits, in turn (the envelope says which it passes).
SMOOTH_STOP_FRACTIONS = (0.5, 0.75)


class EpisodeLoop:
    def __init__(self, system, conversion: ActionConversion, *, episode_id: str, instance,
                 stop_hold_s: float = STOP_HOLD_S, deadline_s: float = 0.0,
                 record: Callable[[dict], None] | None = None, wall_clock: Callable[[], float] | None = None,
                 envelope: Callable[[np.ndarray, np.ndarray, np.ndarray | None, float], list[str]] | None = None):
        self.system = system
        # core.safety: (accepted rows, setpoint they continue, its velocity or None at rest,
        # hold interval) -> reasons to refuse them.
        self.envelope = envelope
        self.setpoint: np.ndarray | None = None  # the last arm target commanded
        self.setpoint_velocity: np.ndarray | None = None
        self.conversion = conversion
        self.spec = conversion.reference
        self.episode_id = episode_id
        self.instance = instance
        self.stop_hold_s = float(stop_hold_s)
        self.deadline_s = float(deadline_s)  # <= 0: no deadline of the loop's own
        self._record = record or (lambda entry: None)
        # Wall-clock seconds (e.g. time.time) stamped on receipts and chunks, so the
        # report can place a sim instant on the wall clock (response latency).
        self._wall_clock = wall_clock
        self.latest_ev = 0  # newest evidence version the referee announced
        self.obs_ev = 0  # evidence version of the pending observation
        self.chunk_ev = 0  # evidence version the queued rows answer
        self.k = 0
        self.obs: PolicyObservation | None = None
        self._receipt: dict = {}  # delivery_receipt(self.obs): it hashes the whole request, so once
        self.obs_id = ""
        self.queue: list = []
        self.gripper: float | None = None
        self.history: list[dict] = []
        self.finished_at: float | None = None
        self._chunk_obs_id = ""  # the observation the queued rows answer
        # A system that declares a limit (remote servers: a profile parameter) ends the
        # episode as invalid after that many consecutive rejected chunks (core.rejections).
        self.rejections = RejectionRun(getattr(system, "rejected_chunks_limit", None))

    # evidence ---------------------------------------------------------------
    def note_evidence(self, version: int, observation_id: str = "") -> None:
        """The referee announced an evidence version (an echo or an opened opportunity)."""
        if version <= self.latest_ev:
            return
        self.latest_ev = version
        if observation_id and observation_id == self.obs_id:
            self.obs_ev = version  # the handoff our own pending observation carried
            if self._chunk_obs_id == observation_id:
                # The echo came after the answer (no echo wait): the queued rows answer
                # exactly this delivery, so they are not outdated by it.
                self.chunk_ev = max(self.chunk_ev, version)

    def acknowledged(self, evidence_version: int) -> None:
        """The referee's receipt of the pending delivery."""
        self.obs_ev = max(self.obs_ev, int(evidence_version))

    # the handoff ------------------------------------------------------------
    def stop_reason(self, t: float) -> str | None:
        if self.deadline_s > 0 and t >= self.deadline_s - EPS:
            return "deadline"
        if getattr(self.system, "finished", False):
            self.finished_at = t if self.finished_at is None else self.finished_at
            if t - self.finished_at >= self.stop_hold_s - EPS:
                return "policy_stop"
        return None

    def observe(self, t: float, images: Mapping, image_stamps: Mapping, joint_state: Mapping,
                camera_calibration: Mapping) -> PolicyObservation:
        """The policy observation at t (whitelist projection); its receipt is recorded."""
        self.k += 1
        obs = project_observation({
            "observation_id": f"{self.episode_id}:obs{self.k:05d}", "episode_id": self.episode_id,
            "sim_time": t, "evidence_version": self.latest_ev, "images": dict(images),
            "image_stamps": dict(image_stamps), "joint_state": dict(joint_state), "joint_setpoint": self.setpoint,
            "instruction": self.instance.public_instruction(), "camera_calibration": dict(camera_calibration),
            "history": self.history[-OBSERVATION_HISTORY_STEPS:]}, cameras=tuple(images))
        self.obs, self.obs_id, self.obs_ev = obs, obs.observation_id, self.latest_ev
        self._receipt = delivery_receipt(obs)
        self._record({"record": "receipt", **self.receipt(), **self._wall()})
        return obs

    def _wall(self) -> dict:
        return {"wall_time": self._wall_clock()} if self._wall_clock is not None else {}

    def receipt(self) -> dict:
        """The pending observation's delivery receipt (a copy)."""
        return dict(self._receipt)

    def reports(self, t: float, source: str) -> list[Report]:
        """The system's explicit reports since it last acted. The loop, not the
        system, knows which delivery the inference answered; the opportunity is
        left to the referee (bound by evidence version)."""
        out = []
        for r in self.system.drain_reports():
            op = r.get("operation")
            try:
                operation = Operation.from_dict(op).to_dict() if isinstance(op, dict) else None
            except (KeyError, TypeError, ValueError):
                operation = None
            if operation is None:
                # Not an operation (e.g. the agent's state report): it stays in the
                # system's own records; the report track scores operations only.
                self._record({"record": "report_not_sent", "t": t, "reason": "no_operation", **r})
                continue
            report = Report(operation, UNSTATED, int(self.obs_ev), str(r.get("source", source)))
            out.append(report)
            self._record({"record": "report_sent", "t": t, **r, "sent_operation": operation,
                          "sent_opportunity_id": report.opportunity_id,
                          "sent_evidence_version": report.evidence_version})
        return out

    def take_chunk(self, chunk, t: float, inference_wall_s: float | None = None) -> ChunkVerdict:
        """Check the returned chunk against the ActionSpec and the robot state it
        was computed from; accepted rows are queued, anything else holds."""
        obs = self.obs
        current = np.concatenate([obs.joint_positions, [obs.gripper_width]])
        verdict = self.conversion.validate(chunk, self.obs_ev, self.latest_ev, current)
        if verdict.accepted and self.envelope is not None:
            start = current if self.setpoint is None else self.setpoint
            outside = self.envelope(verdict.applied, start, self.setpoint_velocity,
                                    1.0 / self.spec.control_frequency_hz)
            if outside:  # nothing of it reaches the arm
                verdict = replace(verdict, status=REJECTED, applied=None,
                                  reasons=verdict.reasons + [f"safety envelope: {r}" for r in outside])
        entry = {"record": "chunk", "chunk_id": self.chunk_id, "observation_id": self.obs_id, "t": t}
        if inference_wall_s is not None:
            entry["inference_wall_s"] = inference_wall_s
        timing = getattr(self.system, "last_timing", None)  # a remote system's round trip and server timing
        if timing is not None:
            entry["latency"] = timing
        self._record({**entry, **verdict.record(), **self._wall()})
        self.history.append({"observation_id": self.obs_id, "chunk_status": verdict.status,
                             "rows": 0 if verdict.applied is None else len(verdict.applied)})
        # A refused chunk holds the arm one interval; a stale one runs nothing at all
        # (newer evidence is already there: observe again at once).
        self.queue = list(verdict.applied) if verdict.accepted else ([] if verdict.status == STALE else [None])
        self.chunk_ev = self.obs_ev
        self._chunk_obs_id = self.obs_id
        self.rejections.note(verdict.status == REJECTED, verdict.reasons, t)  # may raise EvaluationValidityError
        return verdict

    def pause(self, t: float, reason: str) -> np.ndarray | None:
        """An operator's pause: the rows not yet sent are dropped and the setpoint is
        brought to rest (core.safety.stopping_rows, from its last commanded velocity).
        Returns the arm targets that stop it, one interval apart after the last one
        commanded (None before any was commanded)."""
        entry = {"record": "paused", "t": t, "reason": reason, "rows_dropped": len(self.queue)}
        self._drop_rows()
        if self.setpoint is None:
            self._record(entry)
            return None
        stop = self._checked_stop(entry)
        self._record(entry)
        self.setpoint, self.setpoint_velocity = stop[-1], None
        return stop

    def _checked_stop(self, entry: dict) -> np.ndarray:
        """The stopping rows, through the envelope where the bridge has one. The gentle stop
        (constant deceleration at half the Panda's limits) when it passes; else a smooth stop
        (core.safety.smooth_stopping_rows) within the envelope's robot's own limits, at half of
        them, then harder (a gentle stop can run on into a fixture where the chunk braked
        harder, or overshoot a robot's interpolated limits): the first the envelope passes,
        named in `entry["stop"]`. If none passes, the first smooth stop (within the robot's
        limits where the envelope knows them), and `stop_outside` says why."""
        interval = 1.0 / self.spec.control_frequency_hz
        gentle = stopping_rows(self.setpoint, self.setpoint_velocity, interval)
        if self.envelope is None or len(gentle) < 2:
            return gentle
        width = self.obs.gripper_width if self.obs is not None else None

        def outside(rows):
            checked = rows if width is None else np.column_stack([rows, np.full(len(rows), width)])
            return self.envelope(checked, self.setpoint, self.setpoint_velocity, interval)

        if not outside(gentle):
            return gentle
        limits = getattr(self.envelope, "stop_acceleration", None) or PANDA_MAX_ACCELERATION
        first = None
        for fraction in SMOOTH_STOP_FRACTIONS:
            stop = smooth_stopping_rows(self.setpoint, self.setpoint_velocity, interval, limits, fraction)
            reasons = outside(stop)
            if not reasons:
                entry["stop"] = f"smooth at {fraction:g} of the limits"
                return stop
            first = first or (stop, fraction, reasons)
        stop, fraction, reasons = first
        entry["stop"] = f"smooth at {fraction:g} of the limits"
        entry["stop_outside"] = reasons
        return stop

    def drop_queue(self, t: float, reason: str) -> None:
        """Rows that must not run (a chunk answered while paused)."""
        self._record({"record": "dropped", "t": t, "reason": reason, "rows_dropped": len(self.queue)})
        self._drop_rows()

    def _drop_rows(self) -> None:
        """The queued rows will not run; the history the system sees next says how many
        of its last chunk's rows did not (a new dict: past observations keep theirs)."""
        dropped = sum(row is not None for row in self.queue)
        if dropped and self.history:
            self.history[-1] = {**self.history[-1], "rows_dropped": dropped}
        self.queue = []

    def resume(self, t: float, reason: str) -> None:
        """Motion may continue: the next handoff observes afresh."""
        self._record({"record": "resumed", "t": t, "reason": reason})

    @property
    def chunk_id(self) -> str:
        return f"{self.obs_id}:chunk"

    def next_command(self, t: float) -> Command | None:
        """The next hold interval's command; None when the queue is done (observe next).
        Rows computed from older evidence than the referee's latest are dropped."""
        if self.latest_ev > self.chunk_ev and self.queue:
            self._record({"record": "invalidated", "t": t, "rows_dropped": len(self.queue),
                          "chunk_evidence_version": self.chunk_ev, "latest": self.latest_ev})
            self._drop_rows()
        if not self.queue:
            return None
        row = self.queue.pop(0)
        if row is None:
            self.setpoint_velocity = None  # holding: the setpoint rests
            return Command(None)
        arm = np.asarray(row[:self.spec.gripper_index], float)
        if self.setpoint is not None:
            self.setpoint_velocity = (arm - self.setpoint) * self.spec.control_frequency_hz
        self.setpoint = arm
        g = float(row[self.spec.gripper_index])
        changed = g != self.gripper
        self.gripper = g
        return Command(row, g if changed else None)
