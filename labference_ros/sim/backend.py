"""The engine-neutral simulator interface the lab_sim node drives.

A backend owns one physics world for one task instance. The node calls it
in a fixed order each tick: apply commands, advance, measure, render. All
evaluator data come out of measure()/pan_wrench(); the balance reading is
computed elsewhere from pan_wrench() only, never from known masses.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass

import numpy as np

from labference_ros.core.measurements import WorldMeasurement
from labference_ros.tasks.base import Instance

ARM_JOINT_NAMES = tuple(f"panda_joint{i}" for i in range(1, 8))
FINGER_JOINT_NAMES = ("panda_finger_joint1", "panda_finger_joint2")
CAMERA_NAMES = ("front", "wrist", "display")


@dataclass(frozen=True)
class JointState:
    names: tuple[str, ...]
    position: tuple[float, ...]
    velocity: tuple[float, ...]
    effort: tuple[float, ...] = ()


@dataclass(frozen=True)
class Wrench:
    """Load-cell wrench in the pan support frame (z opposes gravity): the
    support force the balance body exerts on the pan, N and N m."""
    force: tuple[float, float, float]
    torque: tuple[float, float, float]
    frame_id: str = "pan_load_cell"

    @property
    def force_up(self) -> float:
        return self.force[2]


@dataclass(frozen=True)
class EntityState:
    """One entity of the loaded scene as a simulator reports it to the world (ground
    truth, world frame): a measured object, a fixture or the robot's base."""
    name: str
    category: str  # "object" (moves), "fixture" (static) or "robot"
    position: tuple[float, float, float]  # metres
    orientation: tuple[float, float, float, float]  # quaternion w, x, y, z
    linear_velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)  # m/s, world frame
    angular_velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)  # rad/s, world frame
    movable: bool = False  # its pose can be set (a free body)


@dataclass(frozen=True)
class CommandCheck:
    ok: bool
    reason: str = ""


@dataclass(frozen=True)
class GripperState:
    width: float  # metres between the fingers
    target_width: float  # width of the last command
    grasp: bool  # last command was a grasp (force) command
    force: float  # commanded squeeze force, N (0 for a move)
    grasped: bool  # grasp command and width within [w - eps_inner, w + eps_outer]


class SimBackend(abc.ABC):
    """One simulated world of a task family's scene. Time only moves inside step()/advance()."""

    @abc.abstractmethod
    def load(self, instance: Instance) -> None:
        """Build the scene for this instance and reset to its start state."""

    @property
    @abc.abstractmethod
    def sim_time(self) -> float: ...

    @property
    @abc.abstractmethod
    def timestep(self) -> float: ...

    @property
    @abc.abstractmethod
    def gravity(self) -> float:
        """|g| of this world, m/s^2: the g0 the balance model must use."""

    @abc.abstractmethod
    def step(self, n: int = 1) -> None:
        """Advance n physics steps."""

    def advance(self, duration_s: float) -> None:
        """Advance by a whole number of physics steps covering duration_s."""
        n = int(round(duration_s / self.timestep))
        if n < 0:
            raise ValueError("cannot advance backwards")
        self.step(n)

    # commands --------------------------------------------------------------
    @abc.abstractmethod
    def set_arm_targets(self, positions, names=ARM_JOINT_NAMES) -> CommandCheck:
        """Joint position targets for panda_joint1..7. A rejected command
        leaves the arm holding its current position and says why."""

    @abc.abstractmethod
    def apply_arm_targets(self, ordered: tuple[float, ...]) -> None:
        """Targets of panda_joint1..7, in that order, that validate_arm_command accepted."""

    @abc.abstractmethod
    def set_gripper(self, width: float, speed: float = 0.1, force: float = 0.0,
                    epsilon_inner: float = 0.005, epsilon_outer: float = 0.005,
                    grasp: bool = False) -> CommandCheck:
        """Franka-Hand semantics: move to width at speed, or (grasp=True)
        close on an object of about `width` and squeeze with `force` N."""

    @abc.abstractmethod
    def set_object_pose(self, name: str, position, orientation=(1.0, 0.0, 0.0, 0.0)) -> None:
        """Evaluator-side placement of an object (at rest); for scene set-up,
        environment transitions and tests, never for a tested system."""

    # measurements ----------------------------------------------------------
    @abc.abstractmethod
    def measure(self) -> WorldMeasurement:
        """Evaluator-side object poses, speeds and contacts (balance=None)."""

    @abc.abstractmethod
    def joint_state(self) -> JointState:
        """panda_joint1..7 and panda_finger_joint1/2."""

    @abc.abstractmethod
    def gripper_state(self) -> GripperState: ...

    @abc.abstractmethod
    def pan_wrench(self) -> Wrench:
        """The load cell: what the balance model reads."""

    @abc.abstractmethod
    def empty_pan_wrench(self) -> Wrench:
        """The load-cell wrench with nothing on the pan, measured when the
        scene was loaded (the tare the balance model calibrates with)."""

    # display and cameras ---------------------------------------------------
    @abc.abstractmethod
    def set_display(self, displayed_g: float, stable: bool) -> None:
        """Show the balance node's value on the seven-segment readout;
        a non-finite value shows dashes (sensor error or overload)."""

    @abc.abstractmethod
    def render(self, camera_name: str) -> np.ndarray:
        """HxWx3 uint8 image from one of CAMERA_NAMES."""

    # checkpoints -----------------------------------------------------------
    @abc.abstractmethod
    def save_state(self) -> bytes:
        """Everything needed to continue bit-exactly (physics incl. warm
        start, controller targets, display) for the loaded instance."""

    @abc.abstractmethod
    def restore_state(self, blob: bytes) -> None: ...

    def close(self) -> None:
        """Release renderers and other engine resources."""
