"""Probe for the recorder tests, in its own process (one rclpy per process).

usage: recorder_probe.py hashes BAG_DIR    -> "HASH <topic> <bag hash> <middleware hash>" and
                                              "DESER <topic> <ok|error>" per topic (rclpy.serialization)
       recorder_probe.py start OUTPUT_DIR  -> calls /recorder/start_episode, prints "STARTED <success>"
       recorder_probe.py first_world OUTPUT_DIR -> starts an episode, then publishes one world state
                                              from a new publisher at once (before any matching) and
                                              finishes the episode; prints "FINISHED <success>"
       recorder_probe.py late_delivery OUTPUT_DIR -> the referee acknowledges a delivery whose bridge
                                              receipt comes 1.5 s after the finish was asked
       recorder_probe.py volatile_reading OUTPUT_DIR -> starts an episode, publishes balance readings
                                              from a volatile publisher (raw_g k) and a transient-local
                                              one (1000 + k) for 4 s, finishes; prints
                                              "FINISHED <success>"
"""
from __future__ import annotations

import importlib
import json
import sys
import time

from labference_ros.nodes.runtime import init_ros


def msg_class(msgtype: str):
    pkg, kind, name = msgtype.split("/")
    return getattr(importlib.import_module(f"{pkg}.{kind}"), name)


def hashes(bag_dir: str) -> None:
    from rclpy.serialization import deserialize_message

    from labference_ros.recording.bag_reader import EpisodeBagReader

    rclpy = init_ros([])
    node = rclpy.create_node("recorder_probe")
    reader = EpisodeBagReader(bag_dir)
    info = reader.metadata["rosbag2_bagfile_information"]["topics_with_message_count"]
    for entry in info:
        meta = entry["topic_metadata"]
        node.create_publisher(msg_class(meta["type"]), "/probe" + meta["name"], 1)
        pub = node.get_publishers_info_by_topic("/probe" + meta["name"])[0]
        print(f"HASH {meta['name']} {meta['type_description_hash']} {pub.topic_type_hash}", flush=True)
    seen = set()
    for topic, msgtype, _t, raw in reader.raw_messages():
        if topic in seen:
            continue
        seen.add(topic)
        try:
            deserialize_message(bytes(raw), msg_class(msgtype))
            print(f"DESER {topic} ok", flush=True)
        except Exception as exc:  # reported to the test
            print(f"DESER {topic} error {exc}", flush=True)
    print("DONE", flush=True)
    rclpy.shutdown()


def start(out_dir: str) -> None:
    from labference.srv import StartEpisode

    from labference_ros.tasks.weighing.instances import generate

    rclpy = init_ros([])
    node = rclpy.create_node("recorder_probe")
    client = node.create_client(StartEpisode, "/recorder/start_episode")
    if not client.wait_for_service(timeout_sec=60):
        print("STARTED no_service", flush=True)
        return
    instance = generate("basic", 1, task_seed=5, layout_seed=5, policy_seed=0)[0]
    fut = client.call_async(StartEpisode.Request(episode_id="ep_term", instance_json=instance.to_json(),
                                                 output_dir=out_dir, run_json=json.dumps({"run_id": "probe"})))
    rclpy.spin_until_future_complete(node, fut, timeout_sec=60)
    print(f"STARTED {fut.result().success if fut.done() else 'timeout'}", flush=True)
    time.sleep(0.5)
    rclpy.shutdown()


def _call(rclpy, node, client, request):
    if not client.wait_for_service(timeout_sec=60):
        return None
    fut = client.call_async(request)
    rclpy.spin_until_future_complete(node, fut, timeout_sec=60)
    return fut.result() if fut.done() else None


def _recorded_episode(episode_id: str, out_dir: str):
    """rclpy, a node, and an episode the recorder has opened (None when it refused:
    "FINISHED start_failed ..." is printed)."""
    from labference.srv import StartEpisode

    from labference_ros.tasks.weighing.instances import generate

    rclpy = init_ros([])
    node = rclpy.create_node("recorder_probe")
    instance = generate("basic", 1, task_seed=5, layout_seed=5, policy_seed=0)[0]
    started = _call(rclpy, node, node.create_client(StartEpisode, "/recorder/start_episode"),
                    StartEpisode.Request(episode_id=episode_id, instance_json=instance.to_json(),
                                         output_dir=out_dir, run_json=json.dumps({"run_id": "probe"})))
    if started is None or not started.success:
        print(f"FINISHED start_failed {started and started.message}", flush=True)
        return rclpy, None
    return rclpy, node


def _finish_episode(rclpy, node, episode_id: str) -> None:
    from labference.srv import FinishEpisode

    finished = _call(rclpy, node, node.create_client(FinishEpisode, "/recorder/finish_episode"),
                     FinishEpisode.Request(episode_id=episode_id, reason="completed", sim_time=0.0))
    print(f"FINISHED {finished.success if finished else 'timeout'}", flush=True)


def _await_delivery(publisher) -> None:
    """Until the recorder's reader has matched the (transient local) writer, then 1 s
    for what was written to reach it."""
    deadline = time.monotonic() + 60
    while publisher.get_subscription_count() < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)


def first_world(out_dir: str) -> None:
    from labference.msg import WorldState

    from labference_ros.nodes.matching import measurement_qos

    rclpy, node = _recorded_episode("ep_first", out_dir)
    if node is None:
        return
    # As lab_sim after a reset under load: the episode's first state leaves before
    # discovery has matched the writer (a participant of its own, just created).
    publisher_context = rclpy.Context()
    init_ros([], context=publisher_context)
    publisher_node = rclpy.create_node("first_world", context=publisher_context)
    publisher = publisher_node.create_publisher(WorldState, "/evaluator/world_state", measurement_qos(200))
    publisher.publish(WorldState())
    # The recorder's reader matches this writer some time later (seconds under load);
    # only then can the sample reach it, from the writer's history.
    _await_delivery(publisher)
    _finish_episode(rclpy, node, "ep_first")
    publisher_node.destroy_node()
    rclpy.shutdown(context=publisher_context)
    rclpy.shutdown()


def volatile_reading(out_dir: str) -> None:
    from labference.msg import BalanceReading

    from labference_ros.nodes.matching import measurement_qos

    rclpy, node = _recorded_episode("ep_volatile", out_dir)
    if node is None:
        return
    publisher = node.create_publisher(BalanceReading, "/balance/reading", 10)  # another graph's node: volatile
    durable = node.create_publisher(BalanceReading, "/balance/reading", measurement_qos(200))  # as balance's
    for k in range(40):
        for writer, raw_g in ((publisher, float(k)), (durable, 1000.0 + k)):
            msg = BalanceReading(raw_g=raw_g, displayed_g=raw_g, stable=True, valid=True, source="probe")
            msg.header.stamp.sec, msg.header.stamp.nanosec = k // 10, (k % 10) * 100_000_000
            writer.publish(msg)
        rclpy.spin_once(node, timeout_sec=0.1)
    _finish_episode(rclpy, node, "ep_volatile")
    rclpy.shutdown()


def _finish_before(rclpy, node, episode_id: str, sim_time: float, last_message) -> None:
    """Asks the finish, sends `last_message()` 1.5 s later (inside the recorder's 5 s
    finish_timeout_s) and prints "FINISHED <success>", or "FINISHED early" when the finish
    came back before that message was even sent."""
    from labference.srv import FinishEpisode

    client = node.create_client(FinishEpisode, "/recorder/finish_episode")
    if not client.wait_for_service(timeout_sec=60):
        print("FINISHED no_service", flush=True)
        rclpy.shutdown()
        return
    finished = client.call_async(FinishEpisode.Request(episode_id=episode_id, reason="completed",
                                                       sim_time=sim_time))
    until = time.monotonic() + 1.5
    while time.monotonic() < until and not finished.done():
        rclpy.spin_once(node, timeout_sec=0.05)
    if finished.done():
        print("FINISHED early", flush=True)
        rclpy.shutdown()
        return
    last_message()
    rclpy.spin_until_future_complete(node, finished, timeout_sec=60)
    print(f"FINISHED {finished.result().success if finished.done() else 'timeout'}", flush=True)
    rclpy.shutdown()


def late_world(out_dir: str) -> None:
    """A finish that comes while the recording is behind: the recorder must wait until
    the world state at the finish's sim time is in (prints "FINISHED early" if the
    finish came back before that state was even sent)."""
    from labference.msg import WorldState

    from labference_ros.nodes.matching import measurement_qos

    rclpy, node = _recorded_episode("ep_late", out_dir)
    if node is None:
        return
    publisher = node.create_publisher(WorldState, "/evaluator/world_state", measurement_qos(200))

    def publish_at(t: float) -> None:
        msg = WorldState()
        msg.header.stamp.sec, msg.header.stamp.nanosec = int(t), round((t - int(t)) * 1e9)
        publisher.publish(msg)

    # The recorder must have the state at 0.5 s before the finish: a topic it has seen
    # nothing of is not waited for.
    publish_at(0.5)
    _await_delivery(publisher)
    _finish_before(rclpy, node, "ep_late", 1.0, lambda: publish_at(1.0))


def late_delivery(out_dir: str) -> None:
    """A finish that comes before a delivery the referee already acknowledged is in: the
    recorder must wait for the bridge's receipt (the audit re-scores from it; prints
    "FINISHED early" if the finish came back before that receipt was even sent)."""
    from labference.msg import DeliveryReceipt

    from labference_ros.nodes.bridge_io import RECEIPT_QOS

    rclpy, node = _recorded_episode("ep_deliv", out_dir)
    if node is None:
        return
    referee = node.create_publisher(DeliveryReceipt, "/referee/receipts", RECEIPT_QOS)
    bridge = node.create_publisher(DeliveryReceipt, "/policy/receipts", RECEIPT_QOS)

    def receipt(payload: str) -> DeliveryReceipt:
        return DeliveryReceipt(episode_id="ep_deliv", receipt_id=payload + ":r", kind="observation",
                               payload_id=payload, status="delivered")

    bridge.publish(receipt("ep_deliv:obs00001"))
    referee.publish(receipt("ep_deliv:obs00001"))
    referee.publish(receipt("ep_deliv:obs00002"))  # acknowledged; the bridge's receipt still on its way
    _await_delivery(referee)
    _finish_before(rclpy, node, "ep_deliv", 0.0, lambda: bridge.publish(receipt("ep_deliv:obs00002")))


def repeated(out_dir: str) -> None:
    """Start and finish each asked twice, as a caller whose reply was lost asks again: prints
    OUTPUT_DIR/answers.json (the second start's and the three finishes' answers) and
    "FINISHED <all same>"."""
    from labference.msg import WorldState
    from labference.srv import FinishEpisode, StartEpisode

    from labference_ros.nodes.matching import measurement_qos
    from labference_ros.tasks.weighing.instances import generate

    rclpy, node = _recorded_episode("ep_repeat", out_dir)
    if node is None:
        return
    instance = generate("basic", 1, task_seed=5, layout_seed=5, policy_seed=0)[0]
    again = _call(rclpy, node, node.create_client(StartEpisode, "/recorder/start_episode"),
                  StartEpisode.Request(episode_id="ep_repeat", instance_json=instance.to_json(),
                                       output_dir=out_dir, run_json=json.dumps({"run_id": "probe"})))
    publisher = node.create_publisher(WorldState, "/evaluator/world_state", measurement_qos(200))
    publisher.publish(WorldState())
    _await_delivery(publisher)
    client = node.create_client(FinishEpisode, "/recorder/finish_episode")
    request = FinishEpisode.Request(episode_id="ep_repeat", reason="completed", sim_time=0.0)
    finishes = [client.call_async(request), client.call_async(request)]
    for fut in finishes:
        rclpy.spin_until_future_complete(node, fut, timeout_sec=60)
    finishes.append(client.call_async(request))
    rclpy.spin_until_future_complete(node, finishes[-1], timeout_sec=60)
    answers = [[f.result().success, f.result().message, f.result().scores_json] if f.done() else None for f in finishes]
    with open(f"{out_dir}/answers.json", "w", encoding="utf-8") as f:
        json.dump({"start": [again.success, again.message] if again else None, "finish": answers}, f)
    print(f"FINISHED {all(a == answers[0] for a in answers)}", flush=True)
    rclpy.shutdown()


if __name__ == "__main__":
    {"hashes": hashes, "start": start, "first_world": first_world, "volatile_reading": volatile_reading,
     "late_world": late_world, "late_delivery": late_delivery, "repeated": repeated}[sys.argv[1]](sys.argv[2])
