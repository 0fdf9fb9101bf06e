"""`agent`: an OpenAI-compatible tool-calling chat model as a tested system.

One episode driver, run from act(): the bridge asks for a chunk per
observation; the driver answers from the running skill's rows, or executes
the next tool call of the model's batch, or asks the model for a new plan.
Protocol bounds (planning rounds, actions per turn, turn deadline) are
profile parameters; a batch halts at its first failure, the robot holds
where it is (Stop) and the failure goes back to the model; the executor
never retries.
"""
from __future__ import annotations

import base64
import json
import pathlib
import threading
import time

import cv2
import numpy as np

from labference_ros.core.observation import PolicyObservation, find_leaks
from labference_ros.core.system import TestedSystem
from labference_ros.perception.vision import BALANCE, STANDARDS, CameraCalibration, estimate_scene
from labference_ros.policies.agent.accounting import ActionRecord, CallRecord, EpisodeAccount, PriceTable
from labference_ros.policies.agent.client import ChatClient, ModelCallFailed, usage_of
from labference_ros.policies.agent.faults import FAULT_MESSAGE, FaultSchedule
from labference_ros.policies.agent.skills import Skills
from labference_ros.policies.agent.tools import JSON_CONTRACT, PHYSICAL, TOOLS, check_call, schema_hash
from labference_ros.skills.motion import PickPlacePlanner, PickPlaceSettings, PlanningError
from labference_ros.skills.plan_replay import PlanCursor, row_held_after_refusal

SYSTEM_PROMPT = (
    "You control a Franka Panda arm next to a laboratory balance. Use the tools to look "
    "(observe, locate), to report and commit, and to act (pick, place, move_to_pose, "
    "open_gripper, close_gripper, wait). The balance display is visible in the 'display' "
    "camera image. Positions are metres in the world frame.")

DEFAULTS = {"agent_url": "http://127.0.0.1:8000/v1", "agent_model": "", "api_key_env": "OPENAI_API_KEY",
            "timeout_s": 60.0, "max_rounds": 6, "max_actions": 24, "turn_deadline_s": 90.0,
            "temperature": 0.0, "max_tokens": 1024, "price_table": {}, "fault": {},
            "record_dir": "", "overload_wait_s": 2.0, "overload_wait_max_s": 10.0,
            "attach_cameras": ["front", "wrist", "display"],
            "max_tokens_field": "max_tokens"}  # newer OpenAI models want "max_completion_tokens"

# Oracle sites the agent takes (capability negotiation, paper 6.3). Assist only:
# the model reads the display and chooses inside one opaque reply, so it has no
# separable state or decision output that a Replace could substitute.
SUPPORT_INTERFACES = {"state": ("assist",), "decision": ("assist",)}
SUPPORT_LABEL = "Evaluator support"


def support_text(site: str, mode: str, payload: dict) -> str:
    """The user message that carries one support to the model."""
    return f"{SUPPORT_LABEL} ({mode}, {site}): {json.dumps(payload, sort_keys=True)}"


def _png_b64(img: np.ndarray) -> str:
    ok, buf = cv2.imencode(".png", cv2.cvtColor(img, cv2.COLOR_RGB2BGR))
    if not ok:
        raise ValueError("PNG encoding failed")
    return base64.b64encode(buf.tobytes()).decode()


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


class AgentSystem(TestedSystem):
    name = "agent"
    # Injectable for tests: the turn deadline and charged times use this clock.
    clock = staticmethod(time.monotonic)
    sleep = staticmethod(time.sleep)

    def __init__(self, spec=None, **params):
        for k, v in DEFAULTS.items():
            params.setdefault(k, v)
        if not params["agent_model"]:
            raise ValueError("agent: agent_model is required")
        super().__init__(spec, **params)
        self.prices = PriceTable.from_params(params["price_table"])  # validates
        FaultSchedule.from_params(params["fault"])  # reject a bad schedule at construction
        self.planner = PickPlacePlanner(PickPlaceSettings(rate_hz=self.spec.control_frequency_hz))
        self.skills = Skills(self.planner, self.spec)
        self.reset("", 0)

    # profile ------------------------------------------------------------------
    def bounds(self) -> dict:
        p = self.params
        return {"max_rounds": int(p["max_rounds"]), "max_actions": int(p["max_actions"]),
                "turn_deadline_s": float(p["turn_deadline_s"]), "executor_retries": 0,
                "batch_halts_on_failure": True, "malformed_plan": "protocol_error_feedback_consumes_round"}

    def profile(self) -> dict:
        prof = super().profile()
        prof["params"].pop("fault", None)  # the schedule is evaluator-side
        prof["agent"] = {"model": self.params["agent_model"], "tool_schema_hash": schema_hash(),
                         "tools": [t["function"]["name"] for t in TOOLS], "bounds": self.bounds(),
                         "price_table": self.params["price_table"],
                         "api_key_env": self.params["api_key_env"]}
        return prof

    # Oracle supports ---------------------------------------------------------------
    def interfaces(self) -> dict:
        return dict(SUPPORT_INTERFACES)

    def supply(self, site: str, mode: str, payload: dict) -> None:
        """Deliver one support (already scope-checked by the referee). It goes out
        with the next model request only; a newer one at the same site replaces
        one not sent yet."""
        if mode not in SUPPORT_INTERFACES.get(site, ()):
            raise ValueError(f"{self.name} does not accept {mode}:{site}")
        with self._handoff:  # the bridge supplies from its own thread while act runs in the worker
            self.supports.pop(site, None)  # the refreshed support keeps delivery order
            self.supports[site] = (mode, dict(payload))

    def _support_messages(self) -> list[dict]:
        """Pending supports as user messages for the request about to go out. They
        join the conversation like any other message (the model's later turns may
        refer to them); each is sent once, and later evidence arrives after it."""
        with self._handoff:
            taken, self.supports = self.supports, {}
        out = []
        for site, (mode, payload) in taken.items():
            text = support_text(site, mode, payload)
            # Scope-checked by the referee: authorized evidence for the leak scan.
            self.support_spans.append(json.dumps(text)[1:-1].encode())
            self._record({"kind": "support", "round": self.rounds, "site": site, "mode": mode,
                          "payload": payload, "text": text})
            out.append({"role": "user", "content": text})
        return out

    # episode ------------------------------------------------------------------
    def reset(self, session_id: str, policy_seed: int) -> None:
        if getattr(self, "turn_start", None) is not None:
            self.end_episode("interrupted")  # the previous episode's record is completed
        super().reset(session_id, policy_seed)
        p = self.params
        self.client = ChatClient(p["agent_url"], p["agent_model"], p["api_key_env"],
                                 float(p["timeout_s"]), float(p["overload_wait_s"]),
                                 float(p["overload_wait_max_s"]), self.clock, self.sleep)
        self.faults = FaultSchedule.from_params(p["fault"])
        self.account = EpisodeAccount()
        self.messages: list[dict] = []
        self.pending: list[tuple[str, str, dict]] = []  # (call id, tool, arguments)
        self.attach: list[dict] = []  # image parts waiting for the next user message
        self.request_bodies: list[bytes] = []
        self.attachment_spans: list[bytes] = []
        self.supports: dict[str, tuple[str, dict]] = {}  # site -> (mode, payload), not sent yet
        self.support_spans: list[bytes] = []  # delivered support texts, as encoded in the bodies
        self.reports: list[dict] = []  # explicit reports/commitments, for the referee
        self.rounds = self.actions = 0
        self.turn_start: float | None = None
        self.cursor: PlanCursor | None = None
        self.running: tuple | None = None  # (call id, record, wall start, sim start)
        self.last_row: np.ndarray | None = None
        self.held_row: np.ndarray | None = None
        self.holding: tuple[str, float] | None = None  # (object, grasp width)
        self.pan_xy: tuple[float, float] | None = None
        self.finished = False
        self.stop_reason: str | None = None  # the runtime is ending the episode
        # A reply without usage: its cost is unknown, so no further request is sent
        # (control protocol: "missing usage still stops spending"); its plan still runs.
        self.usage_unknown = False
        self.call_started: float | None = None  # a model request is out (worker thread)
        # finished vs call_started, the call's charge and the record file, across the
        # worker thread (act) and the runtime's (end_episode); reentrant for _settle.
        self._handoff = threading.RLock()
        self.outcome = ""
        self.turn_elapsed_s: float | None = None  # wall time of the turn, set at its end
        self.final_text = ""
        self._log = None

    def _record(self, entry: dict, closing: bool = False) -> None:
        """Append to agent_<session>.jsonl. Once the episode has ended only _end
        writes (closing=True): whatever the worker thread finishes later was
        accounted by _end (a request still out is its in_flight_at_end call), and
        the closed record is never reopened."""
        if not self.params["record_dir"]:
            return
        with self._handoff:
            if self.finished and not closing:
                return
            if self._log is None:
                d = pathlib.Path(self.params["record_dir"])
                d.mkdir(parents=True, exist_ok=True)
                self._log = open(d / f"agent_{self.session_id or 'episode'}.jsonl", "a", encoding="utf-8")
            self._log.write(json.dumps(entry, sort_keys=True) + "\n")
            self._log.flush()

    # hooks for the graph ---------------------------------------------------------
    def set_output_dir(self, path) -> None:
        """Write this episode's JSONL next to the other episode records."""
        self.params["record_dir"] = str(path)

    def drain_reports(self) -> list[dict]:
        """Explicit reports/commitments made since the last call (for
        /referee/report_operation); each is handed out once."""
        out, self.reports = self.reports, []
        return out

    def stop_dispatch(self, reason: str) -> None:
        """The runtime is ending the episode (called from another thread): no new
        model call or tool dispatch; a request in flight may finish and is charged."""
        self.stop_reason = reason

    def end_episode(self, reason: str = "stopped") -> dict:
        """The runtime ended the episode: close the record, return the summary."""
        self._end(reason)
        return self.episode_summary()

    def _past_deadline(self) -> bool:
        return self.clock() - self.turn_start >= float(self.params["turn_deadline_s"])

    def _end(self, outcome: str) -> None:
        with self._handoff:
            if self.finished:
                return
            self.finished, self.outcome = True, outcome
            in_flight = self.call_started
        self.turn_elapsed_s = 0.0 if self.turn_start is None else self.clock() - self.turn_start
        if in_flight is not None:  # a request still out: charged, its usage unknown
            waited = self.clock() - in_flight
            rec = CallRecord(self.rounds, None, None, waited, waited, None, None, 0, 0.0, 0, None,
                             "in_flight_at_end")
            self.account.calls.append(rec)
            self._record(rec.to_dict(), closing=True)
        if self.running is not None:  # ended by the runtime mid-motion: keep the attempt
            cid, rec, wall0, _ = self.running
            rec.wall_s, rec.moved, rec.error = self.clock() - wall0, True, f"interrupted: {outcome}"
            self.account.actions.append(rec)
            self._record(rec.to_dict(), closing=True)
            self.cursor = self.running = None
        for cid, _, _ in self.pending:  # never dispatched
            self._tool_reply(cid, {"ok": False, "executed": False, "error": f"turn ended: {outcome}"})
        self.pending = []
        self._record(dict(self.episode_summary(), kind="summary"), closing=True)
        self.close()

    def episode_summary(self) -> dict:
        """The episode's summary; its `usage` becomes run.json's `usage`."""
        return {"session_id": self.session_id, "model": self.params["agent_model"],
                "tool_schema_hash": schema_hash(), "bounds": self.bounds(),
                "price_table": self.params["price_table"], "outcome": self.outcome,
                "rounds": self.rounds, "final_text": self.final_text,
                "fault": self.faults.grade(self.account.actions) if self.faults.mode != "none" else None,
                "usage": self.account.usage(self.turn_elapsed_s)}

    def scan_requests(self, secrets, public_text: str = "") -> list:
        """The leak check over every request body sent. Exempt: image
        attachments (authorized pixels), delivered supports (the referee's
        scope check authorized them), the declared tool schema (it names
        every standard), the model's own messages and the names the model
        itself chose (echoed back in tool results); everything else the
        driver wrote must not carry an evaluator-only value."""
        out = []
        for body in self.request_bodies:
            req = json.loads(body)
            spans = list(self.attachment_spans) + list(self.support_spans)
            spans.append(json.dumps(req.get("tools", []), separators=(",", ":")).encode())
            named = set()
            for m in req.get("messages", []):
                if m.get("role") != "assistant":
                    continue
                spans.append(json.dumps(m, separators=(",", ":")).encode())
                for c in m.get("tool_calls") or []:
                    try:
                        args = json.loads(c["function"]["arguments"])
                    except (ValueError, KeyError, TypeError):
                        continue
                    named |= {v for v in _strings(args)}
            for v in named:  # quoted, and as quoted inside a tool result's JSON string
                spans += [json.dumps(v).encode(), json.dumps(json.dumps(v))[1:-1].encode()]
            out += find_leaks(body, secrets, public_text, exempt=spans)
        return out

    def close(self) -> None:
        with self._handoff:
            if self._log is not None:
                self._log.close()
                self._log = None

    # chunks -------------------------------------------------------------------
    def _state_row(self, obs: PolicyObservation) -> np.ndarray:
        row = np.zeros(self.spec.dim)
        row[:7] = obs.joint_positions
        row[self.spec.gripper_index] = (self.holding[1] if self.holding
                                        else min(obs.gripper_width, self.spec.gripper.open_width_m))
        if not self.holding and row[self.spec.gripper_index] < self.spec.gripper.grasp_below_m:
            row[self.spec.gripper_index] = self.spec.gripper.open_width_m
        return row

    def _hold(self, obs, seconds: float = 0.5) -> np.ndarray:
        row = self.last_row if self.last_row is not None else self._state_row(obs)
        n = max(1, min(self.spec.max_chunk_length, int(round(seconds * self.spec.control_frequency_hz))))
        return np.repeat(row[None, :], n, axis=0)

    def _emit(self, chunk: np.ndarray) -> np.ndarray:
        # The row the arm holds if this chunk is refused, and the one it holds once it ran.
        self.held_row, self.last_row = self.last_row, chunk[-1].copy()
        return chunk

    def act(self, obs: PolicyObservation, evaluator=None) -> np.ndarray:
        if self.turn_start is None:
            self.turn_start = self.clock()
            self._open_conversation(obs)
        if not obs.last_chunk_ran and self.held_row is not None:
            self.last_row = row_held_after_refusal(self.held_row, obs)
        if self.cursor is not None:
            self.cursor.follow_observation(obs, self.planner.retime)
            if not self.cursor.done(obs.sim_time):
                return self._emit(self.cursor.chunk(obs.sim_time, self.spec.max_chunk_length))
            self._complete_physical(obs)
        while not self.finished:
            if self.pending:
                chunk = self._dispatch(obs)
                if chunk is not None:
                    return self._emit(chunk)
            else:
                self._plan_round(obs)
        return self._emit(self._hold(obs))

    # conversation -------------------------------------------------------------
    def _state(self, obs: PolicyObservation) -> dict:
        return {"sim_time_s": round(obs.sim_time, 3),
                "joint_positions_rad": [round(float(x), 4) for x in obs.joint_positions],
                "gripper_width_m": round(obs.gripper_width, 4),
                "holding": self.holding[0] if self.holding else None}

    def _open_conversation(self, obs: PolicyObservation) -> None:
        self.messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"Instruction: {obs.instruction}\n"
                                        f"Robot state: {json.dumps(self._state(obs))}\n{JSON_CONTRACT}"}]
        self._instruction = obs.instruction

    def _tool_reply(self, call_id: str, result: dict) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call_id,
                              "content": json.dumps(result, sort_keys=True)})

    def _plan_round(self, obs: PolicyObservation) -> None:
        if self.stop_reason:
            return self._end(self.stop_reason)
        if self.usage_unknown:
            return self._end("usage_unknown")
        if self.rounds >= int(self.params["max_rounds"]):
            return self._end("round_limit")
        if self._past_deadline():
            return self._end("deadline")
        if self.attach:  # images from observe calls, after all tool replies
            self.messages.append({"role": "user", "content": self.attach})
            self.attach = []
        with self._handoff:  # nothing goes out once the runtime has ended the episode
            if self.finished:
                return
            self.rounds += 1
            self.call_started = self.clock()
        # Supports are taken only now, when the request is certain to go out.
        self.messages.extend(self._support_messages())
        request = {"messages": self.messages, "tools": TOOLS, "tool_choice": "auto",
                   self.params["max_tokens_field"]: int(self.params["max_tokens"])}
        if self.params["temperature"] is not None:  # None: leave it to the server
            request["temperature"] = float(self.params["temperature"])
        try:
            reply, timing = self.client.complete(request)
        except ModelCallFailed as e:  # charged with unknown usage, then the episode is invalid
            self.request_bodies += e.timing.bodies  # sent, whoever charges the call
            self._settle(e.timing, None, None, "failed")
            raise
        self.request_bodies += timing.bodies
        msg = reply["choices"][0]["message"]
        calls = msg.get("tool_calls") or []
        late = self._past_deadline()
        parsed, errors = [], []
        for c in calls:
            fn = c.get("function") or {}
            args, err = check_call(fn.get("name", ""), fn.get("arguments", "{}"))
            parsed.append((c.get("id", ""), fn.get("name", ""), args))
            if err:
                errors.append(err)
        outcome = ("after_deadline" if late else "malformed" if errors
                   else "plan" if calls else "final")
        tokens = usage_of(reply)
        if not self._settle(timing, *tokens, outcome):
            return  # the runtime ended the episode meanwhile and charged it as in flight
        self.usage_unknown = self.usage_unknown or None in tokens
        assistant = {"role": "assistant", "content": msg.get("content") or ""}
        if calls:
            assistant["tool_calls"] = calls
        self.messages.append(assistant)
        if late:  # finished in flight: charged above, nothing more is dispatched
            self.pending = parsed
            return self._end("deadline")
        if not calls:
            self.final_text = msg.get("content") or ""
            return self._end("final")
        if errors:
            for cid, _, _ in parsed:
                self._tool_reply(cid, {"ok": False, "executed": False,
                                       "error": "protocol error: " + "; ".join(errors)})
            self.messages.append({"role": "user", "content": (
                "Protocol error: your plan was not executed (" + "; ".join(errors) + ").\n"
                f"Instruction: {self._instruction}\n{JSON_CONTRACT}")})
            return
        self.pending = parsed

    def _settle(self, timing, tokens_in, tokens_out, outcome: str) -> bool:
        """The request is back: account it, in one step with clearing call_started,
        so _end either sees it out (and charges it as in flight) or finds it charged.
        False when the episode had already ended without it (nothing is charged
        twice). The charged time splits into model computation (server-reported),
        communication and the overload retry wait."""
        model_s = timing.model_s
        communication_s = None if model_s is None else timing.elapsed_s - model_s - timing.retry_wait_s
        rec = CallRecord(self.rounds, tokens_in, tokens_out, timing.latency_s, timing.elapsed_s, model_s,
                         communication_s, timing.overload_rejections, timing.retry_wait_s,
                         timing.request_bytes, self.prices.cost(tokens_in, tokens_out), outcome)
        with self._handoff:
            self.call_started = None
            if self.finished:
                return False
            self.account.calls.append(rec)
            self._record(rec.to_dict())
        return True

    # tools --------------------------------------------------------------------
    def _halt(self, obs: PolicyObservation) -> None:
        """First failure: Stop (hold the measured pose), skip the rest of the batch."""
        self.last_row = self._state_row(obs)
        for cid, name, _ in self.pending:
            self._tool_reply(cid, {"ok": False, "executed": False,
                                   "error": "not executed: an earlier call in the batch failed"})
        self.pending = []

    def _dispatch(self, obs: PolicyObservation):
        if self.stop_reason:
            return self._end(self.stop_reason)
        if self._past_deadline():
            return self._end("deadline")
        if self.actions >= int(self.params["max_actions"]):
            return self._end("action_limit")
        cid, name, args = self.pending.pop(0)
        self.actions += 1
        rec = ActionRecord(self.rounds, name, args, ok=False, moved=False, physical=name in PHYSICAL)
        if self.faults.attempt(name, args):  # before any motion; the agent is not told why
            rec.injected_fault, rec.error = True, FAULT_MESSAGE
            return self._fail(cid, rec, obs, FAULT_MESSAGE)
        try:
            result = getattr(self, f"_tool_{name}")(obs, args)
        except (PlanningError, ValueError) as e:
            return self._fail(cid, rec, obs, str(e))
        if isinstance(result, np.ndarray):  # a motion: runs over the next chunks
            self.cursor = PlanCursor(result, obs.sim_time, self.spec.hold_interval_s)
            self.running = (cid, rec, self.clock(), obs.sim_time)
            return self.cursor.chunk(obs.sim_time, self.spec.max_chunk_length)
        rec.ok = True
        self.account.actions.append(rec)
        self._record(rec.to_dict())
        self._tool_reply(cid, dict(result, ok=True))
        return None

    def _fail(self, cid, rec: ActionRecord, obs, error: str):
        rec.error = error
        self.account.actions.append(rec)
        self._record(rec.to_dict())
        self._tool_reply(cid, {"ok": False, "moved": False, "error": error})
        self._halt(obs)
        return None

    def _complete_physical(self, obs: PolicyObservation) -> None:
        cid, rec, wall0, sim0 = self.running
        self.cursor = self.running = None
        rec.sim_s, rec.wall_s = obs.sim_time - sim0, self.clock() - wall0
        rec.moved = rec.tool != "wait"
        rec.ok = True
        result = {"ok": True, "moved": rec.moved, "state": self._state(obs)}
        if rec.tool == "pick":
            # The fingers stop on the object: a measured width near the grasp width.
            held = obs.gripper_width > 0.5 * self.holding[1]
            result["grasped"] = held
            if not held:
                rec.ok, rec.error = False, "nothing between the fingers after the pick"
                self.holding = None
        self.account.actions.append(rec)
        self._record(rec.to_dict())
        if not rec.ok:
            self._tool_reply(cid, dict(result, ok=False, error=rec.error))
            self._halt(obs)
        else:
            self._tool_reply(cid, result)

    def _scene(self, obs: PolicyObservation):
        if "front" not in obs.images or "front" not in obs.camera_calibration:
            raise ValueError("the front camera and its calibration are not available")
        scene = estimate_scene(obs.images["front"], CameraCalibration.from_dict(obs.camera_calibration["front"]))
        if scene.pan_centre is not None:
            self.pan_xy = tuple(scene.pan_centre)
        return scene

    def _tool_observe(self, obs, args):
        for cam in self.params["attach_cameras"]:
            if cam in obs.images:
                b64 = _png_b64(obs.images[cam])
                self.attachment_spans.append(b64.encode())
                self.attach.append({"type": "text", "text": f"camera {cam}:"})
                self.attach.append({"type": "image_url",
                                    "image_url": {"url": f"data:image/png;base64,{b64}"}})
        return {"state": self._state(obs), "instruction": obs.instruction,
                "history": [{"tool": a.tool, "arguments": a.arguments, "ok": a.ok, "moved": a.moved,
                             "error": a.error} for a in self.account.actions][-12:],
                "runtime_history": list(obs.history)[-8:],
                "images": "attached in the next user message"}

    def _tool_report_state(self, obs, args):
        self.reports.append({"kind": "state", "sim_time": obs.sim_time, **args})
        return {"recorded": True}

    def _tool_commit_operation(self, obs, args):
        op = args["operation"]
        self.reports.append({"kind": "operation", "sim_time": obs.sim_time,
                             "evidence_version": obs.evidence_version,
                             "operation": {"type": op.get("type", ""), "object": op.get("object", ""),
                                           "destination": op.get("destination", "")}})
        return {"recorded": True}

    def _tool_locate(self, obs, args):
        scene = self._scene(obs)
        name = args["object"]
        if name == "pan":
            if scene.pan_centre is None:
                raise ValueError("the pan is not visible")
            return {"object": "pan", "xyz": [round(float(v), 4) for v in scene.pan_centre] + [BALANCE.pan_top_z]}
        if name not in scene.standards:
            raise ValueError(f"{name} is not visible on the table")
        return {"object": name, "xyz": [round(float(v), 4) for v in scene.standards[name]]}

    def _tool_pick(self, obs, args):
        if self.holding:
            raise ValueError(f"already holding {self.holding[0]}")
        name = args["object"]
        scene = self._scene(obs)
        if name not in scene.standards:
            raise ValueError(f"{name} is not visible on the table")
        rows, width = self.skills.pick(obs.joint_positions, name, scene.standards[name])
        self.holding = (name, width)
        return rows

    def _tool_place(self, obs, args):
        if not self.holding:
            raise ValueError("not holding anything")
        name, width = self.holding
        if args["target"] == "pan":
            scene = self._scene(obs)
            centre = scene.pan_centre or self.pan_xy
            if centre is None:
                raise ValueError("the pan is not visible")
            # The standard's own slot, as the reference systems place it (the cell's pan slots, label order).
            dest, z = BALANCE.slot_xy(STANDARDS.index(name), centre), BALANCE.pan_top_z
        else:
            if "x" not in args or "y" not in args:
                raise ValueError("place on the table needs x and y")
            dest, z = (args["x"], args["y"]), 0.0
        rows = self.skills.place(obs.joint_positions, name, dest, z, width)
        self.holding = None
        return rows

    def _width(self) -> float:
        return float(self.last_row[self.spec.gripper_index]) if self.last_row is not None \
            else self.spec.gripper.open_width_m

    def _tool_move_to_pose(self, obs, args):
        return self.skills.move_to(obs.joint_positions, self._width(), (args["x"], args["y"], args["z"]))

    def _tool_open_gripper(self, obs, args):
        self.holding = None
        return self.skills.set_width(obs.joint_positions, self.spec.gripper.open_width_m)

    def _tool_close_gripper(self, obs, args):
        return self.skills.set_width(obs.joint_positions, 0.0)

    def _tool_wait(self, obs, args):
        row = self.last_row if self.last_row is not None else self._state_row(obs)
        return self.skills.hold(row[:7], float(row[self.spec.gripper_index]), float(args["seconds"]))
