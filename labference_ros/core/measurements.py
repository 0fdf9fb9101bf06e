"""Evaluator-side measurements: the plain data the referee core consumes.

The simulator (or a physical rig) produces these; recognisers, the state update
and the replay audit consume them. Nothing here is ever sent to a policy.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# Identities that can appear in contact lists besides object names.
PAN = "pan"
TABLE = "table"
BALANCE_BODY = "balance_body"
LEFT_FINGER = "left_finger"
RIGHT_FINGER = "right_finger"
ROBOT = "robot"  # any other robot link
ROBOT_PARTS = frozenset({LEFT_FINGER, RIGHT_FINGER, ROBOT})  # any robot contact

_new_instance = object.__new__
_set_attribute = object.__setattr__


def frozen_instance(cls, values: dict):
    """An instance of the frozen dataclass ``cls`` whose fields are ``values`` (every
    field, by name), equal to ``cls(**values)``: one attribute dictionary instead of
    the generated __init__'s object.__setattr__ per field, which dominates when the
    referee and the audit build several measurements per 10 ms of sim time."""
    instance = _new_instance(cls)
    _set_attribute(instance, "__dict__", values)
    return instance


@dataclass(frozen=True)
class ObjectMeasurement:
    name: str
    kind: str  # "standard" | "sample"
    position: tuple[float, float, float]  # world frame, metres
    orientation: tuple[float, float, float, float]  # quaternion w, x, y, z
    linear_speed: float  # m/s
    angular_speed: float  # rad/s
    contacts: tuple[str, ...] = ()  # identities touching this object

    @property
    def left_finger_contact(self) -> bool:
        return LEFT_FINGER in self.contacts

    @property
    def right_finger_contact(self) -> bool:
        return RIGHT_FINGER in self.contacts


@dataclass(frozen=True)
class BalanceMeasurement:
    raw_g: float
    filtered_g: float
    displayed_g: float
    stable: bool
    overload: bool = False
    valid: bool = True
    invalid_reason: str = ""


@dataclass(frozen=True)
class WorldMeasurement:
    """All evaluator-side measurements at one sim instant."""

    t: float  # sim time, seconds
    objects: dict[str, ObjectMeasurement] = field(default_factory=dict)
    gripper_width: float = 0.08  # metres between the fingers
    gripper_closing: bool = False  # the last gripper command asked to close/grasp
    pan_contacts: tuple[str, ...] = ()  # identities touching the pan
    balance: BalanceMeasurement | None = None
    # What the environment did just before this instant (placement recall's occluded
    # transition: {"transition": {...}}); None when nothing. Travels with the state so
    # that the referee and the audit see it in the same place of the same stream.
    environment: dict | None = field(default=None, compare=False)

    def with_balance(self, balance: BalanceMeasurement | None) -> WorldMeasurement:
        """This instant paired with its balance reading (dataclasses.replace, without
        its per-call field introspection: the merger pairs every measurement)."""
        return frozen_instance(WorldMeasurement, {**self.__dict__, "balance": balance})

    @property
    def hand_on_pan(self) -> bool:
        return not ROBOT_PARTS.isdisjoint(self.pan_contacts)


@dataclass(frozen=True)
class SensorFrame:
    """Everything a real cell measures at one instant: what a sensor estimator
    (TaskFamily.sensor_estimator) turns into a WorldMeasurement."""

    t: float
    markers: dict  # objects whose marker is seen now: name -> ((x, y, z) centre, (w, x, y, z))
    fingertip: tuple[float, float, float]  # centre between the fingertips (forward kinematics)
    gripper_width: float                    # metres between the fingers
    gripper_closing: bool                   # the last gripper command closes or grasps
    balance: BalanceMeasurement | None
    viewpoint: tuple[float, float, float] | None = None  # the marker camera's centre (None: poses as measured)
