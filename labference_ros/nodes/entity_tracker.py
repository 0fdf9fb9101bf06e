"""entity_tracker: object poses from a simulator's entity states, in place of markers.

Any simulator that offers ROS 2 simulation_interfaces' GetEntitiesStates (lab_sim,
Isaac Sim, Gazebo, O3DE) tells where its entities are. This node asks it `rate` times
a second (one request at a time) for the dynamic objects and publishes their poses on
/markers/poses (labference/MarkerDetections), stamped with the states' own stamp (the
simulator's time), as fiducial_tracker does for markers seen on a camera: the world
estimator (nodes/world_estimator.py) then builds the referee's world state from these
poses, the joint states and the balance, with nothing privileged from the simulator.

An entity is named by the last element of its name (Isaac Sim's prim path /World/sample
is the object `sample`); `objects` (comma-separated, empty: every dynamic object the
simulator lists) keeps only those. A request unanswered for a second (or five polls) is
asked again. Parameters: `service` (default
/get_entities_states), `namespace` (put before it, default ''), `rate` (Hz, default 20)."""
from __future__ import annotations

import time

from geometry_msgs.msg import Pose
from rclpy.node import Node
from rclpy.qos import QoSProfile
from simulation_interfaces.msg import EntityCategory, Result
from simulation_interfaces.srv import GetEntitiesStates

from labference.msg import MarkerDetections
from labference_ros.nodes.runtime import run_node


GIVE_UP_S = 1.0


def object_name(entity: str) -> str:
    """The cell's object name of a simulator entity (a prim path's last element)."""
    return entity.rstrip("/").rsplit("/", 1)[-1]


class EntityTracker(Node):
    def __init__(self):
        super().__init__("entity_tracker")
        namespace = str(self.declare_parameter("namespace", "").value).rstrip("/")
        service = namespace + str(self.declare_parameter("service", "/get_entities_states").value)
        rate = float(self.declare_parameter("rate", 20.0).value)
        if not rate > 0:
            raise ValueError(f"rate must be positive, got {rate}")
        wanted = str(self.declare_parameter("objects", "").value)
        self.objects = {n.strip() for n in wanted.split(",") if n.strip()}
        self.client = self.create_client(GetEntitiesStates, service)
        self.pub = self.create_publisher(MarkerDetections, "/markers/poses", QoSProfile(depth=50))
        self.pending = None
        self.asked_at = 0.0
        self.give_up_s = max(GIVE_UP_S, 5.0 / rate)  # an answer this late is not waited for
        self.failures: set[str] = set()  # each refusal is said once
        self.create_timer(1.0 / rate, self.poll)

    def poll(self) -> None:
        if self.pending is not None and not self.pending.done():
            if time.monotonic() - self.asked_at < self.give_up_s:
                return
            # A reply Fast DDS dropped before its writer matched this client (docs/pitfalls.md)
            # never comes: ask again rather than wait for it for good.
            self.client.remove_pending_request(self.pending)
        if not self.client.service_is_ready():
            return
        self.asked_at = time.monotonic()
        request = GetEntitiesStates.Request()
        request.filters.categories = [EntityCategory(category=EntityCategory.CATEGORY_DYNAMIC_OBJECT)]
        self.pending = self.client.call_async(request)
        self.pending.add_done_callback(self.on_states)

    def on_states(self, future) -> None:
        answer = future.result()
        if answer is None:
            return
        if answer.result.result != Result.RESULT_OK:
            why = answer.result.error_message or f"result {answer.result.result}"
            if why not in self.failures:
                self.failures.add(why)
                self.get_logger().warning(f"GetEntitiesStates refused: {why}")
            return
        if not answer.states:
            return  # no world loaded yet
        out = MarkerDetections(header=answer.states[0].header)
        out.header.frame_id = "world"
        for entity, state in zip(answer.entities, answer.states):
            name = object_name(entity)
            if self.objects and name not in self.objects:
                continue
            pose = Pose()
            pose.position, pose.orientation = state.pose.position, state.pose.orientation
            out.names.append(name)
            out.poses.append(pose)
            out.reprojection_px.append(0.0)
        self.pub.publish(out)


def main(args=None):
    raise SystemExit(run_node(EntityTracker, args))


if __name__ == "__main__":
    main()
