"""The episode runner's side toward the operator: the /episode_runner/confirm service
(`labference operator confirm`) that lets a waiting episode start, /episode_runner/pause
(`labference operator pause|resume`), passed on to the policy bridge for the running
episode, and the episode's operator.jsonl, which also takes the hand's homing and
releases and the arm's homing and retreat from /operator/events
(nodes/franka_gripper_bridge.py, nodes/franka_arm_bridge.py). The rules are in
episodes/operator.py."""
from __future__ import annotations

from pathlib import Path

from labference.srv import OperatorConfirm, SetPause
from rclpy.qos import DurabilityPolicy, QoSProfile
from std_msgs.msg import String

from labference_ros.episodes.operator import (ARM_EVENT, CONFIRM_REFUSED, CONFIRMED, INTERVENTION_FAILED, PAUSE,
                                              RESUME, ConfirmGate, OperatorLog, device_event)
from labference_ros.episodes.run_progress import say
from labference_ros.nodes.stepwise import Until

CONFIRM_SERVICE = "/episode_runner/confirm"
PAUSE_SERVICE = "/episode_runner/pause"
OPERATOR_EVENTS = "/operator/events"
ARM_BRIDGE = "franka_arm_bridge"  # its node name
# Latched: the hand is homed before the session, possibly before the runner is up.
OPERATOR_EVENTS_QOS = QoSProfile(depth=50, durability=DurabilityPolicy.TRANSIENT_LOCAL)


class OperatorDesk:
    def __init__(self, runner, confirm_mode: str, served: bool):
        """`runner`: the episode runner (its clock, current episode and run log);
        `served`: offer the service and read the events (not in plain simulation)."""
        self.runner = runner
        self.gate = ConfirmGate(confirm_mode)
        self.log = OperatorLog(None)  # the current episode's operator.jsonl
        self.events: list[tuple[str, str, dict]] = []  # the hand's and arm's events not yet written
        self.released: set[str] = set()  # episodes whose hand the bridge opened (or tried to)
        self.homed: dict[str, str] = {}  # episode id ('' the session) -> the arm's homing verdict
        self.served = served
        self.running: str | None = None  # the episode between its start and its finish
        if served:
            runner.create_service(OperatorConfirm, CONFIRM_SERVICE, self.on_confirm)
            runner.create_subscription(String, OPERATOR_EVENTS, self.on_event, OPERATOR_EVENTS_QOS)
            runner.create_service(SetPause, PAUSE_SERVICE, self.on_pause)
            self.bridge_pause = runner.create_client(SetPause, "/policy_bridge/pause")

    def open_episode(self, path: Path | None) -> None:
        self.log.close()
        self.log = OperatorLog(path)

    def on_confirm(self, request, response):
        ok, response.message, response.episode_id = self.gate.answer(request.episode_id, request.operator_name)
        response.success = ok
        current = self.runner.current
        eid = response.episode_id or (current.episode_id if current is not None else "")
        if ok:
            self.note(CONFIRMED, by="operator", operator=request.operator_name)
        elif current is not None and self.log.path is not None:
            self.note(CONFIRM_REFUSED, operator=request.operator_name, message=response.message)
        say(f"{eid or 'operator'}: {response.message}")
        return response

    def on_pause(self, request, response):
        """Passed on to the policy bridge (which stops the arm and keeps `paused`/`resumed` in its
        records); noted when asked, and again should the bridge refuse or not be there."""
        eid = self.running
        if eid is None or (request.episode_id and request.episode_id != eid):
            response.success = False
            response.message = (f"episode {eid} is running, not {request.episode_id}" if eid else
                                "no episode is running")
            return response
        kind = PAUSE if request.pause else RESUME
        reason = request.reason or "operator"
        self.note(kind, reason=reason)
        if not self.bridge_pause.service_is_ready():
            self.note(INTERVENTION_FAILED, action=kind, message="no policy bridge")
            response.success, response.message = False, "/policy_bridge/pause is not available"
            return response
        future = self.bridge_pause.call_async(SetPause.Request(episode_id=eid, pause=request.pause, reason=reason))
        future.add_done_callback(lambda f: self._bridge_answered(f, eid, kind))
        response.success, response.message = True, f"episode {eid}: {kind} asked of the policy bridge"
        say(f"{eid}: {kind} ({reason})")
        return response

    def _bridge_answered(self, future, eid: str, kind: str) -> None:
        answer = future.result() if future.exception() is None else None
        if answer is not None and answer.success:
            return
        message = answer.message if answer is not None else str(future.exception())
        say(f"{eid}: the policy bridge refused the {kind}: {message}")
        if self.running == eid:
            self.note(INTERVENTION_FAILED, action=kind, message=message)

    def note(self, kind: str, **fields) -> None:
        """An entry in the current episode's operator.jsonl; a write that fails is logged (a full
        disk fails the episode's other records too, which the runner reports)."""
        try:
            self.log.note(kind, self.runner.sim_now, **fields)
        except OSError as exc:
            self.runner.get_logger().error(f"cannot write {exc.filename}: {exc.strerror or exc}")

    def on_event(self, msg) -> None:
        try:
            eid, kind, fields = device_event(msg.data)
        except (ValueError, KeyError, TypeError):
            self.runner.get_logger().warning(f"unreadable {OPERATOR_EVENTS}: {msg.data!r}")
            return
        self.events.append((eid, kind, fields))
        if kind == ARM_EVENT and fields["action"] == "home":
            self.homed[eid] = fields["detail"]
            if fields["detail"].startswith("done"):
                say(f"{eid or 'session'}: the arm is at home")
            else:
                say(f"{eid or 'session'}: the arm was not homed ({fields['detail']}): home it before the next "
                    "episode")
        elif fields["action"] == "release":
            self.released.add(eid)
        self.write_events()

    def hand_present(self) -> bool:
        """A hand's bridge in the graph (it says when it released): the runner waits for it. The
        arm's bridge says its homing on the same topic, and is no hand."""
        return self.served and any(info.node_name != ARM_BRIDGE
                                   for info in self.runner.get_publishers_info_by_topic(OPERATOR_EVENTS))

    def is_released(self, episode_id: str):
        return True if episode_id in self.released else None

    def wait_homed(self, episode_id: str, timeout_s: float):
        """The runner's wait for the arm's homing after `episode_id` ('' before the session); one not
        reported in time is noted as the arm's, with why."""
        if (yield Until(lambda: self.homed.get(episode_id), timeout_s)) is None:
            detail = f"not reported within {timeout_s:g} s: is franka_arm_bridge running with arm_homing?"
            say(f"{episode_id or 'session'}: the arm's homing was {detail}")
            self.events.append((episode_id, ARM_EVENT, {"action": "home", "detail": detail}))
            self.homed[episode_id] = detail
            self.write_events()

    def write_events(self) -> None:
        """The hand's and the arm's events into operator.jsonl: the episode's, or the run's for the session's
        own (the homing), once the run directory exists."""
        run_log = self.runner.run.log
        if run_log is None:
            return
        for eid, kind, fields in self.events:
            log = OperatorLog((run_log.episode_dir(eid) if eid else run_log.run_dir) / "operator.jsonl")
            try:
                log.note(kind, self.runner.sim_now, episode_id=eid, **fields)
            except OSError as exc:
                self.runner.get_logger().error(f"cannot write {exc.filename}: {exc.strerror or exc}")
            log.close()
        self.events.clear()
