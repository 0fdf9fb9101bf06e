"""What lab_sim publishes: clock, joints, the load-cell wrench and its tare, evaluator
world state, camera frames and the static frames, each sync-mode advance's
measurements held while physics runs and then written a topic at a time."""
from __future__ import annotations

import dataclasses
import time

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import TransformStamped, WrenchStamped
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import serialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, JointState
from tf2_msgs.msg import TFMessage

from labference.msg import ObjectState, WorldState
from labference_ros.cdr_views import WorldStateEncoder
from labference_ros.msgconv import fill_world_msg, image_data, s_to_stamp
from labference_ros.nodes.matching import measurement_qos
from labference_ros.sim.frames import camera_frame_id
from labference_ros.sim.sync_protocol import DisplayReadings, stamp_ns


def wrench_msg(w, stamp) -> WrenchStamped:
    msg = WrenchStamped()
    msg.header.stamp, msg.header.frame_id = stamp, w.frame_id
    (msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z) = w.force
    (msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z) = w.torque
    return msg


# What the writers keep for a reliable reader that fell behind (the recorder on a loaded
# machine): DDS resends only what a writer still holds. In sync mode 2000 samples (20 s of
# sim at 100 Hz) and frames up to IMAGE_HISTORY_BYTES per camera, at least 2 and at most
# 10. A sample the shared-memory transport drops under load is resent at the writer's
# next heartbeat, seconds later, while sim time runs on at several times real time: 200
# samples (2 s of sim) let a CI run lose 0.1 s of joint states and wrenches for good
# (docs/pitfalls.md). In realtime mode 10 and 2: a reader that lags should skip to the
# present, as on a real cell, and a deep backlog resent to it under load kept the sensor
# chain behind.
STATE_HISTORY = {"sync": 2000, "realtime": 10}
# The measurement chain the referee and the audit score from (transient local).
MEASUREMENT_HISTORY = {"sync": 2000, "realtime": 200}
IMAGE_HISTORY_BYTES = 4 << 20
IMAGE_HISTORY = {"sync": (2, 10), "realtime": (2, 2)}


def image_history(step_mode: str, height: int, width: int) -> int:
    """Frames a camera's writer keeps: as many as fit IMAGE_HISTORY_BYTES of rgb8, within the mode's bounds."""
    low, high = IMAGE_HISTORY[step_mode]
    return max(low, min(high, IMAGE_HISTORY_BYTES // max(1, 3 * height * width)))


class SimOutputs:
    def __init__(self, node, backend, family, display: DisplayReadings):
        self.backend, self.family, self.display = backend, family, display
        self.environment = None  # the family's environment behaviour this episode (TaskFamily.make_environment)
        # This timeline's last measurement, as published: an advance's answer carries it.
        self.last_joints: JointState | None = None
        self.last_world = b""
        # Sync mode: an advance's measurements, held until a frame is due or the advance
        # ends and then written a topic at a time (publisher -> messages, in order), so that
        # a reader can take several in one wake-up.
        self.holding = False
        self.held: dict[object, list] = {}
        qos = QoSProfile(depth=10)
        state_qos = QoSProfile(depth=STATE_HISTORY[node.step_mode])
        self.pub_clock = node.create_publisher(Clock, "/clock", state_qos)
        self.pub_joints = node.create_publisher(JointState, "/joint_states", state_qos)
        self.pub_wrench = node.create_publisher(WrenchStamped, "/balance/wrench",
                                                measurement_qos(MEASUREMENT_HISTORY[node.step_mode]))
        self.pub_tare = node.create_publisher(
            WrenchStamped, "/balance/tare", QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self.pub_world = node.create_publisher(WorldState, "/evaluator/world_state",
                                               measurement_qos(MEASUREMENT_HISTORY[node.step_mode]))
        # Serialized by rclpy once per shape of world state, then packed (cdr_views).
        self.world_encoder = WorldStateEncoder(
            lambda m, supports: serialize_message(fill_world_msg(WorldState(), m, ObjectState, supports)))
        # Fixtures at this layout's poses and the cameras' optical frames (sim/frames.py).
        self.pub_tf_static = node.create_publisher(
            TFMessage, "/tf_static", QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self.cameras = backend.cameras
        render = backend.render_settings
        self.pub_images = {c: node.create_publisher(
            Image, f"/cameras/{c}/image_raw",
            QoSProfile(depth=image_history(node.step_mode, *render.size(c)), reliability=ReliabilityPolicy.RELIABLE))
            for c in self.cameras}
        self.pub_info = {c: node.create_publisher(CameraInfo, f"/cameras/{c}/camera_info", state_qos)
                         for c in self.cameras}

    def observed(self) -> dict:
        """The volatile topics a tested system observes, topic -> publisher: the first
        sample of an episode goes out once, so it must reach every reader (matching.unmatched_readers)."""
        topics = {"/joint_states": self.pub_joints}
        topics.update({f"/cameras/{c}/image_raw": pub for c, pub in self.pub_images.items()})
        return topics

    def forget_last(self) -> None:
        """A new timeline: nothing measured in it yet."""
        self.last_joints, self.last_world = None, b""

    def measurements(self, t: float, environment_may_act: bool = True) -> None:
        m = self.backend.measure()
        # The environment acts only at a camera tick, so that the frame of this tick (taken
        # after it) is the first the cameras deliver from then on: no observation after it
        # can carry an older image (the policy bridge takes the frame of the last tick).
        # It acts before anything of this instant is published.
        if self.environment is not None and environment_may_act:
            happened = self.environment.update(m, self.backend.model, self.backend.data)
            if happened:  # the state changed at this instant: publish it after the change, saying why
                m = dataclasses.replace(self.backend.measure(), environment=happened)
        stamp = s_to_stamp(t, Time())
        # Volatile topics go out only while someone reads them: a sample no reader has
        # matched is dropped anyway, and each write costs the middleware tens of us.
        if self.pub_clock.get_subscription_count():
            self._publish(self.pub_clock, Clock(clock=stamp))
        js = self.backend.joint_state()
        jmsg = JointState(name=list(js.names), position=list(js.position), velocity=list(js.velocity),
                          effort=list(js.effort))
        jmsg.header.stamp = stamp
        if self.pub_joints.get_subscription_count():  # none in sync mode: the advance's answer carries it
            self._publish(self.pub_joints, jmsg)
        self.last_joints = jmsg
        if self.backend.has_load_cell:
            self._publish(self.pub_wrench, wrench_msg(self.backend.pan_wrench(), stamp))
        self.last_world = self.world_encoder(m, self.family.support_labels(m))
        self._publish(self.pub_world, self.last_world)

    def _publish(self, publisher, msg) -> None:
        if self.holding:
            self.held.setdefault(publisher, []).append(msg)
        else:
            self._write(publisher, msg)

    def release_held(self) -> None:
        """Publish the measurements held so far, each topic's in order."""
        held, self.held = self.held, {}
        for publisher, messages in held.items():
            for msg in messages:
                self._write(publisher, msg)

    def _write(self, publisher, msg) -> None:
        if publisher is not self.pub_wrench:
            publisher.publish(msg)
            return
        stamp = stamp_ns(msg.header.stamp)
        self.display.sending_wrench(stamp, time.time_ns())
        publisher.publish(msg)
        self.display.wrench_sent(stamp)

    def frames(self, t: float) -> None:
        stamp = s_to_stamp(t, Time())
        for cam in self.cameras:
            if self.pub_images[cam].get_subscription_count() == 0:
                continue
            pixels = self.backend.render(cam)
            if self.environment is not None and self.environment.occluded(t):
                pixels = np.zeros_like(pixels)  # the occluder: nothing useful, same size and encoding
            img = Image(height=pixels.shape[0], width=pixels.shape[1], encoding="rgb8", is_bigendian=0,
                        step=pixels.shape[1] * 3)
            img.data = image_data(pixels)  # one copy of the frame, not two (msgconv.image_data)
            img.header.stamp, img.header.frame_id = stamp, camera_frame_id(cam)
            self.pub_images[cam].publish(img)
            if self.pub_info[cam].get_subscription_count():
                info = CameraInfo(height=img.height, width=img.width)
                info.header = img.header
                self.pub_info[cam].publish(info)

    def tare(self) -> None:
        """The empty pan's wrench at sim time 0, before the first measurement."""
        self.pub_tare.publish(wrench_msg(self.backend.empty_pan_wrench(), s_to_stamp(0.0, Time())))

    def static_frames(self) -> None:
        from labference_ros.sim.frames import cell_frames

        transforms = []
        for f in cell_frames(self.backend.model, self.backend.data, self.family.cell_description()):
            t = TransformStamped(child_frame_id=f.child)
            t.header.frame_id = f.parent
            t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = f.translation
            q = t.transform.rotation
            q.w, q.x, q.y, q.z = f.quaternion
            transforms.append(t)
        self.pub_tf_static.publish(TFMessage(transforms=transforms))
