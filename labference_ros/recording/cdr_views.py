"""Direct CDR readers for the audit's two high-volume topics.

rclpy's C deserialization still builds every nested message through its
generated Python constructors (Pose, Twist, Vector3, ... per object per world
state), which is where most of an audit's time went. These readers unpack
`labference/msg/WorldState` and `labference/msg/BalanceReading` with struct
straight into light views that carry the same field names, and the audit hands
them to the same msgconv functions the online referee uses. A test checks
them against rclpy's deserialization field by field.

CDR (XCDR1, as rmw_fastrtps writes it): a 4-byte encapsulation header (byte 1
is 1 for little endian), then fields aligned to their own size, relative to
the byte after the header; strings are a uint32 length (with the NUL) and the
bytes; sequences a uint32 count and the elements.
"""
from __future__ import annotations

import struct
from typing import NamedTuple


class Vec3(NamedTuple):
    x: float
    y: float
    z: float


class Quat(NamedTuple):
    x: float
    y: float
    z: float
    w: float


class Pose(NamedTuple):
    position: Vec3
    orientation: Quat


class Twist(NamedTuple):
    linear: Vec3
    angular: Vec3


class Stamp(NamedTuple):
    sec: int
    nanosec: int


class Header(NamedTuple):
    stamp: Stamp
    frame_id: str


class ObjectState(NamedTuple):
    name: str
    kind: str
    pose: Pose
    twist: Twist
    supported_by: str
    left_finger_contact: bool
    right_finger_contact: bool
    contacts: list


class WorldState(NamedTuple):
    header: Header
    objects: list
    gripper_width: float
    gripper_closing: bool
    hand_on_pan: bool
    pan_contacts: list
    environment_json: str


class BalanceReading(NamedTuple):
    header: Header
    raw_g: float
    filtered_g: float
    displayed_g: float
    stable: bool
    overload: bool
    valid: bool
    invalid_reason: str
    source: str


class _Reader:
    __slots__ = ("buf", "pos", "e")

    def __init__(self, data: bytes):
        if len(data) < 4 or data[1] not in (0, 1):
            raise ValueError("not a CDR payload (bad encapsulation header)")
        self.buf = memoryview(data)
        self.pos = 4
        self.e = "<" if data[1] == 1 else ">"

    def _align(self, n: int) -> None:
        self.pos += (-(self.pos - 4)) % n

    def u32(self) -> int:
        self._align(4)
        (v,) = struct.unpack_from(self.e + "I", self.buf, self.pos)
        self.pos += 4
        return v

    def stamp(self) -> Stamp:
        self._align(4)
        sec, nsec = struct.unpack_from(self.e + "iI", self.buf, self.pos)
        self.pos += 8
        return Stamp(sec, nsec)

    def f64s(self, n: int) -> tuple:
        self._align(8)
        v = struct.unpack_from(f"{self.e}{n}d", self.buf, self.pos)
        self.pos += 8 * n
        return v

    def bools(self, n: int) -> tuple:
        v = tuple(b != 0 for b in self.buf[self.pos:self.pos + n])
        if len(v) != n:
            raise ValueError("payload ends inside a field")
        self.pos += n
        return v

    def string(self) -> str:
        n = self.u32()
        end = self.pos + n
        if n == 0 or end > len(self.buf):
            raise ValueError("bad string length")
        s = bytes(self.buf[self.pos:end - 1]).decode("utf-8")
        self.pos = end
        return s

    def strings(self) -> list:
        return [self.string() for _ in range(self.u32())]

    def header(self) -> Header:
        return Header(self.stamp(), self.string())


def world_state(data: bytes) -> WorldState:
    r = _Reader(data)
    header = r.header()
    objects = []
    for _ in range(r.u32()):
        name = r.string()
        kind = r.string()
        px, py, pz, qx, qy, qz, qw = r.f64s(7)
        lx, ly, lz, ax, ay, az = r.f64s(6)
        supported_by = r.string()
        left, right = r.bools(2)
        contacts = r.strings()
        objects.append(ObjectState(name, kind, Pose(Vec3(px, py, pz), Quat(qx, qy, qz, qw)),
                                   Twist(Vec3(lx, ly, lz), Vec3(ax, ay, az)), supported_by, left, right, contacts))
    (width,) = r.f64s(1)
    closing, on_pan = r.bools(2)
    pan_contacts = r.strings()
    # environment_json came later: a world state recorded before it ends here.
    environment = r.string() if r.pos < len(r.buf) else ""
    return WorldState(header, objects, width, closing, on_pan, pan_contacts, environment)


def balance_reading(data: bytes) -> BalanceReading:
    r = _Reader(data)
    header = r.header()
    raw_g, filtered_g, displayed_g = r.f64s(3)
    stable, overload, valid = r.bools(3)
    return BalanceReading(header, raw_g, filtered_g, displayed_g, stable, overload, valid, r.string(), r.string())


# Type name -> reader, for the topics the audit reads in bulk.
READERS = {"labference/msg/WorldState": world_state, "labference/msg/BalanceReading": balance_reading}
