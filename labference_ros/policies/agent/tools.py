"""The declared tool schema every agent receives, its hash (recorded in
run.json so comparisons can check they offered the same interface), and the
JSON contract repeated in protocol-error feedback."""
from __future__ import annotations

import hashlib
import json

from labference_ros.perception.vision import STANDARDS

OBJECTS = list(STANDARDS)
PHYSICAL = ("move_to_pose", "pick", "place", "open_gripper", "close_gripper", "wait")


def _fn(name: str, description: str, properties: dict | None = None, required=()) -> dict:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties or {},
                       "required": list(required), "additionalProperties": False}}}


_OBJ = {"type": "string", "enum": OBJECTS}
_OP = {"type": "object", "properties": {
    "type": {"type": "string", "enum": ["add", "remove", "wait", "stop"]},
    "object": {"type": "string"}, "destination": {"type": "string", "enum": ["pan", "table", ""]}},
    "required": ["type"]}

TOOLS = [
    _fn("observe", "Current camera images (front, wrist, display), robot joint state, "
        "gripper width, the instruction and your action history."),
    _fn("report_state", "Report what you believe the state is (scored separately).",
        {"text": {"type": "string"}, "reading_g": {"type": "number"}}, ["text"]),
    _fn("commit_operation", "Commit to the next task-level operation before doing it.",
        {"operation": _OP}, ["operation"]),
    _fn("locate", "Estimate an object's position (m, world frame) from the front camera; "
        "'pan' gives the balance pan centre.",
        {"object": {"type": "string", "enum": OBJECTS + ["pan"]}}, ["object"]),
    _fn("move_to_pose", "Move the gripper, pointing down, to x, y, z (m, world frame).",
        {"x": {"type": "number"}, "y": {"type": "number"}, "z": {"type": "number"}},
        ["x", "y", "z"]),
    _fn("pick", "Grasp a standard from the top and lift it.", {"object": _OBJ}, ["object"]),
    _fn("place", "Set the held object down on the pan (its own slot) or on the table at x, y.",
        {"target": {"type": "string", "enum": ["pan", "table"]},
         "x": {"type": "number"}, "y": {"type": "number"}}, ["target"]),
    _fn("open_gripper", "Open the gripper."),
    _fn("close_gripper", "Close the gripper."),
    _fn("wait", "Hold still for a number of seconds (simulated time, at most 10).",
        {"seconds": {"type": "number", "minimum": 0, "maximum": 10}}, ["seconds"]),
]
TOOL_NAMES = tuple(t["function"]["name"] for t in TOOLS)


def schema_hash(tools=TOOLS) -> str:
    blob = json.dumps(tools, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()


JSON_CONTRACT = (
    "Answer only with tool calls from the declared schema; each call's arguments must be a "
    "JSON object with exactly the declared fields and types. Calls in one reply run in order "
    "and stop at the first failure. When the task is done (or you give up) reply with text "
    "and no tool calls.")


def check_call(name: str, raw_args) -> tuple[dict | None, str | None]:
    """-> (arguments, None) or (None, why the call is malformed)."""
    if name not in TOOL_NAMES:
        return None, f"unknown tool {name!r}"
    try:
        args = json.loads(raw_args) if isinstance(raw_args, str) else raw_args
    except ValueError:
        return None, f"{name}: arguments are not valid JSON"
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return None, f"{name}: arguments must be a JSON object"
    params = TOOLS[TOOL_NAMES.index(name)]["function"]["parameters"]
    missing = [k for k in params["required"] if k not in args]
    extra = [k for k in args if k not in params["properties"]]
    if missing or extra:
        return None, f"{name}: missing {missing} unexpected {extra}"
    for k, v in args.items():
        p = params["properties"][k]
        if p.get("type") == "number" and (isinstance(v, bool) or not isinstance(v, (int, float))):
            return None, f"{name}: {k} must be a number"
        if p.get("type") == "string" and not isinstance(v, str):
            return None, f"{name}: {k} must be a string"
        if "enum" in p and v not in p["enum"]:
            return None, f"{name}: {k} must be one of {p['enum']}"
        if p.get("type") == "object" and not isinstance(v, dict):
            return None, f"{name}: {k} must be an object"
    return args, None
