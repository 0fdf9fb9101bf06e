"""What the policy bridge's episode (core.bridge_machine.BridgeEpisode) asks of ROS:
lab_sim's advances, the commands, the observation and support receipts, the chunks
and reports out; the newest inputs in. The node (nodes/policy_bridge.py) holds the
subscriptions, the timers and the episode; this is its ``io``."""
from __future__ import annotations

import json

import numpy as np
from builtin_interfaces.msg import Duration, Time
from rclpy.qos import DurabilityPolicy, QoSProfile
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import Image, JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from labference.msg import ActionChunk, DeliveryReceipt, GripperCommand, Operation
from labference.srv import Advance, ReportOperation
from labference_ros.cdr_views import header_stamp_s
from labference_ros.core.bridge_machine import AdvanceAsk
from labference_ros.msgconv import s_to_stamp, stamp_to_s
from labference_ros.nodes.matching import command_qos
from labference_ros.perception.camera import world_camera_calibration

# Deliveries and their echoes are latched: a receipt published before the peer's
# subscription matched (discovery can take seconds) still arrives.
RECEIPT_QOS = QoSProfile(depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL)


class BridgeIO:
    def __init__(self, node, controller: str, report_mirror: str):
        self.node = node
        self.pub_receipt = node.create_publisher(DeliveryReceipt, "/policy/receipts", RECEIPT_QOS)
        self.pub_chunk = node.create_publisher(ActionChunk, "/policy/action_chunks", QoSProfile(depth=50))
        self.pub_traj = node.create_publisher(JointTrajectory, f"/{controller}/joint_trajectory", command_qos())
        self.pub_grip = node.create_publisher(GripperCommand, "/panda_gripper/command", command_qos())
        self.advance = node.create_client(Advance, "/lab_sim/advance")
        # Systems with an explicit report track (e.g. the agent's commitments).
        self.report = node.create_client(ReportOperation, "/referee/report_operation")
        # A second referee scoring the same episode (the rehearsal's shadow) gets every report too.
        self.report_mirror = node.create_client(ReportOperation, report_mirror) if report_mirror else None

    def advance_server_ready(self) -> bool:
        return self.advance.service_is_ready()

    def call_advance(self, ask: AdvanceAsk):
        request = Advance.Request(duration_s=float(ask.duration), include_world_state=self.node.system.privileged)
        s_to_stamp(ask.t, request.command_stamp)
        request.arm_command_stamps = [s_to_stamp(x, Time()) for x in ask.arm_stamps]
        request.gripper_command_stamps = [s_to_stamp(x, Time()) for x in ask.gripper_stamps]
        future = self.advance.call_async(request)
        future.add_done_callback(lambda _reply: self.node.tick())
        return future

    def forget_advance(self, future) -> None:
        self.advance.remove_pending_request(future)

    def keep_boundary_state(self, answer: Advance.Response) -> None:
        """The joint and (privileged) world state lab_sim measured at the boundary, serialized
        as the topics would deliver them."""
        if answer.joint_state.name:  # empty while lab_sim has measured nothing since its reset
            self.node.latest["joints"] = serialize_message(answer.joint_state)
        if len(answer.world_state):  # asked for by privileged systems only
            self.node.latest["world"] = answer.world_state.tobytes()

    def stamp(self, key) -> float | None:
        source = self.node.sampled.get(key)
        if source is not None:
            data = source.newest()
            if data is not None:
                self.node.latest[key] = data
        data = self.node.latest.get(key)
        return header_stamp_s(data) if data is not None else None

    def poll_inputs(self, on: bool) -> None:
        if not on:
            self.node.input_poll.cancel()
        elif self.node.sampled:
            self.node.input_poll.reset()

    def poll_inference(self, on: bool) -> None:
        if on:
            self.node.inference_poll.reset()
        else:
            self.node.inference_poll.cancel()

    def deliver_observation(self, t: float) -> None:
        """The observation at t from the newest inputs, and its delivery receipt."""
        images, stamps = {}, {}
        for cam in self.node.cameras:
            m = deserialize_message(self.node.latest[f"image:{cam}"], Image)
            images[cam] = np.frombuffer(bytes(m.data), np.uint8).reshape(m.height, m.width, 3)
            stamps[cam] = stamp_to_s(m.header.stamp)
        js = deserialize_message(self.node.latest["joints"], JointState)
        # What a lab tells its systems: the world camera's calibration from the cell
        # description (mount) and the delivered image (size), never from the simulator.
        front = images["front"]
        calib = {"front": world_camera_calibration("front", front.shape[0], front.shape[1],
                                                   self.node.family.cell_description()).to_dict()}
        loop = self.node.ep.loop
        obs = loop.observe(t, images, stamps, dict(zip(js.name, js.position)), calib)
        msg = DeliveryReceipt(episode_id=self.node.ep.id, receipt_id=f"{obs.observation_id}:r",
                              kind="observation", payload_id=obs.observation_id,
                              opportunity_id=-1, evidence_version=loop.obs_ev, status="delivered",
                              detail_json=json.dumps(loop.receipt()))
        s_to_stamp(t, msg.header.stamp)
        self.pub_receipt.publish(msg)

    def echo(self, observation_id: str) -> DeliveryReceipt | None:
        return self.node.echoes.get(observation_id)

    def forward_support(self, receipt: dict, t: float) -> None:
        msg = DeliveryReceipt(episode_id=self.node.ep.id, receipt_id=receipt["receipt_id"], kind="intervention",
                              payload_id=receipt["payload_id"], opportunity_id=receipt["opportunity_id"],
                              evidence_version=receipt["evidence_version"], status="delivered",
                              substituted_output_json=json.dumps(receipt["intervention"]["payload"]),
                              detail_json=json.dumps({"intervention": receipt["intervention"]}))
        s_to_stamp(t, msg.header.stamp)
        self.pub_receipt.publish(msg)

    def evaluator_view(self):
        return self.node.family.evaluator_view(self.node.ep.instance, self.node.world_decoder(self.node.latest["world"]))

    def submit_inference(self, obs, view):
        return self.node.pool.submit(self.node.system.act, obs, view)

    def send_report(self, report) -> None:
        op = report.operation
        request = ReportOperation.Request(
            episode_id=self.node.ep.id, opportunity_id=report.opportunity_id, evidence_version=report.evidence_version,
            operation=Operation(type=op["type"], object=op["object"], destination=op["destination"]),
            source=report.source)
        self.report.call_async(request)
        if self.report_mirror is not None:
            self.report_mirror.call_async(request)

    def publish_chunk(self, verdict) -> None:
        loop, req = self.node.ep.loop, verdict.requested
        msg = ActionChunk(episode_id=self.node.ep.id, chunk_id=loop.chunk_id, observation_id=loop.obs_id,
                          evidence_version=loop.obs_ev, representation=self.node.spec.representation,
                          mode=self.node.spec.mode, frame=self.node.spec.frame,
                          control_frequency_hz=self.node.spec.control_frequency_hz)
        if req is not None and req.ndim == 2:
            msg.length, msg.dim = req.shape
            msg.data = [float(x) for x in req.reshape(-1)]
        s_to_stamp(self.node.ep.t, msg.header.stamp)
        self.pub_chunk.publish(msg)

    def send_rows(self, rows, dt: float, t: float) -> None:
        """Arm targets one interval apart from the boundary t (JTC replace semantics)."""
        traj = JointTrajectory(joint_names=list(self.node.spec.dimension_names[:7]))
        s_to_stamp(t, traj.header.stamp)
        for k, row in enumerate(rows, start=1):
            ns = int(round(k * dt * 1e9))
            traj.points.append(JointTrajectoryPoint(positions=[float(x) for x in row[:7]],
                                                    time_from_start=Duration(sec=ns // 10**9, nanosec=ns % 10**9)))
        self.pub_traj.publish(traj)

    def send_gripper(self, value, t: float) -> None:
        """The gripper command of the interval from boundary t."""
        c = self.node.spec.gripper.command(value)
        msg = GripperCommand(grasp=c["grasp"], width=c["width"], speed=c["speed"], force=c["force"],
                             epsilon_inner=c["epsilon_inner"], epsilon_outer=c["epsilon_outer"])
        s_to_stamp(t, msg.header.stamp)
        self.pub_grip.publish(msg)

    def warn(self, text: str) -> None:
        self.node.get_logger().warning(text)

    def error(self, text: str) -> None:
        self.node.get_logger().error(text)

    def tick_again(self) -> None:
        self.node._tick_again = True

    def record(self, entry: dict) -> None:
        self.node.record(entry)

    def episode_ended(self, state: str, reason: str) -> None:
        self.node.episode_ended(state, reason)
