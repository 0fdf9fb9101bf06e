"""monitor: what RViz needs to show a running evaluation (launch with monitor:=true).

/robot_description (latched URDF), /tf (robot links from /joint_states by the
URDF's kinematics) and /tf_static (the robot's fixed joints; lab_sim publishes
the fixtures and cameras), and /referee/markers from the referee's topics
(marker logic: labference_ros.monitoring.markers). Evaluator-side: it reads
/evaluator/world_state, so its outputs never go to a tested system.
"""
from __future__ import annotations

import json

from geometry_msgs.msg import TransformStamped
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage
from visualization_msgs.msg import Marker, MarkerArray

from labference.msg import BalanceReading, DecisionOpportunity, LegalSet, RefereeEvent, WorldState
from labference_ros.monitoring import description
from labference_ros.monitoring.kinematics import RobotKinematics
from labference_ros.monitoring.markers import MonitorState, build_markers
from labference_ros.msgconv import stamp_to_s
from labference_ros.nodes.runtime import run_node

MARKER_TYPES = {"cylinder": Marker.CYLINDER, "text": Marker.TEXT_VIEW_FACING, "sphere": Marker.SPHERE}


def transform_msg(t, stamp) -> TransformStamped:
    msg = TransformStamped()
    msg.header.stamp, msg.header.frame_id, msg.child_frame_id = stamp, t.parent, t.child
    tr, q = msg.transform.translation, msg.transform.rotation
    tr.x, tr.y, tr.z = t.translation
    q.w, q.x, q.y, q.z = t.quaternion
    return msg


def marker_msg(spec, stamp) -> Marker:
    m = Marker(ns=spec.ns, id=spec.id, type=MARKER_TYPES[spec.kind], action=Marker.ADD, text=spec.text)
    m.header.stamp, m.header.frame_id = stamp, spec.frame
    p, q = m.pose.position, m.pose.orientation
    p.x, p.y, p.z = spec.position
    q.w, q.x, q.y, q.z = spec.orientation
    m.scale.x, m.scale.y, m.scale.z = spec.scale
    m.color.r, m.color.g, m.color.b, m.color.a = spec.colour
    return m


def op_dict(op) -> dict:
    return {"type": op.type, "object": op.object, "destination": op.destination}


class Monitor(Node):
    def __init__(self):
        super().__init__("monitor")
        p = self.declare_parameters("", [("urdf_path", ""), ("robot_root", description.ROBOT_ROOT),
                                         ("tf_rate", 20.0), ("marker_rate", 10.0)])
        v = {x.name: x.value for x in p}
        urdf_path = v["urdf_path"] or str(description.default_urdf_dir() / description.CELL_URDF)
        self.urdf_xml = description.compose(urdf_path)
        self.kinematics = RobotKinematics(self.urdf_xml, v["robot_root"])
        self.tf_period = 1.0 / float(v["tf_rate"])
        self.marker_period = 1.0 / float(v["marker_rate"])
        self.last_tf = self.last_markers = float("-inf")
        self.state = MonitorState()
        self.stamp = None  # newest sim-time stamp seen on the referee's inputs

        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        qos = QoSProfile(depth=100)
        self.pub_description = self.create_publisher(String, "/robot_description", latched)
        self.pub_tf = self.create_publisher(TFMessage, "/tf", qos)
        self.pub_tf_static = self.create_publisher(TFMessage, "/tf_static", latched)
        self.pub_markers = self.create_publisher(MarkerArray, "/referee/markers", qos)
        self.pub_description.publish(String(data=self.urdf_xml))
        self.publish_static_frames()

        self.create_subscription(JointState, "/joint_states", self.on_joints, qos)
        self.create_subscription(WorldState, "/evaluator/world_state", self.on_world, QoSProfile(depth=200))
        self.create_subscription(BalanceReading, "/balance/reading", self.on_reading, qos)
        self.create_subscription(RefereeEvent, "/referee/events", self.on_event, QoSProfile(depth=500))
        self.create_subscription(LegalSet, "/referee/legal_set", self.on_legal, qos)
        self.create_subscription(DecisionOpportunity, "/referee/opportunities", self.on_opportunity, qos)

    # robot ---------------------------------------------------------------------
    def publish_static_frames(self) -> None:
        zero = self.get_clock().now().to_msg()
        zero.sec, zero.nanosec = 0, 0
        self.pub_tf_static.publish(TFMessage(transforms=[transform_msg(t, zero)
                                                         for t in self.kinematics.static_transforms()]))

    def on_joints(self, msg):
        t = stamp_to_s(msg.header.stamp)
        if t < self.last_tf or self.last_tf == float("-inf"):
            # A new timeline (the first joint state, or a reset that rewinds sim time): the
            # robot's static frames again, so each episode's bag has its own (the recorder
            # writes no earlier episode's /tf_static into it).
            self.publish_static_frames()
        if t < self.last_tf:  # a reset rewinds sim time
            self.last_tf = float("-inf")
        if t - self.last_tf < self.tf_period - 1e-9:
            return
        self.last_tf = t
        positions = dict(zip(msg.name, msg.position))
        transforms = self.kinematics.moving_transforms(positions)
        self.pub_tf.publish(TFMessage(transforms=[transform_msg(x, msg.header.stamp) for x in transforms]))

    # referee state -------------------------------------------------------------
    def _episode(self, episode_id: str, stamp) -> None:
        if episode_id and self.state.new_episode(episode_id):
            self.last_markers = float("-inf")
        self.stamp = stamp

    def on_world(self, msg: WorldState):
        self.state.on_objects({o.name: {"kind": o.kind,
                                        "position": (o.pose.position.x, o.pose.position.y, o.pose.position.z),
                                        "orientation": (o.pose.orientation.w, o.pose.orientation.x,
                                                        o.pose.orientation.y, o.pose.orientation.z)}
                               for o in msg.objects})
        self.stamp = msg.header.stamp
        self._maybe_publish(stamp_to_s(msg.header.stamp))

    def on_reading(self, msg: BalanceReading):
        self.state.on_reading({"displayed_g": msg.displayed_g, "stable": msg.stable, "valid": msg.valid,
                               "overload": msg.overload, "invalid_reason": msg.invalid_reason,
                               "t": stamp_to_s(msg.header.stamp)})

    def on_event(self, msg: RefereeEvent):
        self._episode(msg.episode_id, msg.header.stamp)
        self.state.on_event({"category": msg.category, "object": msg.object, "operation": op_dict(msg.operation),
                             "opportunity_id": msg.opportunity_id, "t": stamp_to_s(msg.header.stamp),
                             "detail": json.loads(msg.detail_json or "{}")})
        self.publish_markers()

    def on_legal(self, msg: LegalSet):
        self._episode(msg.episode_id, msg.header.stamp)
        self.state.on_legal_set(msg.opportunity_id, [op_dict(op) for op in msg.operations])
        self.publish_markers()

    def on_opportunity(self, msg: DecisionOpportunity):
        self._episode(msg.episode_id, msg.header.stamp)
        self.state.on_opportunity({"id": msg.id, "evidence_version": msg.evidence_version,
                                   "trigger": msg.trigger, "t": stamp_to_s(msg.header.stamp)})
        self.publish_markers()

    def _maybe_publish(self, t: float) -> None:
        if t < self.last_markers:
            self.last_markers = float("-inf")
        if t - self.last_markers >= self.marker_period - 1e-9:
            self.last_markers = t
            self.publish_markers()

    def publish_markers(self) -> None:
        if self.stamp is None:
            return
        clear = Marker(action=Marker.DELETEALL)
        clear.header.stamp = self.stamp
        markers = [clear]
        markers += [marker_msg(spec, self.stamp) for spec in build_markers(self.state)]
        self.pub_markers.publish(MarkerArray(markers=markers))


def main(args=None):
    raise SystemExit(run_node(Monitor, args))


if __name__ == "__main__":
    main()
