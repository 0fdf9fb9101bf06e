"""What the referee knows, as 3D markers for RViz (topic /referee/markers).

Pure Python: the monitor node feeds it plain dicts taken from the referee's
topics and turns the resulting MarkerSpecs into visualization_msgs. The same
state can be rebuilt offline from a bag.

Namespaces (one marker id space each): objects, labels, legal (a sphere above
each object an operation of the open opportunity's legal set names; its text
is the object's name), balance, opportunity, choice, events. Every array
starts with DELETEALL, so nothing of a previous state or episode survives. Objects in the current opportunity's legal set are drawn
green; the first choice's object takes the verdict colour (blue correct, red
wrong); everything else is grey (standards) or blue-grey (the sample).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

WORLD_FRAME = "world"
PAN_FRAME = "pan_load_cell"

# Categories shown in the running event log above the table.
EXECUTION_EVENTS = ("grasp", "release", "placement_recognised", "execution_confirmed", "execution_failure",
                    "support_change", "obligation_confirmed", "obligation_opened", "terminal_dwell_started",
                    "terminal_dwell_reset", "task_complete", "premature_advancement", "unnecessary_repetition",
                    "early_termination", "recovery", "safety_violation", "protocol_violation", "episode_end")
EVENT_LOG_LINES = 6
PENDING = "pending"

GREY = (0.75, 0.75, 0.78, 1.0)
SAMPLE_BLUE = (0.25, 0.45, 0.75, 1.0)
LEGAL_GREEN = (0.15, 0.85, 0.25, 1.0)
CORRECT_BLUE = (0.1, 0.4, 1.0, 1.0)
WRONG_RED = (0.95, 0.15, 0.1, 1.0)
WHITE = (1.0, 1.0, 1.0, 1.0)
AMBER = (1.0, 0.75, 0.1, 1.0)

# Object marker size (a cylinder standing on its pose); the real shapes are in the URDF/scene.
OBJECT_DIAMETER = 0.035
OBJECT_HEIGHT = 0.04
LABEL_LIFT = 0.06
# Text panels in the world frame, behind the table as seen from the front camera.
OPPORTUNITY_PANEL = (0.45, -0.55, 0.55)
CHOICE_PANEL = (0.45, -0.55, 0.47)
EVENT_PANEL = (0.45, -0.55, 0.39)


@dataclass(frozen=True)
class MarkerSpec:
    """One visualization_msgs/Marker, without ROS types."""
    ns: str
    id: int
    kind: str                     # cylinder | text | sphere
    frame: str
    position: tuple[float, float, float]
    orientation: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)  # w, x, y, z
    scale: tuple[float, float, float] = (0.02, 0.02, 0.02)
    colour: tuple[float, float, float, float] = WHITE
    text: str = ""


def op_text(op: dict | None) -> str:
    if not op:
        return "-"
    parts = [op.get("type", "")]
    if op.get("object"):
        parts.append(op["object"])
    if op.get("destination"):
        parts.append(f"-> {op['destination']}")
    return " ".join(parts)


@dataclass
class MonitorState:
    """The latest of every referee output the markers show (reset per episode) and the
    latest measured object poses."""
    episode_id: str = ""
    objects: dict[str, dict] = field(default_factory=dict)  # name -> {kind, position, orientation}
    opportunity: dict | None = None        # {id, evidence_version, trigger, t}
    legal: list[dict] = field(default_factory=list)  # operations of the current legal set
    legal_opportunity: int = -1
    reading: dict | None = None            # {displayed_g, stable, valid, overload, t}
    choice: dict | None = None             # {opportunity_id, operation, object, correct, scored, t}
    events: list[dict] = field(default_factory=list)  # execution/completion log, newest last

    def new_episode(self, episode_id: str) -> bool:
        """True (and the referee's outputs forgotten) when episode_id starts a new episode.

        The measured object poses stay: the referee's first legal set can arrive before the
        new episode's first world state, and its objects must still be shown."""
        if episode_id == self.episode_id:
            return False
        objects = self.objects
        self.__init__(episode_id=episode_id, objects=objects)
        return True

    def on_objects(self, objects: dict[str, dict]) -> None:
        self.objects = dict(objects)

    def on_opportunity(self, opp: dict) -> None:
        self.opportunity = opp
        if self.choice and self.choice.get("opportunity_id") != opp.get("id"):
            self.choice = None

    def on_legal_set(self, opportunity_id: int, operations: list[dict]) -> None:
        self.legal_opportunity = int(opportunity_id)
        self.legal = list(operations)

    def on_reading(self, reading: dict) -> None:
        self.reading = reading

    def on_event(self, event: dict) -> None:
        cat = event.get("category", "")
        detail = event.get("detail") or {}
        if cat == "choice" and detail.get("scored"):
            self.choice = {"opportunity_id": event.get("opportunity_id", -1), "operation": event.get("operation"),
                           "object": event.get("object", ""), "correct": bool(detail.get("correct")),
                           "t": event.get("t", 0.0)}
        elif cat == "opportunity_closed" and self.opportunity and event.get("opportunity_id") == self.opportunity.get("id"):
            self.opportunity = None
            self.legal, self.legal_opportunity = [], -1
        if cat in EXECUTION_EVENTS:
            self.events.append(event)
            del self.events[:-EVENT_LOG_LINES]

    def legal_objects(self) -> set[str]:
        """Objects named by an operation of the open opportunity's legal set."""
        if self.opportunity is None or self.legal_opportunity != self.opportunity.get("id"):
            return set()
        return {op["object"] for op in self.legal if op.get("object")}


def object_colour(state: MonitorState, name: str, kind: str) -> tuple[float, float, float, float]:
    choice = state.choice
    if choice and choice.get("object") == name:
        return CORRECT_BLUE if choice["correct"] else WRONG_RED
    if name in state.legal_objects():
        return LEGAL_GREEN
    return SAMPLE_BLUE if kind == "sample" else GREY


def reading_text(reading: dict | None) -> str:
    if reading is None:
        return "balance: no reading"
    if not reading.get("valid", True):
        return f"balance: invalid ({reading.get('invalid_reason') or 'no reason'})"
    if reading.get("overload"):
        return "balance: OVERLOAD"
    value = reading.get("displayed_g", float("nan"))
    shown = "----" if value is None or math.isnan(value) else f"{value:.1f} g"
    return f"{shown}  {'stable' if reading.get('stable') else 'settling'}"


def build_markers(state: MonitorState) -> list[MarkerSpec]:
    """Every marker of the current state; ids are stable so RViz updates in place."""
    out: list[MarkerSpec] = []
    for i, name in enumerate(sorted(state.objects)):
        o = state.objects[name]
        x, y, z = o["position"]
        colour = object_colour(state, name, o.get("kind", "standard"))
        out.append(MarkerSpec("objects", i, "cylinder", WORLD_FRAME, (x, y, z), tuple(o.get("orientation", (1, 0, 0, 0))),
                              (OBJECT_DIAMETER, OBJECT_DIAMETER, OBJECT_HEIGHT), (*colour[:3], 0.6)))
        out.append(MarkerSpec("labels", i, "text", WORLD_FRAME, (x, y, z + LABEL_LIFT), scale=(0.0, 0.0, 0.025),
                              colour=colour, text=name))
    for i, name in enumerate(sorted(state.legal_objects())):
        if name in state.objects:
            x, y, z = state.objects[name]["position"]
            out.append(MarkerSpec("legal", i, "sphere", WORLD_FRAME, (x, y, z + LABEL_LIFT + 0.03),
                                  scale=(0.02, 0.02, 0.02), colour=LEGAL_GREEN, text=name))
    stable = bool(state.reading and state.reading.get("stable") and state.reading.get("valid", True))
    out.append(MarkerSpec("balance", 0, "text", PAN_FRAME, (0.0, 0.0, 0.16), scale=(0.0, 0.0, 0.035),
                          colour=LEGAL_GREEN if stable else AMBER, text=reading_text(state.reading)))
    out.append(MarkerSpec("balance", 1, "sphere", PAN_FRAME, (0.0, 0.0, 0.12), scale=(0.02, 0.02, 0.02),
                          colour=LEGAL_GREEN if stable else AMBER))
    if state.opportunity is not None:
        opp = state.opportunity
        if state.legal_opportunity == opp.get("id"):
            legal = ", ".join(op_text(op) for op in state.legal) or "-"
        else:  # the referee publishes the legal set just after the opportunity
            legal = PENDING
        text = f"opportunity #{opp.get('id')} ({opp.get('trigger', '')}): legal {legal}"
    else:
        text = "no open opportunity"
    out.append(MarkerSpec("opportunity", 0, "text", WORLD_FRAME, OPPORTUNITY_PANEL, scale=(0.0, 0.0, 0.03),
                          text=text))
    if state.choice is not None:
        c = state.choice
        verdict = "correct" if c["correct"] else "WRONG"
        out.append(MarkerSpec("choice", 0, "text", WORLD_FRAME, CHOICE_PANEL, scale=(0.0, 0.0, 0.03),
                              colour=CORRECT_BLUE if c["correct"] else WRONG_RED,
                              text=f"first choice: {op_text(c.get('operation'))} ({verdict})"))
    else:
        out.append(MarkerSpec("choice", 0, "text", WORLD_FRAME, CHOICE_PANEL, scale=(0.0, 0.0, 0.03),
                              text="first choice: -"))
    lines = [f"{e.get('t', 0.0):6.2f} s  {e.get('category')} {e.get('object') or ''}".rstrip()
             for e in state.events]
    out.append(MarkerSpec("events", 0, "text", WORLD_FRAME, EVENT_PANEL, scale=(0.0, 0.0, 0.022),
                          text="\n".join(lines) if lines else "no events yet"))
    return out
