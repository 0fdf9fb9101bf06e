"""One simulated world for a continuation: backend and, for a family that reads a
balance (weighing), the balance model and display, stepped the way the ROS graph
steps them (balance period 10 ms).

A snapshot is the simulator blob (bit-exact, sim issue) plus the balance
model's filter state, which lives outside MuJoCo and must travel with it.
A family's own environment (placement recall's occlusion and rack transition)
is started by each branch at the handoff and acts at the graph's camera ticks."""
from __future__ import annotations

import copy
import hashlib
import math
from dataclasses import dataclass, replace

import numpy as np

from labference_ros.core.measurements import WorldMeasurement
from labference_ros.core.observation import OBSERVATION_HISTORY_STEPS, PolicyObservation, project_observation
from labference_ros.perception.camera import world_camera_calibration
from labference_ros.sim.mujoco_backend import MujocoBackend, RenderSettings
from labference_ros.tasks import family_of
from labference_ros.core.balance import BalanceModel, BalanceParameters
from labference_ros.core.rates import CAMERA_RATE_HZ, MEASUREMENT_RATE_HZ

FRONT_SIZE = (240, 320)  # display_reader localises at 320x240
BALANCE_PERIOD_S = 1.0 / MEASUREMENT_RATE_HZ
CAMERA_PERIOD_S = 1.0 / CAMERA_RATE_HZ  # the graph's camera ticks, where the environment may act


@dataclass(frozen=True)
class Snapshot:
    blob: bytes
    balance: BalanceModel | None
    reading: object  # last BalanceMeasurement shown on the display (None without a balance)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.blob).hexdigest()


class World:
    """A simulated cell of the instance's task family for matched continuations."""

    def __init__(self, instance):
        self.instance = instance
        self.family = family_of(instance)
        self.cameras = self.family.cameras
        self.backend = MujocoBackend(RenderSettings(sizes={"front": FRONT_SIZE}, visual_meshes=False),
                                     self.family.name)
        self.backend.load(instance)
        self.balance = self.reading = None
        if self.family.reads_balance:
            self.balance = BalanceModel(BalanceParameters(), self.backend.gravity)
            self.balance.calibrate_empty(self.backend.empty_pan_wrench().force_up)
            # The balance reads the pan at the reset instant, as the graph's balance
            # node does with the wrench lab_sim publishes at reset.
            w = self.backend.pan_wrench()
            self.reading = self.balance.update(self.backend.sim_time, w.force, w.torque)
            self.backend.set_display(self.reading.displayed_g, self.reading.stable)
        self._obs_k = 0
        self.environment = None  # the family's own environment (an occluder), once started
        self._environment_record: dict | None = None  # what it did, for the next measurement
        self._next_tick = 0.0

    def start_environment(self) -> None:
        """From now on the family's environment acts at camera ticks as lab_sim lets it
        (placement recall's occlusion and rack transition); a branch starts it at the
        handoff, so a start's prefix runs without it."""
        self.environment = self.family.make_environment(self.instance)
        self._next_tick = math.ceil(self.t / CAMERA_PERIOD_S - 1e-6) * CAMERA_PERIOD_S

    def observation_identity(self) -> dict:
        """run.json's observation section for a continuation: what this world renders
        (each camera's size, a fresh frame at every observation, collision geoms
        drawn for the robot), so it never pools with the graph's camera schedule."""
        settings = self.backend.render_settings
        sizes = "+".join(f"{c}@{settings.size(c)[1]}x{settings.size(c)[0]}" for c in self.cameras)
        out = {"cameras": list(self.cameras), "condition": f"rgb:{sizes}/each_observation:collision_geoms",
               "history_protocol": f"{self.family.history_protocol}+last_{OBSERVATION_HISTORY_STEPS}_steps"
                                   "+checkpoint_prefix",
               "step_mode": "sync"}
        environment = self.family.environment_profile(self.instance.condition)
        if environment:  # what the cell does on its own (an occluder, a hidden-event condition's lamp)
            out["environment"] = environment
        return out

    @property
    def t(self) -> float:
        return self.backend.sim_time

    def advance(self, seconds: float) -> None:
        for _ in range(max(1, int(round(seconds / BALANCE_PERIOD_S)))):
            self.backend.advance(BALANCE_PERIOD_S)
            if self.environment is not None and self.t + 1e-9 >= self._next_tick:
                happened = self.environment.update(self.backend.measure(), self.backend.model, self.backend.data)
                self._environment_record = happened or self._environment_record
                self._next_tick += CAMERA_PERIOD_S
            if self.balance is not None:
                w = self.backend.pan_wrench()
                self.reading = self.balance.update(self.backend.sim_time, w.force, w.torque)
        if self.balance is not None:
            self.backend.set_display(self.reading.displayed_g, self.reading.stable)

    def measure(self) -> WorldMeasurement:
        """The state now; the first measurement after the environment acted carries its
        record (as the state lab_sim publishes next does), the referee's cue."""
        record, self._environment_record = self._environment_record, None
        return replace(self.backend.measure(), balance=self.reading, environment=record)

    def sensors(self) -> tuple[dict, dict, dict]:
        """What the cell's sensors give now: images and their stamps per camera, joint positions."""
        js = self.backend.joint_state()
        images = {c: self.backend.render(c) for c in self.cameras}
        if self.environment is not None and self.environment.occluded(self.t):
            images = {c: np.zeros_like(pixels) for c, pixels in images.items()}  # the occluder's frames
        return images, {c: self.t for c in self.cameras}, dict(zip(js.names, js.position))

    def observe(self, instruction: str, evidence_version: int = 0) -> tuple[str, PolicyObservation]:
        """A policy observation outside the episode loop (a checkpoint's prefix record),
        with the calibration the loop delivers (the cell's, never the simulator's)."""
        images, stamps, joints = self.sensors()
        oid = f"obs-{self._obs_k}"
        self._obs_k += 1
        calib = {"front": world_camera_calibration("front", *images["front"].shape[:2],
                                                   self.family.cell_description()).to_dict()}
        source = {"observation_id": oid, "episode_id": self.instance.instance_id,
                  "sim_time": self.t, "evidence_version": evidence_version, "images": images,
                  "image_stamps": stamps, "joint_state": joints, "instruction": instruction,
                  "camera_calibration": calib}
        return oid, project_observation(source, cameras=self.cameras)

    def snapshot(self) -> Snapshot:
        return Snapshot(self.backend.save_state(), copy.deepcopy(self.balance), self.reading)

    def restore(self, snap: Snapshot) -> None:
        self.backend.restore_state(snap.blob)
        self.balance = copy.deepcopy(snap.balance)
        self.reading = snap.reading

    def close(self) -> None:
        self.backend.close()
