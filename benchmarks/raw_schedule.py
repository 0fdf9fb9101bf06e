"""lab_sim's per-step work without ROS, shared by the raw side of the benchmarks:
a measurement (world state, load-cell wrench, joints) every 10 ms of sim time and
every camera rendered at the camera rate, then one physics step."""
from __future__ import annotations

from labference_ros.sim.backend import CAMERA_NAMES

MEASUREMENT_PERIOD_S = 0.01


class RawSchedule:
    def __init__(self, camera_rate: float):
        self.camera_period = 1.0 / camera_rate
        self.next_meas = self.next_cam = 0.0
        self.frames = 0

    def step(self, backend) -> None:
        t = backend.sim_time
        if t + 1e-9 >= self.next_meas:
            backend.measure(), backend.pan_wrench(), backend.joint_state()
            self.next_meas = t + MEASUREMENT_PERIOD_S
        if t + 1e-9 >= self.next_cam:
            for cam in CAMERA_NAMES:
                backend.render(cam)
                self.frames += 1
            self.next_cam = t + self.camera_period
        backend.step(1)
