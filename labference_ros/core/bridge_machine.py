"""The policy bridge's state machine for one episode: a pure class beside
core.episode_loop.EpisodeLoop, which it drives. nodes/policy_bridge.py moves its
inputs and outputs over ROS (the ``io`` object below); tests drive it with a fake.

States and transitions (sync mode):
  prime      -> advancing  the first, zero advance (lab_sim publishes the boundary's state)
  advancing  -> its `then` lab_sim answered; or advancing again with the rows sent ahead
  observe    -> echo|infer the observation at the boundary is complete and delivered;
                done         the loop's stop rule holds
  echo       -> support|infer the referee acknowledged the delivery (support: it opened
                an opportunity the Oracle supports)
  support    -> infer      every supported site's delivery settled
  infer      -> execute    the system answered; its chunk checked (EpisodeLoop.take_chunk)
  execute    -> advancing  up to rows_per_advance rows sent, one command each, and their advance;
                observe    the queue is done
A pause holds: execute asks hold intervals only. Timeouts (observation_timeout_s)
raise EvaluationValidityError, which ends the episode as "error". Realtime mode has no
advances: the boundary is wherever the simulator's clock is, rows are paced on it.

Sync mode sends the next rows and their advance while one runs (lab_sim holds a command
until sim time reaches its stamp, and an advance until the one before ends), so only one
round trip per rows_per_advance rows is paid at all.

``io`` provides: advance_server_ready(), call_advance(AdvanceAsk) -> future,
forget_advance(future), keep_boundary_state(answer), send_rows(rows, dt, t),
send_gripper(value, t), stamp(key) -> float | None (keys "joints", "world",
"image:<camera>"), poll_inputs(on), poll_inference(on), deliver_observation(t),
echo(observation_id) -> receipt | None, forward_support(receipt, t), record(entry),
evaluator_view(), submit_inference(obs, evaluator_view) -> future, send_report(report),
publish_chunk(verdict), warn(text), error(text), tick_again(), episode_ended(state, reason).
Futures are anything with done() and result()."""
from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from labference_ros.core.advance_protocol import ADVANCE_RUNNING
from labference_ros.core.system import EvaluationValidityError

EPS = 1e-6
# An episode's first advance (zero duration: lab_sim publishes the boundary's state) is
# asked again after this long without a reply. The server drops a reply when its writer
# has not yet matched this client's reader (discovery on a loaded machine); a second
# zero advance changes nothing, so asking again is safe.
PRIME_RESEND_S = 1.0
ENDED = ("done", "error")


@dataclass(frozen=True)
class AdvanceAsk:
    """The advance over ``duration`` from boundary t that waits for the arm and gripper
    commands stamped at the given boundaries (t itself among them or not)."""

    t: float
    duration: float
    arm_stamps: tuple[float, ...] = ()
    gripper_stamps: tuple[float, ...] = ()


@dataclass
class Ahead:
    """The next rows' advance, asked while the current one runs."""

    ask: AdvanceAsk
    futures: list
    sent: float
    rows: list


@dataclass(frozen=True)
class BridgeSettings:
    sync: bool
    rows_per_advance: int
    hold_interval_s: float
    observation_timeout_s: float
    wait_for_referee_receipt: bool
    privileged: bool  # the system also sees the evaluator's world state
    cameras: tuple[str, ...]
    camera_rate: float
    scene_changes_on_its_own: bool  # an occluder: frames change at a camera tick
    source: str  # the system's name, on its reports


class BridgeEpisode:
    def __init__(self, loop, io, support, settings: BridgeSettings, *, episode_id: str, instance,
                 clock: Callable[[], float] = time.monotonic, perf_clock: Callable[[], float] = time.perf_counter):
        self.loop, self.io, self.support, self.s = loop, io, support, settings
        self.id, self.instance = episode_id, instance
        self.clock, self.perf_clock = clock, perf_clock
        self.t = 0.0  # the current boundary (sim time)
        self.state, self.then = "prime", "observe"
        self.since = clock()  # when the current wait began (its timeout)
        self.paused = False
        self.advance_ask: AdvanceAsk | None = None
        self.advance_futures: list = []
        self.advance_sent = self.advance_last_sent = 0.0
        self.advance_answered = False  # lab_sim answered an advance of this episode
        self.in_flight: list = []  # the setpoints of the rows the running advance runs
        self.ahead_asked, self.ahead = False, None  # once per advance; Ahead or None
        self.inference = None  # the future of the system's answer
        self.wall0 = 0.0
        self.next_row_t = 0.0  # realtime: rows are paced on the simulator's clock

    @property
    def ended(self) -> bool:
        return self.state in ENDED

    def step(self) -> None:
        """One transition, or none while it waits for something."""
        if self.ended:
            return
        try:
            getattr(self, f"_state_{self.state}")()
        except EvaluationValidityError as exc:
            self.end("error", f"evaluation invalid: {exc}")
        except Exception as exc:  # the node reports and stays up for the next episode
            self.io.error(f"policy bridge failed: {exc!r}")
            self.end("error", f"{type(exc).__name__}: {exc}")

    def end(self, state: str, reason: str) -> None:
        if self.ended:
            return
        self.state = state
        self.io.episode_ended(state, reason)

    # the operator -------------------------------------------------------------
    def pause(self, reason: str) -> None:
        """The arm stops: the rows of the advances asked for and not answered yet (the one
        running, and the next one sent ahead) run, then it decelerates from the last."""
        if self.paused:
            return
        self.paused = True
        in_flight = list(self.in_flight) + (self.ahead.rows if self.ahead else [])
        stop = self.loop.pause(self.t, reason)
        if stop is not None:  # replaces the trajectory: the arm decelerates to rest
            if self.state == "advancing":
                stop = np.vstack([*(row[None, :] for row in in_flight if row is not None), stop])
            self.io.send_rows(stop, self.s.hold_interval_s, self.t)

    def resume(self, reason: str) -> None:
        if self.paused:
            self.paused = False
            self.loop.resume(self.t, reason)

    # advances -----------------------------------------------------------------
    def _lab_sim_not_up(self) -> bool:
        """Asked until lab_sim first answers in this episode (a graph query per row costs);
        after that, a lab_sim that leaves shows as an advance without a reply."""
        return not self.advance_answered and not self.io.advance_server_ready()

    def _advance(self, duration: float, then: str = "observe") -> None:
        """Ask lab_sim to run ``duration`` from the current boundary with no command (a
        prime, a paused hold)."""
        if not self.s.sync:
            self.state = then
            return
        if self._lab_sim_not_up():
            return  # try again next tick
        self._start_advance(AdvanceAsk(self.t, float(duration)), [self.loop.setpoint], then)

    def _start_advance(self, ask: AdvanceAsk, rows: list, then: str) -> None:
        """Send ``ask``, the advance that runs ``rows`` (their setpoints: what a pause
        lets run), and wait for its answer."""
        self.state, self.then, self.advance_ask = "advancing", then, ask
        self.in_flight = rows
        self.advance_sent = self.clock()
        self.advance_futures = []
        self._send_advance()

    def _send_advance(self) -> None:
        self.advance_futures.append(self.io.call_advance(self.advance_ask))
        self.advance_last_sent = self.clock()

    def drop_pending_advances(self, ahead_too: bool = False) -> None:
        """Forget the current advance's requests not answered (a prime asked again), and
        with ahead_too the one sent ahead."""
        ahead = self._pop_ahead() if ahead_too else None
        for future in self.advance_futures + (ahead.futures if ahead else []):
            if not future.done():
                self.io.forget_advance(future)
        self.advance_futures = []

    def _pop_ahead(self) -> Ahead | None:
        ahead, self.ahead_asked, self.ahead = self.ahead, False, None
        return ahead

    def _send_segment(self, t0: float) -> tuple[AdvanceAsk, list] | None:
        """The chunk's next rows (at most rows_per_advance), each sent as the commands of
        its own interval from boundary t0 on; the advance that runs them and the setpoint
        after each row, or None when the queue is done (observe next)."""
        dt = self.s.hold_interval_s
        arm_stamps, gripper_stamps, setpoints = [], [], []
        while len(setpoints) < self.s.rows_per_advance:
            t = t0 + len(setpoints) * dt
            command = self.loop.next_command(t)
            if command is None:
                break
            arm, gripper = self._send_command(command, t)
            if arm:
                arm_stamps.append(t)
            if gripper:
                gripper_stamps.append(t)
            setpoints.append(self.loop.setpoint)
        if not setpoints:
            return None
        return AdvanceAsk(t0, len(setpoints) * dt, tuple(arm_stamps), tuple(gripper_stamps)), setpoints

    def _send_command(self, command, t: float) -> tuple[bool, bool]:
        """One row's commands for the interval from boundary t (a hold row sends none);
        whether an arm and a gripper command went out."""
        if command.row is None:
            return False, False
        self.io.send_rows([command.row], self.s.hold_interval_s, t)
        if command.gripper is None:
            return True, False
        self.io.send_gripper(command.gripper, t)
        return True, True

    def _send_ahead(self) -> None:
        """While an advance's rows run, send the next rows and ask for their advance, from
        the boundary where this one ends. Only between rows of a chunk: not after a prime, a
        pause or the chunk's last row (the observation after it waits for the answer)."""
        self.ahead_asked = True  # once per advance
        if not self.s.sync or self.then != "execute" or self.paused:
            return
        segment = self._send_segment(self.t + self.advance_ask.duration)
        if segment is None:
            return
        ask, rows = segment
        self.ahead = Ahead(ask, [self.io.call_advance(ask)], self.clock(), rows)

    # states -------------------------------------------------------------------
    def _state_prime(self) -> None:
        # lab_sim publishes the state at a boundary when asked to advance by zero.
        self._advance(0.0)

    def _state_advancing(self) -> None:
        """Waits for lab_sim's answer. A prime (zero duration) still unanswered after
        PRIME_RESEND_S is asked again with the earlier requests kept: whichever succeeds
        first counts, and a refusal because an earlier one still runs is no answer."""
        is_prime = self.advance_ask.duration == 0.0
        answers = [f.result() for f in self.advance_futures if f.done()]
        if not answers and not self.ahead_asked:
            self._send_ahead()
        if is_prime:
            answers = [a for a in answers if a is None or a.message != ADVANCE_RUNNING]
        if not answers:
            now = self.clock()
            # A reply that never comes (lab_sim gone, a lost response) is an
            # evaluation-validity event, not a silent stall of the episode.
            if now - self.advance_sent > self.s.observation_timeout_s:
                self.drop_pending_advances()
                raise EvaluationValidityError("lab_sim advance got no reply")
            if is_prime and now - self.advance_last_sent >= PRIME_RESEND_S:
                self.io.warn(f"the first advance of episode {self.id} has no answer after {PRIME_RESEND_S} s: "
                             "asking again")
                self._send_advance()
            return
        self.drop_pending_advances()
        res = next((a for a in answers if a is not None and a.success), answers[0])
        if res is None or not res.success:
            raise EvaluationValidityError(f"lab_sim advance failed: {getattr(res, 'message', 'no reply')}")
        self.t, self.state, self.since = res.sim_time, self.then, self.clock()
        self.advance_answered = True
        self.io.keep_boundary_state(res)
        ahead = self._pop_ahead()
        if ahead is not None:  # the next rows' advance, asked while this one ran
            self.state, self.then = "advancing", "execute"
            self.advance_ask, self.advance_futures = ahead.ask, ahead.futures
            self.advance_sent = self.advance_last_sent = ahead.sent
            self.in_flight = ahead.rows
            self.io.tick_again()  # and the rows after them go out now

    def _current_time(self) -> float:
        if self.s.sync:
            return self.t
        t = self.io.stamp("joints")
        return t if t is not None else 0.0

    def _missing(self, t: float) -> list[str]:
        """What the observation at t still lacks: the joint state at t, each camera's
        newest frame at or after the last camera tick, and (privileged) the world state at t."""
        missing = []
        joints_t = self.io.stamp("joints")
        if joints_t is None or abs(joints_t - t) > EPS:
            missing.append(f"the joint state at {t:.3f}")
        missing += self._frames_missing(t)
        if self.s.privileged:
            world_t = self.io.stamp("world")
            if world_t is None or abs(world_t - t) > EPS:
                missing.append(f"the world state at {t:.3f}")
        return missing

    def _frames_missing(self, t: float) -> list[str]:
        """The cameras whose newest frame is older than the last camera tick at or before t."""
        rate = self.s.camera_rate
        tick = math.floor(t * rate + EPS) / rate
        missing = []
        for cam in self.s.cameras:
            frame_t = self.io.stamp(f"image:{cam}")
            if frame_t is None or frame_t < tick - EPS:
                missing.append(f"a {cam} frame from {tick:.3f} on")
        return missing

    def _have_every_channel(self) -> bool:
        """Realtime mode: at least one message on every channel the observation needs."""
        needed = ["joints", *(f"image:{c}" for c in self.s.cameras)] + (["world"] if self.s.privileged else [])
        return all(self.io.stamp(k) is not None for k in needed)

    def _timed_out(self) -> bool:
        return self.clock() - self.since > self.s.observation_timeout_s

    def _state_observe(self) -> None:
        if self.paused:  # nothing is asked of the system until the operator resumes
            self.io.poll_inputs(False)
            self.state = "execute"
            return
        t = self._current_time()
        missing = self._missing(t) if self.s.sync else []
        if missing:
            if self._timed_out():
                raise EvaluationValidityError(f"no complete observation at sim time {t:.3f}: "
                                              f"missing {', '.join(missing)}")
            self.io.poll_inputs(True)  # nothing calls back when a sampled input arrives
            return
        self.io.poll_inputs(False)
        if not self.s.sync:
            if not self._have_every_channel():
                return
            # A scene that changes on its own (an occluder) does so at a camera tick, and the
            # simulator publishes that tick's frames just after its joint state: wait for
            # them, so that no observation from the change on carries an older frame.
            if self.s.scene_changes_on_its_own and self._frames_missing(t):
                return
            self.t = t  # realtime: the boundary is wherever the simulator has got to
        stop = self.loop.stop_reason(t)
        if stop is not None:
            self.end("done", stop)
            return
        self.io.deliver_observation(t)
        self.state = "echo" if self.s.wait_for_referee_receipt else "infer"
        self.since = self.clock()

    def _state_echo(self) -> None:
        # In sync mode the referee must have the delivery before physics moves.
        echo = self.io.echo(self.loop.obs_id)
        if echo is None:
            if self._timed_out():
                raise EvaluationValidityError("the referee never acknowledged the delivery")
            return
        self.loop.acknowledged(int(echo.evidence_version))
        if self.support.awaited and json.loads(echo.detail_json or "{}").get("opened", False):
            self.support.expect(int(echo.opportunity_id))
            self.state, self.since = "support", self.clock()
        else:
            self.state = "infer"

    def _state_support(self) -> None:
        """A handoff opened an opportunity: the oracle answers for each supported
        site, the referee scope-checks what the bridge hands over, and only then
        does the system see the support and act (sync mode: physics waits)."""
        for receipt in self.support.ready_to_forward():
            self.io.forward_support(receipt, self.t)
        settled = self.support.settled()
        for entry in self.support.drain_log():
            self.io.record({"record": "support", "t": self.t, **entry})
        if settled:
            self.state = "infer"
        elif self._timed_out():
            # A support that never arrives is a transport fault: the run is not valid.
            raise EvaluationValidityError(f"oracle support never settled: {self.support.waiting_for()}")

    def _state_infer(self) -> None:
        loop = self.loop
        if self.inference is None:
            view = self.io.evaluator_view() if self.s.privileged else None
            self.wall0 = self.perf_clock()
            self.inference = self.io.submit_inference(loop.obs, view)
            self.io.poll_inference(True)
            return
        future = self.inference
        if not future.done():
            return
        self.io.poll_inference(False)
        self.inference = None
        wall = self.perf_clock() - self.wall0
        chunk = future.result()  # EvaluationValidityError ends the episode (step)
        for report in loop.reports(self.t, self.s.source):
            self.io.send_report(report)
        for entry in self.support.outputs_after_act():
            self.io.record({"record": "support_outcome", "t": self.t, **entry})
        verdict = loop.take_chunk(chunk, self.t, wall)
        if self.paused:  # answered while the operator paused: nothing of it runs
            loop.drop_queue(self.t, "chunk answered during the pause")
        self.io.publish_chunk(verdict)
        if not verdict.accepted:
            self.io.warn(f"chunk {loop.chunk_id} {verdict.status}: {'; '.join(verdict.reasons)}; holding")
        self.state = "execute"

    def _state_execute(self) -> None:
        loop = self.loop
        if self.paused:
            # Nothing moves and the system is not asked; sim time goes on in hold intervals.
            stop = loop.stop_reason(self._current_time())
            if stop is not None:
                self.end("done", stop)
            elif self.s.sync:
                self._advance(self.s.hold_interval_s, then="execute")
            return
        if not self.s.sync:
            if loop.queue and loop.latest_ev <= loop.chunk_ev:
                # Rows are paced on the simulator's clock, not the wall clock: a
                # simulator slower than real time must not receive targets faster
                # than its physics moves (JTC replace semantics would skip them).
                now = self._current_time()
                if now < self.next_row_t - EPS:
                    return
                self.next_row_t = now + self.s.hold_interval_s
                self.t = now
            command = loop.next_command(self.t)
            if command is None:
                self.state, self.since = "observe", self.clock()
                return
            self._send_command(command, self.t)  # and the state stays: the next row follows
            return
        if self._lab_sim_not_up():
            return  # no row taken: try again next tick
        segment = self._send_segment(self.t)
        if segment is None:
            self.state, self.since = "observe", self.clock()
            return
        ask, rows = segment
        self._start_advance(ask, rows, then="execute")
