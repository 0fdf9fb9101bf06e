"""Scripted reference systems for feedback weighing.

All three plan top-down pick-and-place with skills/motion.py and hand the plan
out in chunks at the spec's control rate; they differ in what they know:

- scripted_expert (privileged): reads the instance's goal set, its objects' binding and the
  measured object positions, and completes the task.
- display_reader: pixels only. Reads the balance display, parses the target
  from the instruction, picks the standard whose mass equals the residual,
  and finds it (and the pan) in the front camera. When standards already
  stand on the pan at its first stable reading (the extended condition), it
  reads them from the image as well, infers the goal subset from reading,
  visible standards and target, and removes and adds standards until the
  arrangement is that subset (systems/weighing_plan.py).
- fixed_preference: same perception, no reasoning: always transfers one
  standard (default std_50).

Where the instruction says to wait for the balance's ready lamp (the hidden-event
condition), each waits, holding still, until the display camera's image shows
the lamp lit (perception/display_decode): the privileged expert too reads that
from the observation alone, never from the instance's trigger time.
"""
from __future__ import annotations

import re

from labference_ros.core.observation import PolicyObservation
from labference_ros.core.system import EvaluatorView
from labference_ros.perception.display_decode import decode_display
from labference_ros.perception.vision import (CameraCalibration, estimate_arrangement, estimate_scene,
                                              quick_standards_on_pan)
from labference_ros.tasks.scripted_base import PlannedMotionSystem
from labference_ros.tasks.weighing.instance import READY_LAMP_RULE
from labference_ros.tasks.weighing.moves import plan_to_pan, plan_to_table
from labference_ros.tasks.weighing.objects import STANDARD_MASSES_G
from labference_ros.tasks.weighing.systems.weighing_plan import corrections, estimate_goal, free_table_spot

READING_TOLERANCE_G = 0.5  # "done" when the stable reading is this close to the target
MAX_TRANSFERS_PER_MOVE = 2  # extended: attempts at one (standard, destination) before giving up
MAX_LOOKS = 4  # extended: unusable looks (standard unseen, inconsistent reading) before giving up


class PickPlaceSystem(PlannedMotionSystem):
    """Weighing's moves: a standard to the pan or to the table."""

    waits_for_ready_lamp = True  # an instruction's ready-lamp rule is kept (hidden-event condition)

    def reset(self, session_id: str, policy_seed: int) -> None:
        super().reset(session_id, policy_seed)
        self.ready_lamp_seen = False
        # The cell's object binding its grasps are planned for: the default objects unless
        # the system knows better (the privileged expert reads the instance's binding).
        self.binding: str | None = None

    def awaiting_cue(self, obs) -> bool:
        """The instruction asks to wait for the ready lamp and the display camera has not
        shown it lit yet (a system that cannot see the display keeps waiting)."""
        if not self.waits_for_ready_lamp or self.ready_lamp_seen or READY_LAMP_RULE not in obs.instruction:
            return False
        image = obs.images.get("display")
        if image is None or not decode_display(image).ready_lamp:
            return True
        self.ready_lamp_seen = True
        self._note(t=obs.sim_time, ready_lamp_seen=True)
        return False

    def receive_prefix(self, prefix: list[dict]) -> None:
        """A checkpoint's earlier transfers count as this system's own: it does
        not move a standard again that the prefix already moved."""
        for step in prefix:
            op = step["operation"]
            if op.get("object"):
                self.moved.append(op["object"])
                self._note(t=step["t"], prefix=op)

    def decide(self, obs, evaluator):
        """-> (standard, body centre xyz, destination xy, "pan" | "table") or
        None to wait. For the pan the xy is the balance centre."""
        raise NotImplementedError

    def plan_move(self, obs, move):
        name, xyz, dest_xy, dest = move
        to = plan_to_pan if dest == "pan" else plan_to_table
        return to(self.planner, obs.joint_positions, name, xyz, dest_xy, self.binding)


class _PixelSystem(PickPlaceSystem):
    """Finds standards and the pan in the front camera image."""

    def _see(self, obs: PolicyObservation):
        if "front" not in obs.images or "front" not in obs.camera_calibration:
            raise ValueError("needs the front camera and its calibration")
        calib = CameraCalibration.from_dict(obs.camera_calibration["front"])
        return estimate_scene(obs.images["front"], calib)

    def _transfer(self, obs, name: str, t: float):
        scene = self._see(obs)
        if name not in scene.standards or scene.pan_centre is None:
            self._note(t=t, not_found=name, pan_found=scene.pan_centre is not None)
            return None
        # Standards go to their own pan slot, measured from the pan centre seen.
        return name, scene.standards[name], scene.pan_centre, "pan"


class DisplayReader(_PixelSystem):
    name = "display_reader"
    def decide(self, obs, evaluator=None):
        t = obs.sim_time
        m = re.search(r"reading to (-?\d+(?:\.\d+)?) g", obs.instruction)
        if m is None:
            self._note(t=t, error="no target in the instruction")
            self.finished = True
            return None
        target = float(m.group(1))
        reading = decode_display(obs.images["display"])
        if not (reading.ok and reading.value is not None and reading.stable):
            return None  # wait for a stable, readable display
        if self.mode is None:
            self.mode = self._initial_mode(obs)
        if self.mode == "extended":
            return self._decide_extended(obs, target, reading.value, t)
        residual = target - reading.value
        if abs(residual) <= READING_TOLERANCE_G:
            self._note(t=t, reading=reading.value, done=True)
            self.finished = True
            return None
        candidates = [n for n, g in STANDARD_MASSES_G.items()
                      if abs(g - residual) <= 1.0 and n not in self.moved]
        self._note(t=t, target=target, reading=reading.value, residual=residual,
                   choice=candidates[0] if candidates else None)
        if not candidates:
            self.finished = True  # nothing addable completes it: stop
            return None
        return self._transfer(obs, candidates[0], t)

    def reset(self, session_id: str, policy_seed: int) -> None:
        super().reset(session_id, policy_seed)
        self.mode: str | None = None  # "basic" | "extended", fixed at the first stable reading
        self.transfers: dict[tuple[str, str], int] = {}
        self.looks = 0
        self.pan_centre: tuple[float, float] | None = None

    def _initial_mode(self, obs) -> str:
        """Extended when a standard this system did not move stands on the pan."""
        if "front" not in obs.images or "front" not in obs.camera_calibration:
            return "basic"  # the basic path reports the missing camera itself
        calib = CameraCalibration.from_dict(obs.camera_calibration["front"])
        on_pan = quick_standards_on_pan(obs.images["front"], calib)
        return "extended" if on_pan - set(self.moved) else "basic"

    def _arrangement(self, obs):
        """What stands where; the pan centre is fitted once (the balance stays put)."""
        if "front" not in obs.images or "front" not in obs.camera_calibration:
            raise ValueError("needs the front camera and its calibration")
        calib = CameraCalibration.from_dict(obs.camera_calibration["front"])
        seen = estimate_arrangement(obs.images["front"], calib, self.pan_centre)
        self.pan_centre = seen.pan_centre
        return seen

    def _unusable_look(self, **entry) -> None:
        self.looks += 1
        self._note(**entry)
        if self.looks >= MAX_LOOKS:
            self._note(t=entry["t"], gave_up="unusable looks")
            self.finished = True

    def _decide_extended(self, obs, target: float, reading_g: float, t: float):
        """One correction per stable reading: the goal subset is re-derived
        each time from the reading and the standards seen on the pan, so a
        transfer that missed is simply still to do."""
        seen = self._arrangement(obs)
        if seen.pan_centre is None:
            self._unusable_look(t=t, not_found="pan")
            return None
        goal = estimate_goal(target, reading_g, seen.on_pan)
        entry = {"t": t, "target": target, "reading": reading_g, "on_pan": sorted(seen.on_pan),
                 "sample_g": round(goal.sample_g, 3), "goal": list(goal.goal)}
        if not goal.consistent:
            self._unusable_look(**entry, error="no standard subset explains the reading")
            return None
        todo = corrections(goal.goal, seen.on_pan)
        if not todo:
            done = abs(target - reading_g) <= READING_TOLERANCE_G
            self._note(**entry, done=done)
            self.finished = True
            return None
        name, dest = todo[0]
        if dest == "pan" and name not in seen.on_table:
            self._unusable_look(**entry, not_found=name)
            return None
        tries = self.transfers.get((name, dest), 0)
        if tries >= MAX_TRANSFERS_PER_MOVE:
            self._note(**entry, gave_up=name, destination=dest)
            self.finished = True
            return None
        if dest == "pan":
            self._note(**entry, choice=name, destination=dest)
            self.transfers[(name, dest)] = tries + 1
            return name, seen.on_table[name], seen.pan_centre, "pan"
        spot = free_table_spot(seen.pan_centre, list(seen.on_table.values()))
        if spot is None:
            self._note(**entry, gave_up=name, destination=dest, error="no free table spot")
            self.finished = True
            return None
        self._note(**entry, choice=name, destination=dest, spot=spot)
        self.transfers[(name, dest)] = tries + 1
        return name, seen.on_pan[name], spot, "table"


class FixedPreference(_PixelSystem):
    name = "fixed_preference"
    def __init__(self, spec=None, **params):
        params.setdefault("preference", "std_50")
        if params["preference"] not in STANDARD_MASSES_G:
            raise ValueError(f"unknown standard {params['preference']!r}")
        super().__init__(spec, **params)

    def decide(self, obs, evaluator=None):
        if self.moved:
            self.finished = True
            return None
        name = self.params["preference"]
        self._note(t=obs.sim_time, choice=name)
        return self._transfer(obs, name, obs.sim_time)


class ScriptedExpert(PickPlaceSystem):
    name = "scripted_expert"
    privileged = True
    def moves(self, inst, evaluator: EvaluatorView) -> list[tuple[str, str]]:
        """(standard, destination) moves still to make, in order: removals first (they
        free pan slots), then additions."""
        remove = [n for n in evaluator.on_pan if n.startswith("std_") and n not in inst.goal_set]
        add = [n for n in inst.goal_set if n not in evaluator.on_pan]
        return [(n, "table") for n in sorted(remove)] + [(n, "pan") for n in add]

    def decide(self, obs, evaluator: EvaluatorView | None = None):
        if evaluator is None:
            raise ValueError(f"{self.name} is privileged and needs the evaluator view")
        inst = evaluator.instance
        self.binding = getattr(inst, "binding", None) or None  # privileged: the objects' own geometry
        todo = [(n, d) for n, d in self.moves(inst, evaluator) if (n, d) not in self._done]  # each once
        if not todo:
            self.finished = True
            return None
        name, dest = todo[0]
        self._done.add((name, dest))
        self._note(t=obs.sim_time, choice=name, destination=dest)
        dest_xy = inst.layout["balance"] if dest == "pan" else inst.layout[name]
        return name, evaluator.positions[name], tuple(dest_xy), dest

    def reset(self, session_id: str, policy_seed: int) -> None:
        super().reset(session_id, policy_seed)
        self._done: set[tuple[str, str]] = set()

    def receive_prefix(self, prefix: list[dict]) -> None:
        super().receive_prefix(prefix)
        for step in prefix:
            op = step["operation"]
            self._done.add((op["object"], "pan" if op.get("destination") == "pan" else "table"))
