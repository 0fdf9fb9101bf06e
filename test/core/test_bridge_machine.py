"""The policy bridge's state machine (core.bridge_machine.BridgeEpisode): its transitions
driven by hand, with a stand-in for ROS (the io), a stand-in system and a clock of our own."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from labference_ros.core.action_conversion import identity
from labference_ros.core.action_spec import reference_joint_spec
from labference_ros.core.advance_protocol import ADVANCE_RUNNING
from labference_ros.core.bridge_machine import PRIME_RESEND_S, AdvanceAsk, BridgeEpisode, BridgeSettings
from labference_ros.core.episode_loop import EpisodeLoop
from labference_ros.core.observation import ARM_JOINTS, FINGER_JOINTS

HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
CAMERAS = ("front",)
DT = 0.02  # the hold interval at 50 Hz


class Future:
    def __init__(self):
        self.answer, self.finished = None, False

    def done(self):
        return self.finished

    def result(self):
        return self.answer

    def set(self, answer):
        self.answer, self.finished = answer, True


def answer(t, success=True, message=""):
    return SimpleNamespace(success=success, message=message, sim_time=t)


class IO:
    """Records what the episode asks of ROS; inputs are set by the test."""

    def __init__(self):
        self.advances: list[tuple[AdvanceAsk, Future]] = []
        self.forgotten, self.rows, self.grips, self.delivered, self.chunks = [], [], [], [], []
        self.stamps: dict[str, float] = {}
        self.echoes: dict = {}
        self.inference = Future()
        self.submitted, self.records, self.warnings, self.ended = [], [], [], []
        self.again = 0
        self.lab_sim_up = True

    def advance_server_ready(self):
        return self.lab_sim_up

    def call_advance(self, ask):
        future = Future()
        self.advances.append((ask, future))
        return future

    def forget_advance(self, future):
        self.forgotten.append(future)

    def keep_boundary_state(self, res):
        for key in ("joints", "image:front"):
            self.stamps[key] = res.sim_time  # lab_sim's answer and the frames it published

    def send_rows(self, rows, dt, t):
        self.rows.append((t, np.asarray(rows)))

    def send_gripper(self, value, t):
        self.grips.append((t, value))

    def stamp(self, key):
        return self.stamps.get(key)

    def poll_inputs(self, on):
        pass

    def poll_inference(self, on):
        pass

    def deliver_observation(self, t):
        joints = {**dict(zip(ARM_JOINTS, HOME)), **{f: 0.04 for f in FINGER_JOINTS}}
        self.episode.loop.observe(t, {"front": np.zeros((4, 4, 3), np.uint8)}, {"front": t}, joints, {})
        self.delivered.append(t)

    def echo(self, observation_id):
        return self.echoes.get(observation_id)

    def forward_support(self, receipt, t):
        self.records.append({"forwarded": receipt})

    def record(self, entry):
        self.records.append(entry)

    def evaluator_view(self):
        return None

    def submit_inference(self, obs, view):
        self.submitted.append(obs)
        return self.inference

    def send_report(self, report):
        pass

    def publish_chunk(self, verdict):
        self.chunks.append(verdict)

    def warn(self, text):
        self.warnings.append(text)

    def error(self, text):
        self.warnings.append(text)

    def tick_again(self):
        self.again += 1

    def episode_ended(self, state, reason):
        self.ended.append((state, reason))


class System:
    name, finished, privileged = "stand_in", False, False

    def drain_reports(self):
        return []


class Support:
    def __init__(self, awaited=False):
        self.awaited, self.expected, self.settle = awaited, None, False

    def expect(self, opportunity_id):
        self.expected = opportunity_id

    def ready_to_forward(self):
        return []

    def settled(self):
        return self.settle

    def drain_log(self):
        return []

    def outputs_after_act(self):
        return []

    def waiting_for(self):
        return "state"


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def episode(sync=True, rows_per_advance=2, support=None, wait_for_echo=True):
    io, clock = IO(), Clock()
    spec = reference_joint_spec(50.0, 50)
    loop = EpisodeLoop(System(), identity(spec), episode_id="ep", instance=SimpleNamespace(
        public_instruction=lambda: "weigh"))
    settings = BridgeSettings(sync=sync, rows_per_advance=rows_per_advance, hold_interval_s=DT,
                              observation_timeout_s=30.0, wait_for_referee_receipt=wait_for_echo, privileged=False,
                              cameras=CAMERAS, camera_rate=10.0, scene_changes_on_its_own=False, source="stand_in")
    ep = BridgeEpisode(loop, io, support or Support(), settings, episode_id="ep", instance=None, clock=clock,
                       perf_clock=clock)
    io.episode = ep
    return ep, io, clock


def answer_last(ep, io, t):
    io.advances[-1][1].set(answer(t))
    ep.step()


def to_infer(ep, io):
    """Prime, observe at 0 and have the referee acknowledge it."""
    ep.step()
    answer_last(ep, io, 0.0)
    ep.step()
    io.echoes[ep.loop.obs_id] = SimpleNamespace(evidence_version=1, detail_json="{}", opportunity_id=-1)
    ep.step()
    assert ep.state == "infer"


def chunk(n):
    return np.tile(np.concatenate([HOME, [0.08]]), (n, 1))


def test_the_prime_asks_a_zero_advance_and_its_answer_leads_to_the_observation():
    ep, io, _ = episode()
    assert ep.state == "prime"
    ep.step()
    (ask, _), = io.advances
    assert ep.state == "advancing" and ask == AdvanceAsk(0.0, 0.0)
    ep.step()  # no answer yet: it waits
    assert ep.state == "advancing" and len(io.advances) == 1
    answer_last(ep, io, 0.0)
    assert ep.state == "observe" and ep.advance_answered


def test_an_observation_waits_for_the_boundarys_inputs_then_is_delivered_and_acknowledged():
    ep, io, _ = episode()
    ep.step()
    io.advances[-1][1].set(answer(0.0))
    io.keep_boundary_state = lambda res: None  # the frames have not come
    ep.step()
    ep.step()
    assert ep.state == "observe" and not io.delivered
    io.stamps.update({"joints": 0.0, "image:front": 0.0})
    ep.step()
    assert ep.state == "echo" and io.delivered == [0.0]
    ep.step()
    assert ep.state == "echo"
    io.echoes[ep.loop.obs_id] = SimpleNamespace(evidence_version=1, detail_json="{}", opportunity_id=-1)
    ep.step()
    assert ep.state == "infer" and ep.loop.obs_ev == 1


def test_without_the_echo_wait_the_system_is_asked_at_once():
    ep, io, _ = episode(wait_for_echo=False)
    ep.step()
    answer_last(ep, io, 0.0)
    ep.step()
    assert ep.state == "infer"


def test_an_opened_opportunity_waits_for_the_support_to_settle():
    support = Support(awaited=True)
    ep, io, _ = episode(support=support)
    ep.step()
    answer_last(ep, io, 0.0)
    ep.step()
    io.echoes[ep.loop.obs_id] = SimpleNamespace(evidence_version=1, detail_json='{"opened": true}',
                                                opportunity_id=7)
    ep.step()
    assert ep.state == "support" and support.expected == 7
    ep.step()
    assert ep.state == "support"
    support.settle = True
    ep.step()
    assert ep.state == "infer"


def test_a_chunks_rows_go_out_per_advance_and_the_next_advance_is_asked_while_one_runs():
    ep, io, _ = episode(rows_per_advance=2)
    to_infer(ep, io)
    ep.step()
    assert io.submitted and ep.state == "infer"  # asked; the answer is awaited
    io.inference.set(chunk(5))
    ep.step()
    assert ep.state == "execute" and io.chunks[-1].accepted
    ep.step()  # rows 1-2 and their advance
    ask, _ = io.advances[-1]
    assert ep.state == "advancing" and ask == AdvanceAsk(0.0, 2 * DT, (0.0, DT), (0.0,))
    ep.step()  # while it runs: rows 3-4 and their advance, from where this one ends
    ahead, _ = io.advances[-1]
    assert ahead == AdvanceAsk(2 * DT, 2 * DT, (2 * DT, 3 * DT), ())
    assert [t for t, _ in io.rows] == pytest.approx([0.0, DT, 2 * DT, 3 * DT])
    io.advances[-2][1].set(answer(2 * DT))
    ep.step()  # the first answered: the one sent ahead is now the advance awaited
    assert ep.state == "advancing" and ep.advance_ask == ahead and io.again == 1 and ep.t == pytest.approx(2 * DT)
    ep.step()  # and the last row goes out ahead of it
    assert io.advances[-1][0] == AdvanceAsk(4 * DT, DT, (4 * DT,), ())
    answer_last_two = io.advances[-2][1], io.advances[-1][1]
    answer_last_two[0].set(answer(4 * DT))
    ep.step()
    answer_last_two[1].set(answer(5 * DT))
    ep.step()
    assert ep.state == "execute"
    ep.step()  # the queue is done
    assert ep.state == "observe"


def test_an_unanswered_prime_is_asked_again_and_a_refusal_because_one_runs_is_no_answer():
    ep, io, clock = episode()
    ep.step()
    clock.now += PRIME_RESEND_S
    ep.step()
    assert len(io.advances) == 2 and io.warnings
    io.advances[1][1].set(answer(0.0, success=False, message=ADVANCE_RUNNING))
    ep.step()
    assert ep.state == "advancing"
    io.advances[0][1].set(answer(0.0))
    ep.step()
    assert ep.state == "observe"


def test_an_advance_without_a_reply_or_a_failed_one_ends_the_episode_as_invalid():
    ep, io, clock = episode()
    ep.step()
    clock.now += 31.0
    ep.step()
    assert io.ended == [("error", "evaluation invalid: lab_sim advance got no reply")] and io.forgotten
    ep, io, _ = episode()
    ep.step()
    io.advances[-1][1].set(answer(0.0, success=False, message="no scene loaded"))
    ep.step()
    assert io.ended == [("error", "evaluation invalid: lab_sim advance failed: no scene loaded")]
    ep.step()  # ended: nothing more happens
    assert len(io.ended) == 1


def test_no_advance_goes_out_until_lab_sim_is_up():
    ep, io, _ = episode()
    io.lab_sim_up = False
    ep.step()
    assert ep.state == "prime" and not io.advances


@pytest.mark.parametrize("arrived, lacking", [
    ({}, "missing the joint state at 0.000, a front frame from 0.000 on"),
    ({"joints": 0.0}, "missing a front frame from 0.000 on"),  # the first frame lost (lab_sim's writer unmatched)
    ({"image:front": 0.0}, "missing the joint state at 0.000"),
])
def test_an_incomplete_observation_times_out_as_invalid_naming_what_it_lacks(arrived, lacking):
    ep, io, clock = episode()
    ep.step()
    io.keep_boundary_state = lambda res: io.stamps.update(arrived)
    answer_last(ep, io, 0.0)
    ep.step()
    assert ep.state == "observe" and not io.ended  # waits for the rest
    clock.now += 31.0
    ep.step()
    assert io.ended == [("error", f"evaluation invalid: no complete observation at sim time 0.000: {lacking}")]


def test_a_pause_while_rows_run_stops_after_them_and_holds_in_hold_intervals():
    ep, io, _ = episode(rows_per_advance=2)
    to_infer(ep, io)
    ep.step()
    io.inference.set(chunk(5))
    ep.step()
    ep.step()  # rows 1-2 running
    ep.step()  # rows 3-4 sent ahead
    sent = len(io.rows)
    ep.pause("operator")
    t, stop = io.rows[-1]
    assert len(io.rows) == sent + 1 and t == 0.0
    assert len(stop) > 4  # the four rows asked for, then the deceleration
    ep.pause("again")  # a second pause changes nothing
    assert len(io.rows) == sent + 1
    for future in (f for _, f in io.advances[-2:]):
        future.set(answer(4 * DT))
        ep.step()
    ep.step()  # paused: a hold interval, no row
    assert io.advances[-1][0] == AdvanceAsk(4 * DT, DT) and ep.then == "execute"
    ep.resume("operator")
    assert not ep.paused


def test_the_loops_stop_rule_ends_the_episode_at_an_observation():
    ep, io, _ = episode()
    ep.loop.system.finished, ep.loop.stop_hold_s = True, 0.0
    ep.step()
    answer_last(ep, io, 0.0)
    ep.step()
    assert io.ended == [("done", "policy_stop")] and ep.ended


def test_realtime_has_no_advances_and_paces_rows_on_the_simulators_clock():
    ep, io, _ = episode(sync=False)
    ep.step()
    assert ep.state == "observe" and not io.advances
    io.stamps.update({"joints": 0.5, "image:front": 0.5})
    ep.step()
    assert io.delivered == [0.5] and ep.t == 0.5
    io.echoes[ep.loop.obs_id] = SimpleNamespace(evidence_version=1, detail_json="{}", opportunity_id=-1)
    ep.step()
    ep.step()
    io.inference.set(chunk(2))
    ep.step()
    ep.step()  # the first row at once
    ep.step()  # the next waits for the simulator's clock
    assert [t for t, _ in io.rows] == [0.5]
    io.stamps["joints"] = 0.5 + DT
    ep.step()
    assert [t for t, _ in io.rows] == pytest.approx([0.5, 0.5 + DT])
