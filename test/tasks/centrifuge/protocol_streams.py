"""Centrifuge loading's measurement streams for the protocol conformance suite
(test/core/test_protocol_conformance.py): only what the family means by each
situation (which tube, which slot, seated or not); the suite owns the
expectations. Basic condition unless said: tube_a seated in slot j, tube_b's
one legal destination opposite it.

Every builder returns the referee after its stream; opened_while_held returns
(referee, the id of the opportunity that opened while the tube was held)."""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from test_centrifuge_referee import DT, FINGERS, Cell  # noqa: E402

from labference_ros.tasks.centrifuge.contract import contract_for  # noqa: E402
from labference_ros.tasks.centrifuge.insertion import ROTOR  # noqa: E402
from labference_ros.tasks.centrifuge.instances import generate  # noqa: E402

TABLE_SPOT = (0.2, -0.25)


class ProtocolCell(Cell):
    """Cell with moving tubes (a speed per tube) and observations on demand."""

    def __init__(self, condition="basic", observe_every=True):
        inst = generate(condition, 1, task_seed=0, layout_seed=0, policy_seed=0)[0]
        super().__init__(inst, contract_for(condition))
        self.instance = inst
        self.observe_every = observe_every
        self.speeds: dict[str, float] = {}

    def measure(self):
        m = super().measure()
        for name, speed in self.speeds.items():
            o = m.objects[name]
            m.objects[name] = type(o)(o.name, o.kind, o.position, o.orientation, speed, 0.0, o.contacts)
        return m

    def run(self, seconds):
        for _ in range(int(round(seconds / DT))):
            self.referee.step(self.measure())
            if self.observe_every and self.k % 25 == 0:
                self.observe()
            self.k += 1
            self.t += DT

    def observe(self):
        return self.referee.deliver_observation(f"obs{self.k}", round(self.t, 9), "s")

    @property
    def opposite(self) -> int:
        return (self.instance.seated["tube_a"] + 6) % 12

    def approach(self, tube, slot):
        """The held tube's bottom descends along the slot's axis to just above its mouth."""
        f = self.frames[slot]
        for k in range(20):
            self.tubes[tube] = (f.mouth + (-0.06 + 0.0025 * k) * f.axis, f.axis.copy(), FINGERS)
            self.run(DT)

    def lift(self, tube):
        bottom, down, contacts = self.tubes[tube]
        self.tubes[tube] = (bottom + [0, 0, 0.08], down, contacts)
        self.run(0.2)

    def drop_on_table(self, tube, seconds=1.2):
        self.closing = False
        self.tubes[tube] = (np.array([*TABLE_SPOT, 0.02]), np.array([0.0, 0.0, -1.0]), ("table",))
        self.run(seconds)

    def seat(self, tube, slot, fraction=0.9):
        self.closing = False
        self.tubes[tube] = self._in_slot(slot, fraction, (ROTOR,))
        self.run(0.8)


def drop_after_correct_choice():
    cell = ProtocolCell()
    cell.run(0.5)
    cell.grasp("tube_b")
    cell.approach("tube_b", cell.opposite)
    cell.drop_on_table("tube_b")
    cell.grasp("tube_b")
    cell.insert("tube_b", cell.opposite)
    cell.run(3.5)
    return cell.referee


def regrasp_within_window():
    cell = ProtocolCell()
    cell.run(0.5)
    cell.grasp("tube_b")
    cell.approach("tube_b", cell.opposite)
    bottom, down, _ = cell.tubes["tube_b"]
    cell.closing = False
    cell.tubes["tube_b"] = (bottom, down, ())  # let go in the air, still falling
    cell.speeds["tube_b"] = 0.3
    cell.run(0.2)
    cell.speeds.pop("tube_b")
    cell.closing = True  # caught before it came to rest anywhere
    cell.tubes["tube_b"] = (bottom, down, FINGERS)
    cell.run(0.2)
    cell.insert("tube_b", cell.opposite)
    cell.run(3.5)
    return cell.referee


def slip():
    """tube_b seated in a wrong slot; Pick(tube_b) lifts it out, it slips back in, and
    the retry takes it out and seats it opposite tube_a."""
    cell = ProtocolCell()
    wrong = (cell.opposite + 1) % 12
    cell.run(0.5)
    cell.grasp("tube_b")
    cell.insert("tube_b", wrong)
    cell.run(0.6)
    cell.grasp("tube_b")
    cell.lift("tube_b")
    cell.seat("tube_b", wrong)  # slipped out of the fingers, back into its socket
    cell.run(0.6)
    cell.grasp("tube_b")
    cell.lift("tube_b")
    cell.insert("tube_b", cell.opposite)
    cell.run(3.5)
    return cell.referee


def premature_advancement():
    """Extended: tube_a let go shallow in slot 1 (its placement unfinished), then the
    robot takes tube_b."""
    cell = ProtocolCell("extended")
    cell.run(0.5)
    cell.grasp("tube_a")
    cell.insert("tube_a", 1, fraction=0.3)
    cell.grasp("tube_b")
    cell.run(0.5)
    return cell.referee


def wrong_then_corrected():
    cell = ProtocolCell()
    cell.run(0.5)
    cell.grasp("tube_b")
    cell.approach("tube_b", (cell.opposite + 1) % 12)  # the wrong slot first
    cell.lift("tube_b")
    cell.insert("tube_b", cell.opposite)
    cell.run(3.5)
    return cell.referee


def release_outside_region():
    cell = ProtocolCell()
    cell.run(0.5)
    cell.grasp("tube_b")
    cell.approach("tube_b", cell.opposite)
    cell.drop_on_table("tube_b", seconds=1.5)
    return cell.referee


def completed():
    cell = ProtocolCell()
    cell.run(0.5)
    cell.grasp("tube_b")
    cell.insert("tube_b", cell.opposite)
    cell.run(3.5)
    return cell.referee


def opened_while_held():
    cell = ProtocolCell(observe_every=False)
    cell.run(0.3)
    cell.grasp("tube_b")  # no observation delivered yet: nothing is open
    opened = cell.observe()[0]
    cell.insert("tube_b", cell.opposite)
    return cell.referee, opened["opportunity_id"]
