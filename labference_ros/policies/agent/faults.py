"""Injected recovery faults (protocol: before motion, moved=false).

transient: the first physical attempt of the faulted operation fails;
persistent: every attempt fails. The schedule lives evaluator-side: the
agent sees only a refusal that did not move the robot.
"""
from __future__ import annotations

from dataclasses import dataclass, field

MOTION_TOOLS = ("move_to_pose", "pick", "place", "open_gripper", "close_gripper")
FAULT_MESSAGE = "the robot refused the command before moving"


@dataclass
class FaultSchedule:
    mode: str = "none"  # none | transient | persistent
    tool: str = ""  # "" = any motion tool
    arguments: dict = field(default_factory=dict)  # subset that must match, e.g. {"object": "std_50"}
    attempts: int = 0
    injected: int = 0

    @classmethod
    def from_params(cls, d: dict | None) -> "FaultSchedule":
        d = dict(d or {})
        mode = d.get("mode", "none")
        if mode not in ("none", "transient", "persistent"):
            raise ValueError(f"fault mode must be none, transient or persistent, got {mode!r}")
        return cls(mode, d.get("tool", ""), dict(d.get("arguments", {})))

    def matches(self, tool: str, args: dict) -> bool:
        if tool not in MOTION_TOOLS or (self.tool and tool != self.tool):
            return False
        return all(args.get(k) == v for k, v in self.arguments.items())

    def attempt(self, tool: str, args: dict) -> bool:
        """Register a physical attempt; True when it must fail."""
        if not self.matches(tool, args):
            return False
        self.attempts += 1
        fail = self.mode == "persistent" or (self.mode == "transient" and self.attempts == 1)
        self.injected += fail
        return fail

    def grade(self, actions) -> dict:
        """Requested operation attempted, retry count, duplicated successful motion."""
        done = [(a.tool, tuple(sorted(a.arguments.items()))) for a in actions
                if a.ok and a.moved and a.tool in MOTION_TOOLS]
        requested_ok = [a for a in actions if a.ok and a.moved and self.matches(a.tool, a.arguments)]
        return {"mode": self.mode, "tool": self.tool, "arguments": self.arguments,
                "attempted": self.attempts > 0, "attempts": self.attempts,
                "retries": max(0, self.attempts - 1), "injected": self.injected,
                "requested_succeeded": bool(requested_ok),
                "duplicated_success": len(done) != len(set(done)),
                "verdict": "PASS" if requested_ok and len(done) == len(set(done)) else "FAIL"}
