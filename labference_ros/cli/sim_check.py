"""`labference sim-check`: does a running simulator offer what the graph needs?

Connects to whatever simulator is on the ROS domain through ROS 2
simulation_interfaces and the standard topics, and checks feature by feature:

1. the standard services and the SimulateSteps action the graph calls, by name and type;
2. the features GetSimulatorFeatures states (world loading, reset, single and multiple
   steps, simulation state, entity states);
3. a world loaded (LoadWorld with an instance of the task family) holds the entities the
   cell expects (the instance's objects, by name or as the last element of a prim path);
4. step control: the simulation is paused, and a StepSimulation of STEP_S moves sim time
   by that much, its entities' states stamped with it;
5. the topics the graph reads, with their types and rates while stepping (measured on
   the messages' stamps, per second of sim time): joint states and the load-cell wrench
   at the measurement rate, the family's cameras at the camera rate, and a subscriber
   on the arm's JointTrajectory topic.

Each line says PASS or FAIL and why; the last line is the verdict. Exit status 0 when
everything passes, 1 when something is missing, 2 when no simulator answered at all."""
from __future__ import annotations

import re
import time
from dataclasses import dataclass

# The graph's rates (lab_sim's defaults, which the referee and the bridge are built for).
MEASUREMENT_RATE_HZ = 100.0
CAMERA_RATE_HZ = 10.0
RATE_TOLERANCE = 0.1  # a measured rate may fall this fraction short
STEP_S = 0.5  # sim time stepped to measure the rates
ARM_TOPIC = "/panda_arm_controller/joint_trajectory"
# Standard interface -> (service name, type) the graph calls.
SERVICES = {
    "GetSimulatorFeatures": ("get_simulator_features", "simulation_interfaces/srv/GetSimulatorFeatures"),
    "LoadWorld": ("load_world", "simulation_interfaces/srv/LoadWorld"),
    "ResetSimulation": ("reset_simulation", "simulation_interfaces/srv/ResetSimulation"),
    "GetSimulationState": ("get_simulation_state", "simulation_interfaces/srv/GetSimulationState"),
    "StepSimulation": ("step_simulation", "simulation_interfaces/srv/StepSimulation"),
    "GetEntities": ("get_entities", "simulation_interfaces/srv/GetEntities"),
    "GetEntitiesStates": ("get_entities_states", "simulation_interfaces/srv/GetEntitiesStates"),
    "SetEntityState": ("set_entity_state", "simulation_interfaces/srv/SetEntityState"),
}
ACTION = ("SimulateSteps", "simulate_steps", "simulation_interfaces/action/SimulateSteps")
# SimulatorFeatures constants the graph needs, by name.
FEATURES = ("WORLD_LOADING", "WORLD_RESOURCE_STRING", "SIMULATION_RESET", "SIMULATION_STATE_GETTING",
            "STEP_SIMULATION_SINGLE", "STEP_SIMULATION_MULTIPLE", "ENTITY_STATE_GETTING",
            "ENTITY_STATE_SETTING")


@dataclass(frozen=True)
class Finding:
    feature: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{'PASS' if self.ok else 'FAIL'}  {self.feature}: {self.detail}"


def verdict(findings: list[Finding]) -> str:
    missing = [f.feature for f in findings if not f.ok]
    if not missing:
        return f"verdict: PASS: the simulator offers all {len(findings)} features the graph needs"
    return (f"verdict: FAIL: {len(missing)} of {len(findings)} features missing: " + ", ".join(missing))


def entity_matches(expected: str, offered: list[str]) -> bool:
    """An expected name is offered as itself or as the last element of a path (/World/sample)."""
    return any(name == expected or name.rsplit("/", 1)[-1] == expected for name in offered)


def rate_finding(feature: str, stamps: list[float], want_hz: float, duration_s: float) -> Finding:
    """Messages per second of sim time, from their stamps, against the rate the graph needs."""
    distinct = sorted(set(stamps))
    if not distinct:
        return Finding(feature, False, f"nothing published while stepping {duration_s:.2f} s (needs {want_hz:g} Hz)")
    rate = len(distinct) / duration_s
    ok = rate >= want_hz * (1.0 - RATE_TOLERANCE)
    return Finding(feature, ok, f"{rate:.1f} Hz over {duration_s:.2f} s of sim time (needs {want_hz:g} Hz)")


def expected_topics(family) -> dict[str, tuple[str, float]]:
    """Topic -> (type, rate Hz) the graph reads from the simulator for this family."""
    topics = {"/joint_states": ("sensor_msgs/msg/JointState", MEASUREMENT_RATE_HZ)}
    if family.reads_balance:
        topics["/balance/wrench"] = ("geometry_msgs/msg/WrenchStamped", MEASUREMENT_RATE_HZ)
    for camera in family.cameras:
        topics[f"/cameras/{camera}/image_raw"] = ("sensor_msgs/msg/Image", CAMERA_RATE_HZ)
    return topics


def expected_entities(family, instance) -> list[str]:
    """The objects the cell puts in this instance's scene (what the referee tracks)."""
    return sorted(family.build_scene(instance, fiducials=False).objects)


class SimCheck:
    """The probe: one rclpy node on the current ROS domain."""

    def __init__(self, node, namespace: str, timeout_s: float):
        self.node = node
        self.prefix = namespace.rstrip("/") + "/" if namespace else "/"
        self.timeout_s = timeout_s
        self.offered: dict[str, list[str]] = {}

    def spin_until(self, done, timeout_s: float) -> bool:
        import rclpy

        deadline = time.monotonic() + timeout_s
        while not done() and time.monotonic() < deadline:
            rclpy.spin_once(self.node, timeout_sec=0.05)
        return done()

    def call(self, srv_type, name: str, request):
        """The simulator's answer; None when the service is not offered or does not answer."""
        if self.prefix + name not in self.offered:
            return None
        client = self.node.create_client(srv_type, self.prefix + name)
        try:
            if not client.wait_for_service(timeout_sec=self.timeout_s):
                return None
            future = client.call_async(request)
            self.spin_until(future.done, self.timeout_s + 60.0)
            return future.result() if future.done() else None
        finally:
            self.node.destroy_client(client)

    def offered_services(self) -> dict[str, list[str]]:
        """Service name -> types, once the first standard service is discovered (or the timeout)."""
        wanted = self.prefix + SERVICES["GetSimulatorFeatures"][0]
        deadline = time.monotonic() + self.timeout_s
        while True:
            offered = dict(self.node.get_service_names_and_types())
            if wanted in offered or time.monotonic() >= deadline:
                time.sleep(0.5)  # the rest of that simulator's services, discovered with it
                self.offered = dict(self.node.get_service_names_and_types())
                return self.offered
            time.sleep(0.2)

    def run(self, family, instance) -> list[Finding]:
        from simulation_interfaces.msg import Result, SimulationState, SimulatorFeatures
        from simulation_interfaces.srv import GetEntities, GetEntitiesStates, GetSimulationState, LoadWorld
        from simulation_interfaces.srv import GetSimulatorFeatures, StepSimulation

        findings: list[Finding] = []
        offered = self.offered or self.offered_services()
        for interface, (name, type_name) in SERVICES.items():
            full = self.prefix + name
            types = offered.get(full)
            ok = types is not None and type_name in types
            detail = (f"{full}" if ok else f"{full} not offered" if types is None
                      else f"{full} has type {types}, needs {type_name}")
            findings.append(Finding(f"service {interface}", ok, detail))
        action_name = self.prefix + ACTION[1]
        action_ok = f"{action_name}/_action/send_goal" in offered
        findings.append(Finding(f"action {ACTION[0]}", action_ok,
                                action_name if action_ok else f"{action_name} not offered"))

        answer = self.call(GetSimulatorFeatures, SERVICES["GetSimulatorFeatures"][0], GetSimulatorFeatures.Request())
        stated = set(answer.features.features) if answer is not None else set()
        for feature in FEATURES:
            ok = getattr(SimulatorFeatures, feature) in stated
            findings.append(Finding(f"feature {feature}", ok,
                                    "stated" if ok else "not stated by GetSimulatorFeatures" if answer is not None
                                    else "GetSimulatorFeatures did not answer"))

        request = LoadWorld.Request()
        request.world_resource.resource_string = instance.to_json()
        loaded = self.call(LoadWorld, SERVICES["LoadWorld"][0], request)
        load_ok = loaded is not None and loaded.result.result == Result.RESULT_OK
        findings.append(Finding("world: LoadWorld of an instance", load_ok,
                                f"loaded {instance.instance_id}" if load_ok else
                                "LoadWorld did not answer" if loaded is None else loaded.result.error_message))

        entities = self.call(GetEntities, SERVICES["GetEntities"][0], GetEntities.Request())
        names = list(entities.entities) if entities is not None else []
        for expected in expected_entities(family, instance):
            ok = entity_matches(expected, names)
            findings.append(Finding(f"entity {expected}", ok, "offered" if ok else
                                    "not among GetEntities' answer" if entities is not None
                                    else "GetEntities did not answer"))

        state = self.call(GetSimulationState, SERVICES["GetSimulationState"][0], GetSimulationState.Request())
        paused = state is not None and state.state.state == SimulationState.STATE_PAUSED
        findings.append(Finding("step control: simulation paused between steps", paused,
                                "paused" if paused else "no answer" if state is None
                                else f"state {state.state.state}"))

        topics = expected_topics(family)
        stamps: dict[str, list[float]] = {topic: [] for topic in topics}
        subscriptions = self._subscribe(topics, stamps)
        # A simulator may publish only to matched readers: let both sides see the match.
        self.spin_until(lambda: all(self.node.count_publishers(t) for t in topics), self.timeout_s)
        self.spin_until(lambda: False, 1.0)
        before = self._sim_time(GetEntitiesStates)
        dt = _step_size(family, instance)
        steps = int(round(STEP_S / dt))
        stepped = self.call(StepSimulation, SERVICES["StepSimulation"][0], StepSimulation.Request(steps=steps))
        self.spin_until(lambda: False, 0.5)  # the last messages of the step
        after = self._sim_time(GetEntitiesStates)
        moved = after - before if before is not None and after is not None else 0.0
        step_ok = stepped is not None and stepped.result.result == Result.RESULT_OK and moved > 0.0
        if stepped is None:
            detail = "StepSimulation did not answer"
        elif stepped.result.result != Result.RESULT_OK:
            detail = stepped.result.error_message or f"StepSimulation refused (result {stepped.result.result})"
        elif step_ok:
            detail = f"{steps} steps moved sim time {before:.3f} -> {after:.3f} s"
        else:
            detail = "sim time (entity state stamps) did not move"
        findings.append(Finding("step control: StepSimulation moves sim time", step_ok, detail))
        duration = moved if step_ok else steps * dt

        topic_types = dict(self.node.get_topic_names_and_types())
        for topic, (type_name, rate) in topics.items():
            if type_name not in topic_types.get(topic, []):
                findings.append(Finding(f"topic {topic}", False, f"no {type_name} publisher"))
                continue
            findings.append(rate_finding(f"topic {topic}", stamps[topic], rate, duration))
        arm = self.node.get_subscriptions_info_by_topic(ARM_TOPIC)
        arm_ok = any(i.topic_type == "trajectory_msgs/msg/JointTrajectory" for i in arm)
        findings.append(Finding(f"topic {ARM_TOPIC}", arm_ok, "subscribed (JointTrajectory)" if arm_ok
                                else "no JointTrajectory subscriber"))
        for subscription in subscriptions:
            self.node.destroy_subscription(subscription)
        return findings

    def _subscribe(self, topics, stamps):
        from geometry_msgs.msg import WrenchStamped
        from sensor_msgs.msg import Image, JointState

        from labference_ros.msgconv import stamp_to_s

        types = {"sensor_msgs/msg/JointState": JointState, "geometry_msgs/msg/WrenchStamped": WrenchStamped,
                 "sensor_msgs/msg/Image": Image}
        return [self.node.create_subscription(types[type_name], topic,
                                              lambda msg, t=topic: stamps[t].append(stamp_to_s(msg.header.stamp)),
                                              50)
                for topic, (type_name, _rate) in topics.items()]

    def _sim_time(self, srv_type) -> float | None:
        from simulation_interfaces.msg import Result

        from labference_ros.msgconv import stamp_to_s

        answer = self.call(srv_type, SERVICES["GetEntitiesStates"][0], srv_type.Request())
        if answer is None or answer.result.result != Result.RESULT_OK or not answer.states:
            return None
        return round(stamp_to_s(answer.states[0].header.stamp), 9)


def check_namespace(namespace: str) -> None:
    """ValueError unless ``namespace`` is a ROS namespace ('' or /a/b)."""
    if namespace and not re.fullmatch(r"(/[A-Za-z_][A-Za-z0-9_]*)+/?", namespace):
        raise ValueError(f"bad namespace {namespace!r} (e.g. /sim)")


def _step_size(family, instance) -> float:
    """The physics step of the instance's scene (what one StepSimulation step is)."""
    return float(family.build_scene(instance, fiducials=False).spec.option.timestep)


def run_sim_check(family, instance, namespace: str, timeout_s: float, echo) -> int:
    """Run the checks and print one line per feature and the verdict; the exit status."""
    from labference_ros.nodes.runtime import init_ros

    check_namespace(namespace)
    rclpy = init_ros([])
    node = rclpy.create_node("labference_sim_check")
    try:
        check = SimCheck(node, namespace, timeout_s)
        offered = check.offered_services()
        if check.prefix + SERVICES["GetSimulatorFeatures"][0] not in offered:
            echo(f"no simulator answered: no {check.prefix}{SERVICES['GetSimulatorFeatures'][0]} service "
                 f"within {timeout_s:g} s on this ROS domain")
            return 2
        findings = check.run(family, instance)
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    for finding in findings:
        echo(finding.line())
    echo(verdict(findings))
    return 0 if all(f.ok for f in findings) else 1
