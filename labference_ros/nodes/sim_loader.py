"""sim_loader: the episode runner's scene reset through ROS 2 simulation_interfaces, so
the runner can drive any simulator that offers them (lab_sim, Isaac Sim's simulation
control, Gazebo, O3DE), not only lab_sim's own /lab_sim/reset.

It serves /sim_loader/reset (labference/ResetEpisode, the call the runner makes; a graph
remaps the runner's /lab_sim/reset to it):
1. LoadWorld (`<namespace>/load_world`) with the instance JSON as the world's
   `resource_string` (lab_sim loads such an instance; another simulator needs the
   instance's stage, docs/simulators.md);
2. with `play` (realtime graphs), SetSimulationState PLAYING
   (`<namespace>/set_simulation_state`): a simulator that loads a world paused starts it;
3. the answer: the instance's layout hash (from the task family, as lab_sim answers it),
   an empty scene hash (only lab_sim knows the scene it compiled) and the sim time of
   the first /clock after the load (0 when none came within `clock_wait_s`).
The whole reset takes at most `reset_timeout_s` (20; keep it below the runner's
service_timeout_s, so a slow simulator is this node's named refusal, not the runner's
timeout); a call not answered within 8 s is asked again (a reply Fast DDS dropped never
comes, docs/pitfalls.md), and one not answered by the end is given up. A reset asked
again with the same
episode and instance, as the runner does when a reply is lost, gets the first answer:
the world is loaded once (nodes/repeated_reset.py). Parameters: task, namespace (''
the root, as Isaac Sim's extension and lab_sim serve them), play (true),
reset_timeout_s, clock_wait_s (2, within reset_timeout_s)."""
from __future__ import annotations

import time

from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.task import Future
from rosgraph_msgs.msg import Clock
from simulation_interfaces.msg import Result, SimulationState
from simulation_interfaces.srv import LoadWorld, SetSimulationState

from labference.srv import ResetEpisode
from labference_ros.nodes.repeated_reset import ANSWER_FIELDS, RepeatedReset
from labference_ros.nodes.runtime import run_node
from labference_ros.nodes.steady_waits import SteadyWaits
from labference_ros.tasks import DEFAULT_FAMILY, family as task_family

POLL_S = 0.02
RESEND_S = 8.0  # longer than a load takes on a loaded machine, so a slow one is not loaded twice


class SimLoader(Node):
    def __init__(self):
        super().__init__("sim_loader")
        v = {name: self.declare_parameter(name, default).value for name, default in (
            ("task", DEFAULT_FAMILY), ("namespace", ""), ("play", True), ("reset_timeout_s", 20.0),
            ("clock_wait_s", 2.0))}
        self.family = task_family(str(v["task"]))
        namespace = str(v["namespace"]).rstrip("/")
        self.play = bool(v["play"])
        self.reset_timeout_s = float(v["reset_timeout_s"])
        self.deadline = 0.0  # monotonic: when the reset in progress must have answered
        self.clock_wait_s = float(v["clock_wait_s"])
        self.load_world = self.create_client(LoadWorld, f"{namespace}/load_world")
        self.set_state = self.create_client(SetSimulationState, f"{namespace}/set_simulation_state")
        self.waits = SteadyWaits(self, POLL_S)
        self.resets = RepeatedReset()
        # The reset in flight: its request's key, done when it answered, and its response.
        self.loading: tuple[tuple[str, str], Future, object] | None = None
        self.clock_seen: Future | None = None  # set by the first /clock after a load
        self.create_subscription(Clock, "/clock", self.on_clock,
                                 QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT))
        self.create_service(ResetEpisode, "~/reset", self.on_reset)

    def on_clock(self, msg: Clock) -> None:
        if self.clock_seen is not None and not self.clock_seen.done():
            self.clock_seen.set_result(msg.clock.sec + msg.clock.nanosec * 1e-9)

    def left_s(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    async def answer(self, client, request, what: str):
        """The service's answer, or an error message naming what did not answer in time."""
        while not client.service_is_ready() and self.left_s() > 0:
            await self.waits.pause(0.1)
        if not client.service_is_ready():
            return f"{what}: {client.srv_name} is not offered (waited {self.reset_timeout_s:g} s for the reset)"
        # Asked again every RESEND_S without an answer: Fast DDS drops a reply sent before its
        # writer matched this client (docs/pitfalls.md), and both calls are safe to repeat
        # (the same world loaded again before anything runs in it; PLAYING when playing).
        while self.left_s() > 0:
            outcome = Future()  # this attempt's: a timed-out wait leaves its future done (None)
            call = client.call_async(request)
            call.add_done_callback(lambda done, outcome=outcome: outcome.done() or outcome.set_result(done.result()))
            answer = await self.waits.resolve_after(min(RESEND_S, self.left_s()), outcome, None)
            if answer is not None:
                return answer
            client.remove_pending_request(call)  # a late answer goes nowhere
            if self.left_s() > 0:
                self.get_logger().warning(f"{what}: no answer from {client.srv_name} yet; asking again")
        return f"{what}: {client.srv_name} did not answer within the reset's {self.reset_timeout_s:g} s"

    async def on_reset(self, request, response):
        if self.resets.repeat(request, response):
            self.get_logger().info(f"reset of {request.episode_id} asked again: answered again, loaded once")
            return response
        key = (request.episode_id, request.instance_json)
        if self.loading is not None and not self.loading[1].done():
            if self.loading[0] != key:
                response.success, response.message = False, "another reset is loading its world"
                return response
            await self.loading[1]  # the same reset asked again while it loads: its answer
            for field in ANSWER_FIELDS:
                setattr(response, field, getattr(self.loading[2], field))
            return response
        done = Future()
        self.loading = (key, done, response)
        self.deadline = time.monotonic() + self.reset_timeout_s
        try:
            await self._reset(request, response)
            self.resets.answered(request, response)
        finally:
            done.set_result(True)
        return response

    async def _reset(self, request, response) -> None:
        try:
            instance = self.family.instance_from_json(request.instance_json)
        except Exception as exc:  # a broken instance is reported, the node stays up
            response.success, response.message = False, f"reset failed: {exc}"
            return
        load = LoadWorld.Request(fail_on_unsupported_element=True, ignore_missing_or_unsupported_assets=False)
        load.world_resource.resource_string = request.instance_json
        self.clock_seen = Future()
        answer = await self.answer(self.load_world, load, "LoadWorld")
        if isinstance(answer, str) or answer.result.result != Result.RESULT_OK:
            why = answer if isinstance(answer, str) else f"LoadWorld refused: {answer.result.error_message}"
            response.success, response.message = False, why
            return
        self.clock_seen = Future()  # a /clock from before the load says nothing of it
        if self.play:
            play = SetSimulationState.Request()
            play.state.state = SimulationState.STATE_PLAYING
            answer = await self.answer(self.set_state, play, "SetSimulationState")
            playing = (Result.RESULT_OK, SetSimulationState.Response.ALREADY_IN_TARGET_STATE)
            if isinstance(answer, str) or answer.result.result not in playing:
                why = answer if isinstance(answer, str) else f"PLAYING refused: {answer.result.error_message}"
                response.success, response.message = False, why
                return
        sim_time = await self.waits.resolve_after(min(self.clock_wait_s, self.left_s()), self.clock_seen, None)
        if sim_time is None:
            self.get_logger().warning(f"no /clock within {self.clock_wait_s:g} s of the load: sim time 0 answered")
            sim_time = 0.0
        response.success, response.message = True, f"loaded {instance.instance_id} through LoadWorld"
        self.get_logger().info(f"{request.episode_id}: {response.message} (sim time {sim_time:.3f} s)")
        response.layout_hash, response.scene_hash, response.sim_time = instance.layout_hash, "", float(sim_time)


def main(args=None):
    raise SystemExit(run_node(SimLoader, args))


if __name__ == "__main__":
    main()
