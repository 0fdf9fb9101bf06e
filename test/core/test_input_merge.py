"""The referee's inputs come out in sim-time order whatever order they arrived in."""
from __future__ import annotations

import random

from labference_ros.core.input_merge import Delivery, InputMerger
from labference_ros.core.measurements import BalanceMeasurement, WorldMeasurement


def reading(g):
    return BalanceMeasurement(raw_g=g, filtered_g=g, displayed_g=g, stable=True)


def feed(order):
    merger, out = InputMerger(), []
    for kind, t in order:
        if kind == "w":
            merger.add_world(WorldMeasurement(t=t))
        elif kind == "r":
            merger.add_reading(t, reading(100 + t))
        else:
            merger.add_delivery(Delivery(f"obs@{t}", t))
        out += merger.drain()
    out += merger.drain(final=True)
    return [(k, (v.t, v.balance.raw_g if v.balance else None) if k == "measure" else v.observation_id)
            for k, v in out]


def interleavings(streams, rng, n):
    """Random arrival orders that keep each topic's own order (DDS keeps it per publisher)."""
    for _ in range(n):
        queues = [list(s) for s in streams]
        order = []
        while any(queues):
            q = rng.choice([q for q in queues if q])
            order.append(q.pop(0))
        yield order


def test_same_sequence_for_every_arrival_order():
    worlds = [("w", 0.01), ("w", 0.02), ("w", 0.03)]
    readings = [("r", 0.01), ("r", 0.02), ("r", 0.03)]
    deliveries = [("d", 0.02)]
    expected = [("measure", (0.01, 100.01)), ("measure", (0.02, 100.02)), ("deliver", "obs@0.02"),
                ("measure", (0.03, 100.03))]
    checked = 0
    for order in interleavings([worlds, readings, deliveries], random.Random(7), 600):
        # Sync mode: physics moves past a delivery only after the referee acknowledged it.
        if order.index(("d", 0.02)) > order.index(("w", 0.03)):
            continue
        assert feed(order) == expected, order
        checked += 1
    assert checked > 50


def test_world_state_waits_for_its_reading_until_a_later_reading_proves_it_missing():
    merger = InputMerger()
    merger.add_world(WorldMeasurement(t=0.01))
    assert merger.drain() == []
    merger.add_reading(0.02, reading(1.0))
    (kind, m), = merger.drain()
    assert kind == "measure" and m.t == 0.01 and m.balance is None


def test_pairing_keeps_every_field_of_the_world_state():
    import dataclasses

    from labference_ros.core.measurements import ObjectMeasurement

    world = WorldMeasurement(t=0.5, objects={"std_10": ObjectMeasurement("std_10", "standard", (0, 0, 0),
                                                                          (1, 0, 0, 0), 0.0, 0.0, ("pan",))},
                             gripper_width=0.03, gripper_closing=True, pan_contacts=("std_10",),
                             environment={"transition": {"id": 1}})
    paired = world.with_balance(reading(7.0))
    assert paired == dataclasses.replace(world, balance=reading(7.0))
    for f in dataclasses.fields(WorldMeasurement):  # a new field must be carried too
        expected = reading(7.0) if f.name == "balance" else getattr(world, f.name)
        assert getattr(paired, f.name) == expected, f.name


def test_readings_older_than_a_released_world_state_are_dropped_however_they_arrived():
    merger = InputMerger()
    for t in (0.03, 0.01, 0.02, 0.05):
        merger.add_reading(t, reading(t))
    merger.add_world(WorldMeasurement(t=0.02))
    [(kind, m)] = merger.drain()
    assert kind == "measure" and m.balance == reading(0.02)
    merger.add_world(WorldMeasurement(t=0.01))  # before the release: ignored
    merger.add_world(WorldMeasurement(t=0.04))  # its reading never came; 0.05 proves it missing
    merger.add_world(WorldMeasurement(t=0.05))
    assert [(k, m.t, m.balance) for k, m in merger.drain()] == [("measure", 0.04, None),
                                                               ("measure", 0.05, reading(0.05))]
