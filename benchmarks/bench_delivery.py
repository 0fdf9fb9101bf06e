"""What one ROS message delivery costs between two processes on this machine, and the
floor it puts under the graph / raw MuJoCo CPU ratio (issue 19).

A publisher process sends sensor_msgs/JointState (the Panda's 9 joints), --burst
messages back to back every 10 ms, for --ticks ticks; a subscriber process takes
them as the project's nodes do (a raw subscription, the executor of
nodes.runtime.make_executor spun by ``spin_once`` as run_node spins it). Both in a domain of their own, on
loopback. Printed per delivery: the publisher's CPU beyond the same loop with no
subscriber, and the subscriber's CPU from its first message to its last. A burst is
one topic's messages back to back: they share the subscriber's wake-ups more than
lab_sim's back-to-back messages on several topics do, so --burst 3 gives a lower bound.

    .venv/bin/python benchmarks/bench_delivery.py [--ticks 1500] [--burst 1] [--deliveries-per-sim-s 880]
    .venv/bin/python benchmarks/bench_delivery.py --image 320x240 --sampled --ticks 300

--image WxH: sensor_msgs/Image (rgb8) instead, each built from a frame's pixels as
lab_sim builds its camera messages (with --sampled, read as the policy bridge reads them).

--deliveries-per-sim-s: the weighing graph's count (BENCHMARKS.md,
"Where the graph's overhead goes": 7 per 10 ms measurement, 3 per 20 ms control
row, 30 frames).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

RATE_HZ = 100.0  # publishing ticks per second
SUBSCRIBER_SPARE_S = 30.0  # the subscriber's wait beyond the publishing (start-up, discovery)
TOPIC = "/bench_delivery/joint_states"
SAMPLE_EVERY_S = 0.1  # --sampled: how often the subscriber takes the newest message


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def message_type(image: str | None):
    from sensor_msgs.msg import Image, JointState

    return Image if image else JointState


def image_size(image: str) -> tuple[int, int]:
    """(height, width) of a --image WxH argument."""
    width, height = (int(x) for x in image.lower().split("x"))
    return height, width


def publisher(ticks: int, burst: int, settle_s: float, image: str | None = None) -> dict:
    import numpy as np
    from rclpy.qos import QoSProfile
    from sensor_msgs.msg import Image, JointState

    from labference_ros.msgconv import image_data
    from labference_ros.nodes.runtime import init_ros

    rclpy = init_ros([])
    node = rclpy.create_node("bench_delivery_publisher")
    pub = node.create_publisher(message_type(image), TOPIC, QoSProfile(depth=10))
    time.sleep(settle_s)  # discovery
    subscribers = pub.get_subscription_count()  # before the subscriber, done, leaves
    msg = JointState(name=[f"panda_joint{i}" for i in range(1, 10)], position=[0.1] * 9, velocity=[0.0] * 9,
                     effort=[0.0] * 9)
    frames = []
    if image:  # a few different frames, so that no layer can reuse the last one
        rng = np.random.default_rng(0)
        frames = [rng.integers(0, 256, (*image_size(image), 3), dtype=np.uint8) for _ in range(4)]
    c0, t0 = _cpu(), time.perf_counter()
    for i in range(ticks):
        if frames:  # built per frame, as lab_sim's publish_cameras builds it
            pixels = frames[i % len(frames)]
            msg = Image(height=pixels.shape[0], width=pixels.shape[1], encoding="rgb8", is_bigendian=0,
                        step=pixels.shape[1] * 3)
            msg.data = image_data(pixels)
            msg.header.frame_id = "front_optical_frame"
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(i * 10_000_000, 1_000_000_000)
        for _ in range(burst):
            pub.publish(msg)
        time.sleep(max(0.0, t0 + (i + 1) / RATE_HZ - time.perf_counter()))
    cpu = _cpu() - c0
    time.sleep(0.5)  # let the last ones arrive before the participant goes
    node.destroy_node()
    rclpy.shutdown()
    return {"cpu_s": cpu, "subscribers": subscribers}


def subscriber(messages: int, deadline_s: float, image: str | None = None) -> dict:
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile

    from labference_ros.nodes.runtime import init_ros, make_executor

    rclpy = init_ros([])
    node = rclpy.create_node("bench_delivery_subscriber")
    got: list[float] = []

    def on_message(data: bytes) -> None:
        got.append(_cpu())

    node.create_subscription(message_type(image), TOPIC, on_message, QoSProfile(depth=10), raw=True)
    executor = make_executor(SingleThreadedExecutor)  # the nodes' executor
    executor.add_node(node)
    end = time.monotonic() + deadline_s
    while len(got) < messages and time.monotonic() < end:
        executor.spin_once(timeout_sec=0.1)  # as run_node spins
    executor.shutdown(timeout_sec=1.0)
    node.destroy_node()
    rclpy.shutdown()
    return {"received": len(got), "cpu_s": got[-1] - got[0] if len(got) > 1 else 0.0}


def sampling_subscriber(ticks: int, burst: int, deadline_s: float, image: str | None = None) -> dict:
    """The same subscription read as nodes.sampled.SampledInput reads it: on no executor,
    the newest message taken every SAMPLE_EVERY_S. DDS still receives every message;
    the count is the publisher's between the first and the last message taken (their
    stamps number the ticks)."""
    from rclpy.qos import QoSProfile

    from labference_ros.cdr_views import header_stamp_s
    from labference_ros.nodes.runtime import init_ros
    from labference_ros.nodes.sampled import SampledInput

    rclpy = init_ros([])
    node = rclpy.create_node("bench_delivery_subscriber")
    source = SampledInput(node, message_type(image), TOPIC, QoSProfile(depth=10))
    first = last = None  # (tick, CPU s)
    end = time.monotonic() + deadline_s
    while (last is None or last[0] < ticks - 1) and time.monotonic() < end:
        time.sleep(SAMPLE_EVERY_S)
        data = source.newest()
        if data is not None:
            last = (round(header_stamp_s(data) * RATE_HZ), _cpu())
            first = first or last
    node.destroy_node()
    rclpy.shutdown()
    if first is None or last[0] == first[0]:
        return {"received": 0, "cpu_s": 0.0}
    return {"received": (last[0] - first[0]) * burst + 1, "cpu_s": last[1] - first[1]}


def run_pair(ticks: int, burst: int, subscribed: bool, env: dict, sampled: bool = False,
             image: str | None = None) -> tuple[dict, dict | None]:
    """The publisher, with or without a subscriber."""
    me = [sys.executable, os.path.abspath(__file__)] + (["--image", image] if image else [])
    sub = None
    if subscribed:
        sub = subprocess.Popen(me + ["--role", "subscriber", "--messages", str(ticks * burst),
                                     "--ticks", str(ticks), "--burst", str(burst)]
                               + (["--sampled"] if sampled else []), env=env, stdout=subprocess.PIPE, text=True)
    try:
        pub = json.loads(subprocess.run(me + ["--role", "publisher", "--ticks", str(ticks), "--burst", str(burst)],
                                        env=env, stdout=subprocess.PIPE, text=True, check=True).stdout)
        sub_out = json.loads(sub.communicate(timeout=SUBSCRIBER_SPARE_S + 30)[0]) if sub is not None else None
    finally:
        if sub is not None and sub.poll() is None:
            sub.kill()
            sub.wait()
    if pub["subscribers"] != int(subscribed):
        raise SystemExit(f"the publisher saw {pub['subscribers']} subscribers, not {int(subscribed)}")
    return pub, sub_out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ticks", type=int, default=1500, help="10 ms publishing ticks")
    ap.add_argument("--burst", type=int, default=1, help="messages back to back per tick")
    ap.add_argument("--messages", type=int, help=argparse.SUPPRESS)  # the subscriber's count
    ap.add_argument("--deliveries-per-sim-s", type=float, default=880.0)
    ap.add_argument("--sampled", action="store_true",
                    help="the subscriber takes the newest message every 0.1 s instead of spinning (nodes.sampled)")
    ap.add_argument("--image", metavar="WxH",
                    help="sensor_msgs/Image frames of this size (rgb8), built as lab_sim builds them")
    ap.add_argument("--role", choices=("publisher", "subscriber"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.image:
        try:
            image_size(a.image)
        except ValueError:
            ap.error(f"--image takes WIDTHxHEIGHT (e.g. 320x240), not {a.image!r}")
    if a.role == "publisher":
        print(json.dumps(publisher(a.ticks, a.burst, settle_s=3.0, image=a.image)))
        return 0
    deadline_s = a.ticks / RATE_HZ + SUBSCRIBER_SPARE_S
    if a.role == "subscriber" and a.sampled:
        print(json.dumps(sampling_subscriber(a.ticks, a.burst, deadline_s, image=a.image)))
        return 0
    if a.role == "subscriber":
        print(json.dumps(subscriber(a.messages, deadline_s, image=a.image)))
        return 0

    from labference_ros.domain_locks import claim_domain
    from labference_ros.rosenv import loopback_environ

    claim = claim_domain(None)
    env = loopback_environ()
    env["ROS_DOMAIN_ID"] = str(claim.domain_id)
    try:
        alone, _ = run_pair(a.ticks, a.burst, False, env, image=a.image)
        pub, sub = run_pair(a.ticks, a.burst, True, env, sampled=a.sampled, image=a.image)
    finally:
        claim.release()
    n = a.ticks * a.burst
    kind = f"{a.image} Image" if a.image else "JointState"
    print(f"{n} {kind} messages, {a.burst} every 10 ms, domain {claim.domain_id}; publisher alone "
          f"{alone['cpu_s'] / n * 1e6:.0f} us CPU per message (its loop, sleeps included)")
    writer = (pub["cpu_s"] - alone["cpu_s"]) / n
    reader = sub["cpu_s"] / max(sub["received"] - 1, 1)
    floor = a.deliveries_per_sim_s * (writer + reader)
    print(f"received {sub['received']}/{n}; per delivery {writer * 1e6:.0f} us publisher + {reader * 1e6:.0f} us "
          f"subscriber = {(writer + reader) * 1e6:.0f} us CPU; x {a.deliveries_per_sim_s:.0f} deliveries per sim s "
          f"= {floor:.2f} CPU s per sim s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
