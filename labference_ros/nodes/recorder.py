"""recorder: one rosbag2 (MCAP) directory per episode with every topic of the graph,
written as the exact wire bytes; videos of the camera streams after finish.

Episode boundaries come from the episode runner: /recorder/start_episode (before
the simulator reset, so the bag holds the episode from its first message) and
/recorder/finish_episode (after the referee's finish, so the final events are
in the bag). The bag is closed cleanly on finish, on a new start and on SIGTERM.
A start answers once the world state's writer and every publisher the graph
announces are matched (at most match_timeout_s), so a recorder started with
the graph misses no first message;
the topics the audit re-scores from are read transient local, so that a writer
that matches the recorder late still delivers what it sent before.
"""
from __future__ import annotations

import importlib
import json
import pathlib
import struct
import time

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message

from labference.msg import DeliveryReceipt, RefereeEvent
from labference.srv import FinishEpisode, StartEpisode
from labference_ros.nodes.catch_up import CatchUp
from labference_ros.nodes.matching import PAIRED_MEASUREMENT_TOPICS, await_matched
from labference_ros.nodes.run_dir import outside_run_dir
from labference_ros.nodes.runtime import run_node
from labference_ros.recording.bag_writer import EpisodeBag, OfferedQos
from labference_ros.recording.completeness import CUSTOM_KEY as COMPLETENESS_KEY
from labference_ros.recording.completeness import Completeness, periodic
from labference_ros.recording.episode_meta import episode_custom_data
from labference_ros.recording.topics import DURABLE_TOPICS, EPISODE_LATCHED_TOPICS, LATCHED_TOPICS, RECORDED_TOPICS, \
    wanted
from labference_ros.tasks import DEFAULT_FAMILY
from labference_ros.tasks import family as task_family


def msg_class(msgtype: str):
    pkg, kind, name = msgtype.split("/")
    return getattr(importlib.import_module(f"{pkg}.{kind}"), name)


# Every graph's referee scores from it, so a start waits until its writer is matched:
# a writer matched after the reset delivers only its last samples (measurement_qos
# keeps 200, 2 s of sim), and the bag would begin late.
SCORED_FROM = "/evaluator/world_state"


def header_stamp_s(data: bytes) -> float:
    """Header stamp of a serialized message whose first field is std_msgs/Header
    (CDR: 4-byte encapsulation, then int32 sec, uint32 nanosec)."""
    order = "<" if data[1:2] == b"\x01" else ">"
    sec, nanosec = struct.unpack_from(order + "iI", data, 4)
    return sec + nanosec * 1e-9


def header_stamp_ns(data: bytes) -> int:
    """header_stamp_s in integer nanoseconds (a tally of instants must not round)."""
    order = "<" if data[1:2] == b"\x01" else ">"
    sec, nanosec = struct.unpack_from(order + "iI", data, 4)
    return sec * 1_000_000_000 + nanosec


def merge_static_transforms(previous: bytes | None, data: bytes) -> bytes:
    """One serialized TFMessage with the transforms of both, the newer winning per child frame."""
    from rclpy.serialization import deserialize_message, serialize_message
    from tf2_msgs.msg import TFMessage

    if previous is None:
        return data
    merged = {t.child_frame_id: t for t in deserialize_message(previous, TFMessage).transforms}
    merged.update({t.child_frame_id: t for t in deserialize_message(data, TFMessage).transforms})
    return serialize_message(TFMessage(transforms=list(merged.values())))


class Recorder(Node):
    def __init__(self):
        super().__init__("recorder")
        self.family = task_family(str(self.declare_parameter("task", DEFAULT_FAMILY).value))
        self.write_videos = bool(self.declare_parameter("videos", True).value)
        self.finish_timeout_s = float(self.declare_parameter("finish_timeout_s", 5.0).value)
        self.bag: EpisodeBag | None = None
        self.bag_error: OSError | None = None  # the failed write that stopped this episode's bag
        self.episode_id = ""
        self.output_dir: pathlib.Path | None = None
        # Start and finish are idempotent (a reply Fast DDS dropped is asked for again): the
        # request that started the bag under way, and the last finish's answer.
        self.started: tuple | None = None
        self.finish_answer: tuple | None = None
        self.types: dict[str, str] = {}
        self.latched: dict[str, bytes] = {}
        self.referee_ended: set[str] = set()
        # Observations the referee acknowledged (/referee/receipts) and those whose delivery
        # (/policy/receipts, what the audit re-scores from) is in the bag, as (episode, payload).
        self.acknowledged: set[tuple[str, str]] = set()
        self.deliveries_recorded: set[tuple[str, str]] = set()
        self.watermark: dict[str, float] = {}  # newest header stamp seen per measurement topic
        self.completeness = Completeness()  # per periodic topic, the stamps this episode's bag holds
        self.subscriptions_by_topic: dict[str, object] = {}
        self.current_reader: dict[str, int] = {}  # per topic, the subscription whose samples are recorded
        self.match_timeout_s = float(self.declare_parameter("match_timeout_s", 5.0).value)
        # record:=false: no subscriptions at all (receiving every camera frame for
        # nothing cost about a tenth of an episode's CPU); start requests are refused.
        self.enabled = bool(self.declare_parameter("enabled", True).value)
        if self.enabled:
            for topic, msgtype in RECORDED_TOPICS.items():
                self._subscribe(topic, msgtype, latched=topic in LATCHED_TOPICS, durable=topic in DURABLE_TOPICS)
            self.create_timer(1.0, self._discover)
        self.create_service(StartEpisode, "/recorder/start_episode", self.on_start)
        # A finish waits for the recording to catch up. One timer for the node's life polls
        # it, ticking only while a finish waits (50 Hz of idle timer callbacks were most of a
        # disabled recorder's CPU). Timers created and destroyed inside each finish were the
        # one unusual thing about the recorder's rare SIGSEGVs under load.
        self.catch_up = CatchUp(self)
        # Its own callback group: while finishing awaits the referee's episode_end,
        # the subscriptions (default, mutually exclusive group) must still run.
        self.create_service(FinishEpisode, "/recorder/finish_episode", self.on_finish,
                            callback_group=MutuallyExclusiveCallbackGroup())

    # subscriptions ------------------------------------------------------------
    def _subscribe(self, topic: str, msgtype: str, latched: bool = False, best_effort: bool = False,
                   durable: bool = False) -> None:
        try:
            cls = msg_class(msgtype)
        except (ImportError, AttributeError, ValueError):
            self.get_logger().warning(f"not recording {topic}: type {msgtype} is not importable")
            self.types[topic] = ""
            return
        # Latched: one sample per publisher (depth 10 keeps those of several publishers).
        # Durable: a late match still delivers what the writer sent before it.
        qos = QoSProfile(depth=10 if latched else 1000,
                         durability=(DurabilityPolicy.TRANSIENT_LOCAL if latched or durable
                                     else DurabilityPolicy.VOLATILE),
                         reliability=ReliabilityPolicy.BEST_EFFORT if best_effort else ReliabilityPolicy.RELIABLE)
        self.types[topic] = msgtype
        reader = self.current_reader.get(topic, 0) + 1
        self.current_reader[topic] = reader
        self.subscriptions_by_topic[topic] = self.create_subscription(
            cls, topic, lambda data, t=topic, r=reader: self._on_reader_message(t, r, data), qos, raw=True)

    def _on_reader_message(self, topic: str, reader: int, data: bytes) -> None:
        if reader == self.current_reader[topic]:  # a replaced reader's samples are not recorded twice
            self.on_message(topic, data)

    def _discover(self) -> None:
        """Subscribe topics that appeared in the graph (Oracle outputs, extra cameras)."""
        self._accept_volatile_writers()
        for topic, msgtypes in self.get_topic_names_and_types():
            if topic in self.types or not wanted(topic) or len(msgtypes) != 1:
                continue
            offered = self.get_publishers_info_by_topic(topic)
            if not offered:
                continue
            latched = all(p.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for p in offered)
            best_effort = any(p.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT for p in offered)
            self._subscribe(topic, msgtypes[0], latched=latched, best_effort=best_effort)

    def _accept_volatile_writers(self) -> None:
        """A durable topic that a volatile publisher serves (another graph's node)
        is read volatile instead: a transient-local reader would never match it."""
        for topic in DURABLE_TOPICS:
            sub = self.subscriptions_by_topic.get(topic)
            if sub is None or sub.qos_profile.durability != DurabilityPolicy.TRANSIENT_LOCAL:
                continue
            offered = self.get_publishers_info_by_topic(topic)
            if any(p.qos_profile.durability == DurabilityPolicy.VOLATILE for p in offered):
                self.get_logger().warning(f"{topic}: a volatile publisher; recording it volatile "
                                          f"(samples sent before matching can be lost)")
                # The transient-local reader is muted, not destroyed: destroying a subscription
                # inside an executor callback crashed the recorder (SIGSEGV) in about 1 of 30 graphs.
                self._subscribe(topic, self.types[topic])

    def _offered(self, topic: str) -> list[OfferedQos]:
        out = []
        for p in self.get_publishers_info_by_topic(topic):
            q = p.qos_profile
            out.append(OfferedQos(history=int(q.history), depth=int(q.depth), reliability=int(q.reliability),
                                  durability=int(q.durability), liveliness=int(q.liveliness)))
        return out

    def _type_hash(self, topic: str) -> str:
        """RIHS01 hash the publishers announce (what rosbag2 records); '' when none does."""
        for p in self.get_publishers_info_by_topic(topic):
            text = str(getattr(p, "topic_type_hash", "") or "")
            if text.startswith("RIHS01_"):
                return text
        return ""

    def on_message(self, topic: str, data: bytes) -> None:
        if topic == "/tf_static":
            # Several nodes latch static frames (lab_sim the fixtures, monitor the
            # robot): the episode's bag starts with all of them in one message.
            self.latched[topic] = merge_static_transforms(self.latched.get(topic), data)
        elif topic in LATCHED_TOPICS:
            self.latched[topic] = data
        if topic == "/referee/events":
            self._watch_referee(data)
        elif topic in ("/referee/receipts", "/policy/receipts"):
            self._note_receipt(topic, data)
        if topic in PAIRED_MEASUREMENT_TOPICS:
            self.watermark[topic] = max(self.watermark.get(topic, -1.0), header_stamp_s(data))
        if self.bag is not None and self.bag_error is None:
            try:
                if self._write(topic, data) and periodic(topic) and len(data) >= 12:
                    self.completeness.note(topic, header_stamp_ns(data))
            except OSError as exc:  # e.g. a full disk: the bag stops here, the episode is reported invalid
                self.bag_error = exc
                self.get_logger().error(f"recording stopped: {exc.strerror or exc} ({exc.filename or self.bag.path})")

    def _write(self, topic: str, data: bytes) -> bool:
        """Whether the message went into the bag."""
        if topic not in self.bag.connections:
            msgtype = self.types[topic]
            if not self.bag.has_type(msgtype):
                return False  # no definition to store; such a bag would not read back
            self.bag.add_topic(topic, msgtype, self._offered(topic), type_hash=self._type_hash(topic))
        self.bag.write(topic, time.time_ns(), data)
        return True

    def _note_receipt(self, topic: str, data: bytes) -> None:
        msg = deserialize_message(data, DeliveryReceipt)
        if msg.kind == "observation":
            seen = self.acknowledged if topic == "/referee/receipts" else self.deliveries_recorded
            seen.add((msg.episode_id, msg.payload_id))

    def _watch_referee(self, data: bytes) -> None:
        msg = deserialize_message(data, RefereeEvent)
        if msg.category == "episode_end":
            self.referee_ended.add(msg.episode_id)

    # episode boundaries ---------------------------------------------------------
    def on_start(self, request, response):
        refused = "" if self.enabled else "recording is off (record:=false)"
        refused = refused or outside_run_dir(request.output_dir)
        if refused:
            response.success, response.message = False, f"cannot record {request.episode_id}: {refused}"
            return response
        request_key = (request.episode_id, request.instance_json, request.output_dir, request.run_json)
        if self.bag is not None and self.started == request_key:
            # The same start asked again (its reply was lost): the bag under way is that episode's.
            response.success, response.message = True, f"already recording {request.episode_id}"
            return response
        self._close("superseded")
        await_matched(self, self.subscriptions_by_topic, self.match_timeout_s, required=(SCORED_FROM,))
        out = pathlib.Path(request.output_dir)
        try:
            meta = episode_custom_data(self.family, request.episode_id, request.instance_json, request.run_json, out)
            self.bag = EpisodeBag(out / "bag", meta)
        except Exception as exc:  # a bad request or an existing bag is reported, the node stays up
            response.success, response.message = False, f"cannot record {request.episode_id}: {exc}"
            return response
        self.episode_id, self.output_dir = request.episode_id, out
        self.started = request_key
        self.completeness = Completeness()
        self.watermark.clear()
        self.referee_ended.discard(request.episode_id)
        self.acknowledged = {key for key in self.acknowledged if key[0] == request.episode_id}
        self.deliveries_recorded = {key for key in self.deliveries_recorded if key[0] == request.episode_id}
        # A latched sample that arrived before the episode belongs in the bag too, unless
        # it describes an episode: those (the tare, the static frames of the layout) are
        # published again once this episode's scene is reset, and an earlier episode's
        # must not stand in its bag.
        for topic in EPISODE_LATCHED_TOPICS:
            self.latched.pop(topic, None)
        try:
            for topic, data in self.latched.items():
                self._write(topic, data)
        except OSError as exc:
            self.bag_error = exc
            self.started = None  # asked again, this start must not pass for a good one
            response.success, response.message = False, f"cannot record {request.episode_id}: {exc.strerror or exc}"
            return response
        response.success, response.message = True, f"recording {request.episode_id} to {out / 'bag'}"
        return response

    async def on_finish(self, request, response):
        if self.bag is None and self.finish_answer and self.finish_answer[0] == request.episode_id:
            # The last finish asked again (its reply was lost): the same answer, the bag closed once.
            response.success, response.message, response.scores_json = self.finish_answer[1:]
            return response
        if self.bag is None or request.episode_id != self.episode_id:
            response.success, response.message = False, "no such episode is being recorded"
            return response
        # A finish asked again while the first waits is served after it (the finish service's
        # callback group is exclusive): it gets the answer above.
        if self.catch_up.busy:
            response.success, response.message = False, f"{request.episode_id} is already being finished"
            return response
        await self._finish(request, response)
        self.finish_answer = (request.episode_id, response.success, response.message, response.scores_json)
        return response

    async def _finish(self, request, response):
        def caught_up() -> bool:
            # The referee's final records, and every measurement up to the episode's
            # end, must be in the bag; under load the recorder runs behind the graph.
            ended = request.episode_id in self.referee_ended or not self.count_publishers("/referee/events")
            # Every delivery the referee acknowledged: its receipt from the bridge may still be
            # on its way here (seen: the last 2 s of deliveries missing, the audit disagreeing).
            acknowledged = {key for key in self.acknowledged if key[0] == request.episode_id}
            delivered = (acknowledged <= self.deliveries_recorded
                         or not self.count_publishers("/policy/receipts"))
            # Only topics that carried this episode's measurements at all (a silent
            # publisher has nothing in flight).
            return ended and delivered and all(self.watermark[t] >= request.sim_time - 1e-6
                                 for t in PAIRED_MEASUREMENT_TOPICS if t in self.watermark)

        if not await self.catch_up.until(caught_up, self.finish_timeout_s):
            self.get_logger().warning(f"finishing {request.episode_id} before the recording caught up")
        # Deliveries the referee acknowledged whose receipt never reached the bag: said in its
        # finish, so that the audit compares what it holds and calls the rest missing (partial).
        undelivered = sorted(obs for ep, obs in self.acknowledged - self.deliveries_recorded
                             if ep == request.episode_id)
        bag_path, out, episode = self.bag.path, self.output_dir, self.episode_id
        counts = dict(self.bag.counts)
        completeness = self.completeness.report()
        failure = self.bag_error
        try:
            self._close("finished", reason=request.reason, sim_time=request.sim_time, undelivered=undelivered)
        except OSError as exc:
            failure = failure or exc
            self.bag, self.episode_id, self.output_dir = None, "", None
        if failure is not None:
            response.success = False
            response.message = (f"cannot record {episode}: {failure.strerror or failure}; the bag {bag_path} "
                                f"ends at the failed write")
            return response
        message = f"bag {bag_path}: {sum(counts.values())} messages on {len(counts)} topics"
        lost = {topic: row for topic, row in completeness.items() if row["missing"]}
        if lost:
            message += "; gaps: " + ", ".join(f"{t} {r['missing']} of {r['expected']}" for t, r in sorted(lost.items()))
        if undelivered:
            message += f"; {len(undelivered)} acknowledged deliveries without their receipt"
        if self.write_videos:
            from labference_ros.recording.videos import write_videos

            try:
                videos = write_videos(bag_path, out / "videos", episode)
                message += f"; {len(videos)} videos"
            except Exception as exc:  # the bag is safe on disk; videos can be redone with `labference videos`
                message += f"; videos failed: {exc}"
        response.success, response.message = True, message
        response.scores_json = json.dumps({"bag": str(bag_path), "message_counts": counts,
                                           "completeness": completeness})
        return response

    def _close(self, status: str, reason: str = "", sim_time: float | None = None,
               undelivered: list[str] = ()) -> None:
        self.bag_error = None
        if self.bag is None:
            return
        finish = {"status": status, "reason": reason or status}
        if sim_time is not None:
            finish["sim_time"] = sim_time
        if undelivered:
            finish["undelivered"] = list(undelivered)
        self.bag.close(finish=finish, message_counts=self.bag.counts,
                       **{COMPLETENESS_KEY: self.completeness.report()})
        self.bag, self.episode_id, self.output_dir = None, "", None

    def close(self):
        try:
            self._close("recorder_shutdown")
        except OSError as exc:  # a full disk: the bag stays as far as it got
            self.get_logger().error(f"bag not closed: {exc.strerror or exc}")


def main(args=None):
    raise SystemExit(run_node(Recorder, args))


if __name__ == "__main__":
    main()
