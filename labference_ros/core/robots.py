"""The Franka arms a cell can have, as data: joint and link names, the limits a
command must keep, and where franka_ros2 serves the arm and the hand.

Pure (numpy only). The cell description names the model (`robot.model` for the
simulator, `robot.rig_model` for a real rig); the ActionSpec, the safety
envelope, the controllers file, the estimator, the gripper bridge and the
launch files read the names and limits from here.

Sources: Franka's "Robot and interface specifications" (joint position,
velocity, acceleration and jerk maxima of the Panda and the Franka Research 3);
the FR3's position-dependent velocity law as libfranka's rate limiter writes it
(per joint `min(v_max, max(0, -c + sqrt(max(0, k (a - q)))))` upwards and the
mirror image downwards); franka_ros2's names (`<arm_id>_joint1..7`,
`<arm_id>_finger_joint1/2`, the hand at `/<arm_id>_gripper/{move,grasp,homing}`,
the trajectory controller `joint_trajectory_controller`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class VelocityLaw:
    """Position-dependent joint velocity bounds (the FR3's): per joint the ceiling
    `v_max`, offset `c`, gain `k` and the positions `a_up`, `a_down` where the
    allowed speed towards that end falls to zero."""
    v_max: tuple[float, ...]
    offset: tuple[float, ...]
    gain: tuple[float, ...]
    a_up: tuple[float, ...]
    a_down: tuple[float, ...]

    def bounds(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(lowest, highest) allowed joint velocity at positions q (... x 7)."""
        q = np.asarray(q, float)
        v_max, c, k = (np.asarray(x) for x in (self.v_max, self.offset, self.gain))
        up = np.minimum(v_max, np.maximum(0.0, -c + np.sqrt(np.maximum(0.0, k * (np.asarray(self.a_up) - q)))))
        down = np.maximum(-v_max, np.minimum(0.0, c - np.sqrt(np.maximum(0.0, k * (np.asarray(self.a_down) + q)))))
        return down, up


@dataclass(frozen=True)
class RobotModel:
    name: str  # franka_ros2's arm_id
    lower: tuple[float, ...]  # rad
    upper: tuple[float, ...]
    max_velocity: tuple[float, ...]  # rad/s, everywhere
    max_acceleration: tuple[float, ...]  # rad/s^2
    max_jerk: tuple[float, ...]  # rad/s^3
    velocity_law: VelocityLaw | None = None  # where the velocity bound depends on the position
    hand_max_width: float = 0.08  # m, Franka Hand

    @property
    def arm_joints(self) -> tuple[str, ...]:
        return tuple(f"{self.name}_joint{i}" for i in range(1, 8))

    @property
    def finger_joints(self) -> tuple[str, ...]:
        return (f"{self.name}_finger_joint1", f"{self.name}_finger_joint2")

    @property
    def links(self) -> tuple[str, ...]:
        return tuple(f"{self.name}_link{i}" for i in range(0, 9)) + (f"{self.name}_hand",)

    @property
    def gripper_actions(self) -> str:
        """Namespace of franka_gripper's move, grasp and homing actions."""
        return f"/{self.name}_gripper"

    @property
    def trajectory_controller(self) -> str:
        """franka_ros2's joint trajectory controller (franka_bringup's controllers.yaml)."""
        return "joint_trajectory_controller"

    def velocity_bounds(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(lowest, highest) joint velocity allowed at positions q (... x 7)."""
        q = np.asarray(q, float)
        v_max = np.broadcast_to(np.asarray(self.max_velocity), q.shape)
        if self.velocity_law is None:
            return -v_max, v_max
        down, up = self.velocity_law.bounds(q)
        return np.maximum(down, -v_max), np.minimum(up, v_max)


PANDA = RobotModel(
    name="panda",
    lower=(-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973),
    upper=(2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973),
    max_velocity=(2.1750, 2.1750, 2.1750, 2.1750, 2.6100, 2.6100, 2.6100),
    max_acceleration=(15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0),
    max_jerk=(7500.0, 3750.0, 5000.0, 6250.0, 7500.0, 10000.0, 10000.0),
)

FR3 = RobotModel(
    name="fr3",
    lower=(-2.7437, -1.7837, -2.9007, -3.0421, -2.8065, 0.5445, -3.0159),
    upper=(2.7437, 1.7837, 2.9007, -0.1518, 2.8065, 4.5169, 3.0159),
    max_velocity=(2.62, 2.62, 2.62, 2.62, 5.26, 4.18, 5.26),
    max_acceleration=(10.0,) * 7,
    max_jerk=(5000.0,) * 7,
    velocity_law=VelocityLaw(
        v_max=(2.62, 2.62, 2.62, 2.62, 5.26, 4.18, 5.26),
        offset=(0.30, 0.20, 0.20, 0.30, 0.35, 0.35, 0.35),
        gain=(12.0, 5.17, 7.00, 8.00, 34.0, 11.0, 34.0),
        a_up=(2.75010, 1.79180, 2.90650, -0.14580, 2.81010, 4.52050, 3.01960),
        a_down=(2.75010, 1.79180, 2.90650, 3.04810, 2.81010, -0.54092, 3.01960)),
)

ROBOT_MODELS = {m.name: m for m in (PANDA, FR3)}


def robot_model(name: str) -> RobotModel:
    """The model named; a clear error for any other name."""
    try:
        return ROBOT_MODELS[name]
    except KeyError:
        raise ValueError(f"unknown robot model {name!r} (known: {', '.join(sorted(ROBOT_MODELS))})") from None
