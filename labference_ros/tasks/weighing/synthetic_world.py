"""A scripted, physics-free world that emits WorldMeasurement streams.

For tests and benchmarks of the referee core only: it fakes contacts, speeds
and a balance with a settling window, so protocol cases (drops, shallow
placements, hand pressure, disturbances) can be written in a few lines.
"""
from __future__ import annotations

from labference_ros.tasks.weighing.instance import WeighingInstance
from labference_ros.core.measurements import BALANCE_BODY, LEFT_FINGER, PAN, RIGHT_FINGER, ROBOT, TABLE, BalanceMeasurement, ObjectMeasurement, WorldMeasurement
from labference_ros.tasks.weighing.objects import SAMPLE, STANDARD_MASSES_G, STANDARDS

# Scripted resting places and the contacts they produce.
_PLACE_CONTACTS = {
    "pan": (PAN,), "table": (TABLE,), "rim": (PAN, BALANCE_BODY), "table_edge": (TABLE, BALANCE_BODY),
    "floor": (), "held": (),
}

# Where each place puts an object (metres, world frame): a weight on the table keeps
# its own slot; a held one is carried 0.1 m above where it was last set down.
_PLACE_POSITIONS = {
    "pan": (0.50, 0.0, 0.12), "rim": (0.45, 0.0, 0.12), "table_edge": (0.40, 0.08, 0.05),
    "floor": (0.30, 0.40, -0.70),
}


def _table_slot(name: str) -> tuple[float, float, float]:
    return (0.30, 0.05 * (sorted(STANDARDS + (SAMPLE,)).index(name) + 1), 0.0)


class SyntheticWorld:
    def __init__(self, instance: WeighingInstance, referee=None, dt: float = 0.02, settle_s: float = 1.0,
                 observe_every_s: float | None = 0.1, start_stable: bool = True):
        """The instance's external event (hidden-event condition), if any, is announced
        with the first measurement at or after its trigger time, as lab_sim does."""
        self.instance = instance
        self._event_due = (instance.external_event or {}).get("trigger_t")
        self.referee = referee
        self.dt = dt
        self.settle_s = settle_s
        self.observe_every_s = observe_every_s
        self.t = 0.0
        self.place = {s: ("pan" if s in instance.initial_on_pan else "table") for s in STANDARDS}
        self.place[SAMPLE] = "pan"
        self.position = {n: self._place_position(n, w) for n, w in self.place.items()}
        self.fingers: set[str] = set()  # objects the fingers touch
        self.moving: dict[str, float] = {}  # object -> time its motion stops
        self.gripper_closing = False
        self.hand_on_pan = False
        self.hand_extra_g = 0.0
        self._load = self._true_load()
        self._last_change = -10.0 if start_stable else 0.0
        self._next_obs = 0.0
        self._obs = 0
        self.outputs: list[dict] = []
        self.measurements: list[WorldMeasurement] = []
        self.keep_measurements = False

    # -------------------------------------------------------------- physics
    def _place_position(self, name: str, where: str) -> tuple[float, float, float]:
        if where == "table":
            return _table_slot(name)
        if where == "held":
            x, y, z = self.position[name]
            return (x, y, z + 0.1)
        return _PLACE_POSITIONS[where]

    def _set_place(self, name: str, where: str) -> None:
        self.position[name] = self._place_position(name, where)
        self.place[name] = where

    def _true_load(self) -> float:
        g = 0.0
        for name, where in self.place.items():
            mass = self.instance.sample_mass_g if name == SAMPLE else STANDARD_MASSES_G[name]
            if where == "pan":
                g += mass
            elif where == "rim":
                g += 0.5 * mass  # leaning: part of the load goes into the balance body
        return g + (self.hand_extra_g if self.hand_on_pan else 0.0)

    def measure(self) -> WorldMeasurement:
        objects = {}
        for name, where in self.place.items():
            contacts = list(_PLACE_CONTACTS[where])
            if name in self.fingers:
                contacts += [LEFT_FINGER, RIGHT_FINGER]
            speed = 0.1 if self.moving.get(name, -1.0) > self.t else 0.0
            objects[name] = ObjectMeasurement(
                name=name, kind="sample" if name == SAMPLE else "standard",
                position=self.position[name], orientation=(1.0, 0.0, 0.0, 0.0),
                linear_speed=speed, angular_speed=0.0, contacts=tuple(contacts))
        pan_contacts = tuple(n for n, w in self.place.items() if w in ("pan", "rim"))
        if self.hand_on_pan:
            pan_contacts += (ROBOT,)
        load = self._load
        stable = self.t - self._last_change >= self.settle_s - 1e-9
        environment = None
        if self._event_due is not None and self.t >= self._event_due - 1e-9:
            environment = {"external_event": {"name": self.instance.external_event["name"], "t": round(self.t, 9)}}
            self._event_due = None
        return WorldMeasurement(
            t=round(self.t, 9), objects=objects, gripper_width=0.02 if self.fingers else 0.08,
            gripper_closing=self.gripper_closing, pan_contacts=pan_contacts,
            balance=BalanceMeasurement(raw_g=load, filtered_g=load, displayed_g=round(load, 1), stable=stable),
            environment=environment)

    def run(self, seconds: float) -> None:
        steps = int(round(seconds / self.dt))
        for _ in range(steps):
            self.t += self.dt
            load = self._true_load()
            # Only load changes and motion on the pan disturb the balance.
            if abs(load - self._load) > 1e-9 or any(
                    until > self.t and self.place.get(n) in ("pan", "rim") for n, until in self.moving.items()):
                self._last_change = self.t
            self._load = load
            m = self.measure()
            if self.keep_measurements:
                self.measurements.append(m)
            if self.referee is not None:
                self.outputs += self.referee.step(m)
                if self.observe_every_s is not None and self.t >= self._next_obs - 1e-9:
                    self.observe()
                    self._next_obs = self.t + self.observe_every_s

    def observe(self) -> list[dict]:
        self._obs += 1
        out = self.referee.deliver_observation(f"obs{self._obs:05d}", round(self.t, 9))
        self.outputs += out
        return out

    # --------------------------------------------------------------- script
    def grasp(self, obj: str, hold_s: float = 0.3) -> None:
        self.fingers.add(obj)
        self.gripper_closing = True
        self.run(0.04)
        self._set_place(obj, "held")
        self.moving[obj] = self.t + hold_s
        self.run(hold_s)

    def put(self, obj: str, where: str, release: bool = True, settle_s: float = 2.0) -> None:
        self._set_place(obj, where)
        self.moving[obj] = self.t + 0.06
        self.run(0.2)
        if release:
            self.release(obj)
        self.run(settle_s)

    def release(self, obj: str) -> None:
        self.fingers.discard(obj)
        self.gripper_closing = False
        self.moving[obj] = self.t + 0.06

    def move(self, obj: str, where: str, settle_s: float = 2.0) -> None:
        self.grasp(obj)
        self.run(0.4)
        self.put(obj, where, settle_s=settle_s)

    def press_pan(self, seconds: float, extra_g: float = 0.0) -> None:
        self.hand_on_pan, self.hand_extra_g = True, extra_g
        self.run(seconds)
        self.hand_on_pan, self.hand_extra_g = False, 0.0

    def bump(self, obj: str = SAMPLE) -> None:
        """A brief disturbance: the object jiggles and the reading loses stability."""
        self.moving[obj] = self.t + 0.1

    def records(self, kind: str) -> list[dict]:
        return [r for r in self.outputs if r["record"] == kind]

    def events(self, category: str | None = None) -> list[dict]:
        return [r for r in self.outputs if r["record"] == "event" and (category is None or r["category"] == category)]
