"""The referee's world measurements from what a real cell senses (pure).

A physical cell has no contact sensors and no privileged object state. What it
has: object poses from fiducial markers on calibrated cameras, the robot's joint
states through its kinematic model (the fingertip centre), the gripper's width
and command, and the balance. This module turns one such sensor frame at a time
into the WorldMeasurement the weighing referee consumes, deriving the contacts
the referee reads support from:

- an object whose bottom sits on the pan surface with its centre more than half
  its radius inside the pan's edge touches the pan; one nearer the edge or
  beyond it (a footprint that hangs over), or tilted (leaning on something),
  with its lowest point at the pan's level touches the pan and the balance body
  (ambiguous: never pan support);
  one at table height off the balance touches the table;
- a closing gripper whose fingers have stopped at an object's diameter, centred
  on it, holds it (both fingers); while held, an object the hand hides follows the
  fingertips by the offset it had when last seen (with a marker camera's viewpoint, a
  held object follows them even when its marker is seen: one camera's depth is worse);
- fingertips at or below the pan surface over the pan press it (robot on pan).

One camera measures a small marker's direction well and its distance poorly
(centimetres at a metre). When the frame says where the marker camera is
(`viewpoint`), a seen object that is not in the hand and stands nearly upright
is put where its viewing ray meets the surface it can rest on there (the pan
over the pan, else the table), if that is within `rest_snap_m` of the solved
pose: the ray fixes x and y, the surface fixes the height.

Uncertainty is explicit, never a guess. A marker not seen for longer than
`marker_timeout_s` (and not in the hand, nor under it: fingertips within
`hand_occlusion_m` horizontally and `hand_occlusion_height_m` above it, which hide
it from the camera on the way down to a grasp and up from a release; with a marker
camera a marker seen there is partly covered and not used) keeps its last pose and
contacts, and
the measurement's balance reading is marked invalid with the reason, so the
referee records a validity event and takes no reading from it. A stable
reading whose change since the last consistent one differs from the change in
the tracked standards' nominal masses on the pan is marked invalid the same
way. Loads the estimator cannot predict suspend that check: the sample (its
mass is what is being weighed) joining or leaving the pan, and an object in
ambiguous support (a weight on the rim carries part of its mass).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from labference_ros.cell.description import LABEL_LIFT_M, CellDescription, weighing_cell
from labference_ros.core.geometry import body_axis, slide_to_height
from labference_ros.core.measurements import (BALANCE_BODY, LEFT_FINGER, PAN, RIGHT_FINGER, ROBOT, TABLE,
                                              BalanceMeasurement, ObjectMeasurement, SensorFrame,
                                              WorldMeasurement)
from labference_ros.tasks.weighing.layout import start_places
from labference_ros.tasks.weighing.objects import SAMPLE, STANDARD_MASSES_G

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]
ESTIMATOR = "estimator"  # prefix of every invalid reason this module gives


@dataclass(frozen=True)
class EstimatorParameters:
    version: str = "sensor-estimator-v3"
    marker_timeout_s: float = 0.15      # unseen for longer: the object's state is unknown
    height_tolerance_m: float = 0.006   # object bottom vs. a surface
    tilt_limit_deg: float = 10.0        # more, near the pan: leaning on the rim
    grasp_width_tolerance_m: float = 0.006
    grasp_reach_m: float = 0.03         # fingertips to object centre, for a grasp
    # A grasp starts with fingers stopped by the object: a hand still closing passes through every
    # width on its way (and past an object it brushes) without holding anything. A hold in
    # progress lasts while the width matches, whatever the fingers' jitter.
    grasp_stall_speed_mps: float = 0.005
    hand_on_pan_margin_m: float = 0.01  # fingertips this close above the pan surface press it
    reading_tolerance_g: float = 0.5
    reading_tolerance_rel: float = 0.02
    # A stable reading is compared with the tracked load only once that load has stood this long:
    # the balance reports through its own filter and a serial line, a little behind the markers.
    reading_settle_s: float = 0.5
    # A monocular marker pose moved along its viewing ray onto a resting surface (with a viewpoint).
    rest_snap_m: float = 0.25
    rest_tilt_deg: float = 20.0         # solved tilt up to this: upright (a small marker's tilt is noisy)
    # Fingertips this close (horizontally) to an object hide its marker: unseen, it is not unknown.
    hand_occlusion_m: float = 0.08
    hand_occlusion_height_m: float = 0.15  # fingertips at most this far above the object's centre


@dataclass
class _Track:
    position: Vec3
    orientation: Quat
    seen_t: float
    held_offset: Vec3 | None = None  # object centre minus fingertips, while held
    contacts: tuple[str, ...] = ()
    speed: float = 0.0


@dataclass
class SensorWorldEstimator:
    """Feed frames in time order; each gives one WorldMeasurement."""

    balance_xy: tuple[float, float]
    initial_positions: dict[str, Vec3]  # every tracked object, where the instance puts it
    params: EstimatorParameters = field(default_factory=EstimatorParameters)
    cell: CellDescription = field(default_factory=weighing_cell)

    def __post_init__(self):
        self.tracks = {name: _Track(tuple(p), (1.0, 0.0, 0.0, 0.0), -math.inf)
                       for name, p in self.initial_positions.items()}
        self.last_t: float | None = None
        self._baseline: tuple[float, frozenset[str]] | None = None  # (reading, standards on pan)
        self._pan_set: frozenset[str] | None = None  # what the markers put on the pan, since _pan_set_t
        self._pan_set_t = -math.inf
        self._last_width: float | None = None
        self._fingers_stalled = True  # at rest before the first frame

    @classmethod
    def for_instance(cls, instance, params: EstimatorParameters | None = None) -> "SensorWorldEstimator":
        """Tracks start where the instance sets the objects up (the operator's set-up, checked
        against the first frames); the objects' shapes are the instance's binding's."""
        cell = weighing_cell().bound(getattr(instance, "binding", None))
        start = {name: (x, y, surface_z + cell.objects[name].height / 2)
                 for name, (x, y, surface_z) in start_places(instance).items()}
        return cls(balance_xy=tuple(instance.layout["balance"]), initial_positions=start,
                   params=params or EstimatorParameters(), cell=cell)

    # ------------------------------------------------------------------ one frame
    def estimate(self, frame: SensorFrame) -> WorldMeasurement:
        dt = 0.0 if self.last_t is None else frame.t - self.last_t
        if dt < 0:
            raise ValueError(f"sensor frame time went backwards: {frame.t} < {self.last_t}")
        self.last_t = frame.t
        if self._last_width is not None and dt > 0:
            width_speed = abs(frame.gripper_width - self._last_width) / dt
            self._fingers_stalled = width_speed <= self.params.grasp_stall_speed_mps
        self._last_width = frame.gripper_width
        unknown: list[str] = []
        for name, track in self.tracks.items():
            seen = frame.markers.get(name)
            before = track.position
            in_hand = track.held_offset is not None and self._still_closed_on(name, frame)
            if seen is not None and frame.viewpoint is not None and self._under_hand(track, frame):
                seen = None  # a marker between the fingers is partly covered: its corners, and pose, are not its own
            if in_hand and (seen is None or frame.viewpoint is not None):
                # In the hand: hidden by it, or seen by one camera that places it worse than the arm's kinematics.
                track.position = _add(frame.fingertip, track.held_offset)
                if seen is not None:
                    track.seen_t = frame.t
            elif seen is not None:
                track.position, track.orientation = tuple(seen[0]), tuple(seen[1])
                if frame.viewpoint is not None:
                    track.position, track.orientation = self._rested(name, track.position, track.orientation,
                                                                     frame.viewpoint)
                track.seen_t = frame.t
            elif frame.t - track.seen_t > self.params.marker_timeout_s and not self._under_hand(track, frame):
                unknown.append(name)
            track.speed = math.dist(before, track.position) / dt if dt > 0 else 0.0
            if name not in unknown:
                track.contacts = self._contacts(name, track, frame)
                held = LEFT_FINGER in track.contacts
                track.held_offset = _sub(track.position, frame.fingertip) if held else None
        objects = {name: ObjectMeasurement(name=name, kind="sample" if name == SAMPLE else "standard",
                                           position=tr.position, orientation=tr.orientation,
                                           linear_speed=tr.speed, angular_speed=0.0, contacts=tr.contacts)
                   for name, tr in self.tracks.items()}
        pan_contacts = tuple(n for n, tr in self.tracks.items() if PAN in tr.contacts)
        if self._fingertips_press_pan(frame.fingertip):
            pan_contacts += (ROBOT,)
        balance = self._checked_balance(frame, unknown)
        return WorldMeasurement(t=frame.t, objects=objects, gripper_width=frame.gripper_width,
                                gripper_closing=frame.gripper_closing, pan_contacts=pan_contacts,
                                balance=balance)

    def _under_hand(self, track: _Track, frame: SensorFrame) -> bool:
        """The hand is over the object, low enough to cover its marker: an unseen marker is explained
        by it (the object stays where it was) and, with a marker camera, a seen one is not trusted."""
        return (math.dist(track.position[:2], frame.fingertip[:2]) <= self.params.hand_occlusion_m
                and frame.fingertip[2] - track.position[2] <= self.params.hand_occlusion_height_m)

    def _rested(self, name: str, position: Vec3, orientation: Quat, viewpoint: Vec3) -> tuple[Vec3, Quat]:
        """The seen pose moved along its viewing ray onto the surface it rests on, if it is near one."""
        if _tilt_deg(orientation) > self.params.rest_tilt_deg:
            return position, orientation
        shape = self._shape(name)
        above = shape.height / 2 + LABEL_LIFT_M  # the marker's centre above the object's
        pan = self.cell.balance
        on_pan = slide_to_height(position, viewpoint, pan.pan_top_z + shape.height / 2, above)
        if math.dist(on_pan[:2], self.balance_xy) < pan.pan_radius + shape.radius:
            rested = on_pan
        else:
            rested = slide_to_height(position, viewpoint, self.cell.table.top_z + shape.height / 2, above)
            if self._over_balance(rested):
                return position, orientation
        if abs(rested[2] - position[2]) > self.params.rest_snap_m:
            return position, orientation  # far above any surface: lifted, as solved
        return rested, UPRIGHT

    # ------------------------------------------------------------------ contacts
    def _shape(self, name: str):
        return self.cell.objects[name]

    def _still_closed_on(self, name: str, frame: SensorFrame) -> bool:
        shape = self._shape(name)
        return (frame.gripper_closing
                and abs(frame.gripper_width - 2 * shape.radius) <= self.params.grasp_width_tolerance_m)

    def _contacts(self, name: str, track: _Track, frame: SensorFrame) -> tuple[str, ...]:
        p = self.params
        shape = self._shape(name)
        out: list[str] = []
        holding = LEFT_FINGER in track.contacts  # as of the last frame
        if (self._still_closed_on(name, frame) and (self._fingers_stalled or holding)
                and math.dist(track.position, frame.fingertip) <= p.grasp_reach_m):
            out += [LEFT_FINGER, RIGHT_FINGER]
        tilt = math.radians(_tilt_deg(track.orientation))
        # The cylinder's lowest point (an upright one: its bottom face).
        bottom = track.position[2] - (shape.height / 2 * math.cos(tilt) + shape.radius * math.sin(tilt))
        off_centre = math.dist(track.position[:2], self.balance_xy)
        pan = self.cell.balance
        tilted = math.degrees(tilt) > p.tilt_limit_deg
        on_pan_level = abs(bottom - pan.pan_top_z) <= p.height_tolerance_m
        near_pan = off_centre < pan.pan_radius + shape.radius
        if on_pan_level and near_pan and (tilted or off_centre > pan.pan_radius - shape.radius / 2):
            out += [PAN, BALANCE_BODY]  # leaning on the rim, or hanging over the edge
        elif on_pan_level and off_centre <= pan.pan_radius - shape.radius / 2:
            out.append(PAN)
        elif abs(bottom - self.cell.table.top_z) <= p.height_tolerance_m and not self._over_balance(track.position):
            out.append(TABLE)
        return tuple(out)

    def _over_balance(self, position: Vec3) -> bool:
        b = self.cell.balance
        behind, front = b.footprint_half_x
        dx, dy = position[0] - self.balance_xy[0], position[1] - self.balance_xy[1]
        return -behind <= dx <= front and abs(dy) <= b.housing_half_y

    def _fingertips_press_pan(self, fingertip: Vec3) -> bool:
        pan = self.cell.balance
        return (math.dist(fingertip[:2], self.balance_xy) <= pan.pan_radius
                and fingertip[2] <= pan.pan_top_z + self.params.hand_on_pan_margin_m)

    # ------------------------------------------------------------------ balance
    def _checked_balance(self, frame: SensorFrame, unknown: list[str]) -> BalanceMeasurement | None:
        b = frame.balance
        if b is None or not b.valid or b.overload:
            return b
        if unknown:
            return _invalid(b, f"{ESTIMATOR}: marker of {', '.join(sorted(unknown))} not seen for over "
                               f"{self.params.marker_timeout_s:g} s; support unknown")
        if not b.stable:
            return b
        supports = {n: tr.contacts for n, tr in self.tracks.items()}
        if any(LEFT_FINGER in c or ROBOT in c for c in supports.values()) or self._fingertips_press_pan(
                frame.fingertip):
            return b  # the hand loads or unloads the pan: no consistent reading to compare
        if any(BALANCE_BODY in c and PAN in c for c in supports.values()):
            self._baseline = None  # a partial load: nothing to predict, start again when it is gone
            return b
        on_pan = frozenset(n for n, c in supports.items() if PAN in c)
        if on_pan != self._pan_set:
            self._pan_set, self._pan_set_t = on_pan, frame.t
        if frame.t - self._pan_set_t < self.params.reading_settle_s:
            return b  # a reading this soon after the load changed may still show the old load
        if self._baseline is None or (SAMPLE in on_pan) != (SAMPLE in self._baseline[1]):
            self._baseline = (b.displayed_g, on_pan)  # the sample's mass is unknown: a new reference
            return b
        reading0, pan0 = self._baseline
        predicted = _nominal(on_pan) - _nominal(pan0)
        measured = b.displayed_g - reading0
        tolerance = max(self.params.reading_tolerance_g, self.params.reading_tolerance_rel * abs(predicted))
        if abs(measured - predicted) > tolerance:
            return _invalid(b, f"{ESTIMATOR}: reading changed by {measured:+.1f} g, the tracked standards on the "
                               f"pan by {predicted:+.1f} g; which weights the pan carries is unknown")
        self._baseline = (b.displayed_g, on_pan)
        return b


UPRIGHT: Quat = (1.0, 0.0, 0.0, 0.0)


def _nominal(names) -> float:
    return float(sum(STANDARD_MASSES_G.get(n, 0) for n in names))


def _invalid(b: BalanceMeasurement, reason: str) -> BalanceMeasurement:
    return replace(b, valid=False, stable=False, invalid_reason=reason)


def _tilt_deg(q: Quat) -> float:
    """Angle between the object's axis and world z (a unit quaternion)."""
    return math.degrees(math.acos(max(-1.0, min(1.0, body_axis(q)[2]))))


def _add(a: Vec3, b: Vec3) -> Vec3:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def _sub(a: Vec3, b: Vec3) -> Vec3:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])
