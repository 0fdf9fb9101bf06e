"""lab_sim node graph vs raw MuJoCo: the same scene, the same camera schedule.

Raw: one process steps the weighing scene, takes a measurement (world state +
load-cell wrench) every 10 ms of sim time and renders the three cameras at
--camera-rate. Graph: lab_sim and balance run as separate processes (not as
`labference launch` runs them, in one: bench_episode.py measures that); this
process subscribes to the cameras and drives sync-mode /lab_sim/advance in
--chunk-second steps. Prints both wall times and their ratio, measured in one run.

    .venv/bin/python benchmarks/bench_sim_graph.py [--sim-seconds 10]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time

os.environ.setdefault("MUJOCO_GL", "egl")

from raw_schedule import RawSchedule  # noqa: E402

from labference_ros.rosenv import loopback_environ  # noqa: E402
from labference_ros.tasks.weighing.instances import generate  # noqa: E402


def raw(instance, sim_seconds: float, camera_rate: float) -> tuple[float, int]:
    from labference_ros.sim.mujoco_backend import MujocoBackend

    b = MujocoBackend()
    b.load(instance)
    schedule = RawSchedule(camera_rate)
    t0 = time.perf_counter()
    for _ in range(int(round(sim_seconds / b.timestep))):
        schedule.step(b)
    wall = time.perf_counter() - t0
    frames = schedule.frames
    b.close()
    return wall, frames


def graph(instance, sim_seconds: float, camera_rate: float, chunk: float) -> tuple[float, int]:
    from labference_ros.nodes.runtime import init_ros

    env = loopback_environ()
    env["ROS_DOMAIN_ID"] = str(1 + os.getpid() % 40)
    os.environ["ROS_DOMAIN_ID"] = env["ROS_DOMAIN_ID"]
    procs = [subprocess.Popen([sys.executable, "-m", f"labference_ros.nodes.{n}", "--ros-args",
                               "-p", f"camera_rate:={camera_rate}"] if n == "lab_sim" else
                              [sys.executable, "-m", f"labference_ros.nodes.{n}"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for n in ("lab_sim", "balance")]
    rclpy = init_ros([])
    from labference.srv import Advance, ResetEpisode
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import Image

    node = rclpy.create_node("bench_driver")
    frames = [0]
    for cam in ("front", "wrist", "display"):
        node.create_subscription(Image, f"/cameras/{cam}/image_raw", lambda _m: frames.__setitem__(0, frames[0] + 1), 10)
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    threading.Thread(target=ex.spin, daemon=True).start()

    def call(srv, name, req):
        cli = node.create_client(srv, name)
        assert cli.wait_for_service(timeout_sec=60), name
        fut = cli.call_async(req)
        while not fut.done():
            time.sleep(0.0005)
        return fut.result()

    try:
        assert call(ResetEpisode, "/lab_sim/reset", ResetEpisode.Request(instance_json=instance.to_json())).success
        deadline = time.monotonic() + 30
        while node.count_publishers("/cameras/front/image_raw") == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        t0 = time.perf_counter()
        done = 0.0
        while done < sim_seconds - 1e-9:
            assert call(Advance, "/lab_sim/advance", Advance.Request(duration_s=chunk)).success
            done += chunk
        wall = time.perf_counter() - t0
    finally:
        ex.shutdown()
        node.destroy_node()
        rclpy.shutdown()
        for p in procs:
            p.terminate()
            p.wait(10)
    return wall, frames[0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim-seconds", type=float, default=10.0)
    ap.add_argument("--camera-rate", type=float, default=10.0)
    ap.add_argument("--chunk", type=float, default=0.1)
    a = ap.parse_args()
    instance = generate("basic", 1, task_seed=1, layout_seed=1, policy_seed=0)[0]
    raw_wall, raw_frames = raw(instance, a.sim_seconds, a.camera_rate)
    graph_wall, graph_frames = graph(instance, a.sim_seconds, a.camera_rate, a.chunk)
    steps = int(round(a.sim_seconds / 0.002))
    print(f"raw MuJoCo : {raw_wall:6.2f} s wall for {a.sim_seconds:.0f} s sim, {steps / raw_wall:7.0f} steps/s, "
          f"{raw_frames / raw_wall:6.1f} frames/s")
    print(f"lab_sim    : {graph_wall:6.2f} s wall for {a.sim_seconds:.0f} s sim, {steps / graph_wall:7.0f} steps/s, "
          f"{graph_frames / graph_wall:6.1f} frames/s received")
    print(f"ratio graph/raw wall time: {graph_wall / raw_wall:.2f}")


if __name__ == "__main__":
    main()
