"""Diagnostic reference systems for the Oracle protocol (paper 6, issue 6).

Both are modular display readers that expose hooks, so a support at one
interface can be delivered and its downstream effect measured:

- misreader: decodes the balance display with a fixed digit confusion
  (a "5" reads as "6", an "8" as "9"), so its state report is wrong on
  some readings and its choices follow the wrong reading.
- unsteady_grasp: reads and selects like display_reader, but grasps off
  centre with a weak force, so heavier standards tilt and drop.
- mislocator: reads and selects like display_reader, but its camera
  calibration is off, so it localizes every standard a few centimetres wide
  of where it stands and the grasp misses.

Hooks (the Oracle protocol, labference_ros/oracle/continuation.py):
- report_state(obs) -> {"displayed_g", "stable"} (state site)
- commit(obs, state) -> Operation | None (decision site)
- report_geometry(obs, name) -> {"object", "position", "axis"} (geometry
  site): Assist supplies every candidate frame and the system snaps its own
  estimate to the nearest; Replace substitutes the selected target's frame
  through `geometry_hook` at the moment the system localizes it.
- an executor slot (skill site): when set, the chosen operation is
  realized by the evaluator's reference executor instead of the system.
"""
from __future__ import annotations

import re

import numpy as np

from labference_ros.core.operations import STOP_OP, Operation, add
from labference_ros.perception.display_decode import decode_display
from labference_ros.skills.motion import PickPlacePlanner, PickPlaceSettings
from labference_ros.tasks.weighing.objects import STANDARD_MASSES_G
from labference_ros.tasks.weighing.systems.scripted import READING_TOLERANCE_G, _PixelSystem

DIGIT_CONFUSION = {"5": "6", "8": "9"}  # misreader's systematic decoding error


class HookedReader(_PixelSystem):
    """A display reader split at its interfaces: state report -> operation
    commitment -> execution. Supports are delivered through `supply`."""

    # site -> modes this adapter accepts (capability negotiation)
    INTERFACES = {"state": ("assist", "replace"), "decision": ("assist", "replace"),
                  "geometry": ("assist", "replace"), "skill": ("replace",)}
    UP = (0.0, 0.0, 1.0)  # the vision estimate assumes upright standards

    def reset(self, session_id: str, policy_seed: int) -> None:
        super().reset(session_id, policy_seed)
        self.supplied: dict[str, dict] = {}  # site -> latest delivered payload
        self.executor = None  # skill replacement: the evaluator's reference executor
        self.geometry_hook = None  # geometry replacement: (name, own frame) -> frame or None
        self.committed: Operation | None = None
        self.interface_log: list[dict] = []  # original and executed outputs per decision
        self._reported = 0  # interface_log entries already handed out as reports
        self.geometry_log: list[dict] = []  # own and used frame per localization of a selected target

    def interfaces(self) -> dict:
        return dict(self.INTERFACES)

    def drain_reports(self) -> list[dict]:
        """Each decision's commitment (the operation it went on to execute) as an
        explicit report, scored on the referee's separate report track."""
        new = self.interface_log[self._reported:]
        self._reported = len(self.interface_log)
        return [{"operation": e["operation_used"], "source": self.name} for e in new
                if e["operation_used"] is not None]

    def supply(self, site: str, mode: str, payload: dict) -> None:
        """Deliver one support; it holds until the next delivery at that site."""
        if site not in self.INTERFACES or mode not in self.INTERFACES[site]:
            raise ValueError(f"{self.name} does not accept {mode}:{site}")
        self.supplied[site] = {"mode": mode, **payload}

    # interfaces ------------------------------------------------------------
    def report_state(self, obs) -> dict | None:
        r = decode_display(obs.images["display"])
        if not (r.ok and r.value is not None):
            return None
        return {"displayed_g": self.decode_value(r.text, r.value), "stable": bool(r.stable)}

    def decode_value(self, text: str, value: float) -> float:
        return value

    def report_geometry(self, obs, name: str) -> dict | None:
        """The system's own frame of a standard: body centre and directed up axis."""
        scene = self._see(obs)
        if name not in scene.standards:
            return None
        return {"object": name, "position": [float(v) for v in self.locate_offset(scene.standards[name])],
                "axis": list(self.UP)}

    def locate_offset(self, xyz):
        return xyz

    def _localize(self, obs, name: str, t: float) -> dict | None:
        own = self.report_geometry(obs, name)
        used = own
        if own is not None and "geometry" in self.supplied:  # Assist: nearest candidate frame
            frames = self.supplied["geometry"].get("candidates") or []
            if frames:
                used = min(frames, key=lambda f: float(np.linalg.norm(np.subtract(f["position"], own["position"]))))
        if self.geometry_hook is not None:  # Replace: the selected target's frame is substituted
            used = self.geometry_hook(name, own) or used
        self.geometry_log.append({"t": t, "object": name, "original": own, "used": used})
        return used

    def _transfer(self, obs, name: str, t: float):
        move = super()._transfer(obs, name, t)
        if move is None:
            return None
        name, _xyz, dest_xy, dest = move
        frame = self._localize(obs, name, t)
        if frame is None:
            return None
        return name, tuple(float(v) for v in frame["position"]), dest_xy, dest

    def commit(self, obs, state: dict) -> Operation | None:
        """First operation from a state report; None = wait for a stable reading."""
        m = re.search(r"reading to (-?\d+(?:\.\d+)?) g", obs.instruction)
        if m is None or not state["stable"]:
            return None
        residual = float(m.group(1)) - state["displayed_g"]
        if abs(residual) <= READING_TOLERANCE_G:
            return STOP_OP
        cands = [n for n, g in STANDARD_MASSES_G.items() if abs(g - residual) <= 1.0 and n not in self.moved]
        return add(cands[0]) if cands else STOP_OP  # nothing addable: give up

    def act(self, obs, evaluator=None):
        if self.executor is None:
            return super().act(obs, evaluator)
        # Skill replacement: the reference executor's planner realizes the plan.
        own, self.planner = self.planner, self.executor.planner
        try:
            return super().act(obs, evaluator)
        finally:
            self.planner = own

    # the decision loop -----------------------------------------------------
    def decide(self, obs, evaluator=None):
        t = obs.sim_time
        own_state = self.report_state(obs)
        state = own_state
        if "state" in self.supplied:  # assist and replace both act on the supplied reading
            s = self.supplied["state"]
            state = {"displayed_g": float(s["displayed_g"]), "stable": bool(s["stable"])}
        if state is None:
            return None
        own_op = self.commit(obs, state)
        op = own_op
        if "decision" in self.supplied:
            op = Operation.from_dict(self.supplied["decision"]["operation"])
        self.interface_log.append({"t": t, "state_original": own_state, "state_used": state,
                                   "operation_original": own_op.to_dict() if own_op else None,
                                   "operation_used": op.to_dict() if op else None})
        if op is None or op.type == "wait":
            return None
        self.committed = op
        self._note(t=t, reading=state["displayed_g"], choice=op.object or op.type)
        if not op.physical:
            self.finished = True
            return None
        if self.executor is not None:
            return self.executor.locate(op)
        return self._transfer(obs, op.object, t)


class Misreader(HookedReader):
    name = "misreader"
    def decode_value(self, text: str, value: float) -> float:
        wrong = "".join(DIGIT_CONFUSION.get(c, c) for c in f"{value:g}")
        try:
            return float(wrong)
        except ValueError:
            return value


class Mislocator(HookedReader):
    name = "mislocator"
    def __init__(self, spec=None, **params):
        params.setdefault("bias_m", [0.0, 0.035, 0.0])  # a calibration error, metres in the world frame
        super().__init__(spec, **params)

    def locate_offset(self, xyz):
        return tuple(float(a) + float(b) for a, b in zip(xyz, self.params["bias_m"]))


class UnsteadyGrasp(HookedReader):
    name = "unsteady_grasp"
    def __init__(self, spec=None, **params):
        params.setdefault("grasp_force", 1.0)  # N per finger: weak
        params.setdefault("grasp_offset_m", 0.006)  # off-centre: the standard tilts in the fingers
        params.setdefault("grasp_below_top_m", 0.003)  # pads catch only the rim
        params.setdefault("release_clearance_m", 0.03)  # lets go too high above the support
        params.setdefault("heavy_g", 50)  # standards this heavy slip in the grasp
        params.setdefault("slip_m", 0.07)  # how far beside the slot a slipping standard lands
        super().__init__(spec, **params)
        p = self.params
        self.planner = PickPlacePlanner(PickPlaceSettings(
            rate_hz=self.spec.control_frequency_hz, grasp_force=p["grasp_force"],
            grasp_below_top=p["grasp_below_top_m"], release_clearance=p["release_clearance_m"]))

    def _transfer(self, obs, name: str, t: float):
        move = super()._transfer(obs, name, t)
        if move is None:
            return None
        name, xyz, dest_xy, dest = move
        dx = self.params["grasp_offset_m"]
        if STANDARD_MASSES_G.get(name, 0) >= self.params["heavy_g"]:
            # A heavy standard swings in the weak, tilted grasp and is let go
            # beside its slot: it lands off the pan.
            dest_xy = (dest_xy[0], dest_xy[1] + self.params["slip_m"])
        return name, (xyz[0] + dx, xyz[1], xyz[2]), dest_xy, dest
