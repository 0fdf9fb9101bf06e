"""Task-level operations u = (type, object, destination) (paper 3.1): the
weighing family's Add/Remove and the centrifuge family's Pick/Insert share
one vocabulary; each contract names the types it uses (operation_types).

Kept apart from low-level robot commands. Wait and Stop carry empty object and
destination fields, matching msg/Operation.msg.
"""
from __future__ import annotations

from dataclasses import dataclass

from .measurements import PAN, TABLE

ADD = "add"
REMOVE = "remove"
WAIT = "wait"
STOP = "stop"
PICK = "pick"  # centrifuge loading: take a tube (out of a slot, or from its rack)
INSERT = "insert"  # centrifuge loading: insert a tube into a rotor slot (destination = slot label)
OPERATION_TYPES = (ADD, REMOVE, WAIT, STOP, PICK, INSERT)
PHYSICAL_TYPES = (ADD, REMOVE, PICK, INSERT)


@dataclass(frozen=True, order=True)
class Operation:
    type: str
    object: str = ""
    destination: str = ""

    def __post_init__(self) -> None:
        if self.type not in OPERATION_TYPES:
            raise ValueError(f"unknown operation type {self.type!r}")

    @property
    def physical(self) -> bool:
        return self.type in PHYSICAL_TYPES

    def to_dict(self) -> dict:
        return {"type": self.type, "object": self.object, "destination": self.destination}

    @classmethod
    def from_dict(cls, data: dict) -> "Operation":
        return cls(str(data["type"]), str(data.get("object", "") or ""), str(data.get("destination", "") or ""))

    def __str__(self) -> str:
        if not self.physical:
            return self.type
        return f"{self.type}({self.object}->{self.destination})"


def add(obj: str) -> Operation:
    return Operation(ADD, obj, PAN)


def remove(obj: str) -> Operation:
    return Operation(REMOVE, obj, TABLE)


def pick(obj: str) -> Operation:
    return Operation(PICK, obj)


def insert(obj: str, slot: str) -> Operation:
    return Operation(INSERT, obj, slot)


WAIT_OP = Operation(WAIT)
STOP_OP = Operation(STOP)


def as_operation(op: "Operation | dict") -> Operation:
    return op if isinstance(op, Operation) else Operation.from_dict(op)
