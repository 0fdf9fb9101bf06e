"""Builds policy_bridge in this process (realtime, the given task) and asks it for an
observation with the joint state of a camera tick and the frames of the tick before,
then with that tick's frames, as a simulator's topics would leave them; prints
"RESULT <json>": the camera stamps of each observation delivered (null: none yet).
usage: bridge_frame_probe.py TASK OUTPUT_DIR"""
from __future__ import annotations

import json
import pathlib
import sys
import time

import numpy as np

from labference_ros.nodes.runtime import init_ros


def main() -> int:
    task, out = sys.argv[1], pathlib.Path(sys.argv[2])
    system = {"placement_recall": "label_memory_pixels", "feedback_weighing": "display_reader"}[task]
    rclpy = init_ros(["--ros-args", "-p", f"task:={task}", "-p", "step_mode:=realtime", "-p", f"system:={system}",
                      "-p", "camera_rate:=10.0", "-p", "match_timeout_s:=0.1", "-p", "wait_for_referee_receipt:=false"])
    from builtin_interfaces.msg import Time
    from rclpy.serialization import serialize_message

    from labference.srv import StartEpisode
    from sensor_msgs.msg import Image, JointState

    from labference_ros.msgconv import s_to_stamp
    from labference_ros.nodes.policy_bridge import PolicyBridge
    from labference_ros.tasks import family

    bridge = PolicyBridge()
    instance = family(task).generate(family(task).conditions[0], 1, 0, 0, 0)[0]
    request = StartEpisode.Request(episode_id="ep0", instance_json=instance.to_json(), output_dir=str(out),
                                   run_json="{}")
    assert bridge.on_start(request, StartEpisode.Response()).success

    def joints_at(t):
        msg = JointState(name=[f"panda_joint{k}" for k in range(1, 8)] + ["panda_finger_joint1", "panda_finger_joint2"],
                         position=[0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.04, 0.04])
        msg.header.stamp = s_to_stamp(t, Time())
        bridge.latest["joints"] = serialize_message(msg)  # the bridge keeps inputs serialized

    def frames_at(t):
        for cam in bridge.cameras:
            img = Image(height=24, width=32, encoding="rgb8", step=96,
                        data=np.full((24, 32, 3), 128, np.uint8).tobytes())
            img.header.stamp = s_to_stamp(t, Time())
            bridge.latest[f"image:{cam}"] = serialize_message(img)

    def observe() -> dict | None:
        ep = bridge.ep
        ep.state, ep.since = "observe", time.monotonic()
        ep._state_observe()
        if ep.state == "observe":
            return None
        return dict(ep.loop.obs.image_stamps)

    joints_at(10.4)
    frames_at(10.3)  # the tick's frames are still on their way
    early = observe()
    frames_at(10.4)
    late = observe()
    print("RESULT " + json.dumps({"early": early, "late": late}), flush=True)
    bridge.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
