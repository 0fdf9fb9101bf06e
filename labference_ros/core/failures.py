"""Kinds of evaluation-validity errors, named from their messages. Pure.

The episode runner records each errored attempt's kind (attempts.jsonl
`error_kind`), prints one console line per errored episode with its cause,
and the run summary counts the kinds. Messages come from this project's own
code (policies/, nodes/, episodes/), so a fixed list of phrases classifies
them; anything else is `other`.
"""
from __future__ import annotations

import re

# (kind, phrases): the first kind with a phrase in the message wins, so the
# specific ones come first.
KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("hardware_fault", ("hardware_fault",)),  # the arm, not the tested system (nodes/franka_arm_bridge.py)
    ("disk_full", ("no space left", "disk full", "enospc")),
    ("policy_actions_rejected", ("consecutive chunks rejected", "first reply's actions rejected")),
    ("convention_mismatch", ("convention mismatch",)),
    ("policy_reply_too_large", ("reply too large",)),
    ("service_timeout", ("did not answer within",)),
    ("policy_timeout", ("timed out",)),
    ("policy_unreachable", ("unreachable", "connection refused", "connection reset")),
    ("policy_server_error", ("answered http", "openpi server error", "gr00t server error")),
    ("policy_bad_reply", ("malformed json", "not valid msgpack", "no 'actions'", "not numeric",
                          "not a json object", "not a map", "reply is not", "reply refused", "gr00t action")),
    ("node_left", ("left the graph", "not available", "unavailable", "died")),
    ("sim_stalled", ("did not advance", "advance got no reply", "no complete observation")),
    ("interrupted", ("runner stopped", "stopped during the episode")),
)
OTHER = "other"
ALL_KINDS = tuple(k for k, _ in KINDS) + (OTHER,)

# Events of the tested system's own that neither end its episode nor make it an error: the
# episode runner keeps them in the attempt's `system_events` ({"kind", "cause", "t"}), and the
# episode stays scored, in the system's denominators.
LATE_ROWS = "late_rows"  # rows too late (or after a gap) for the real arm to follow: it stopped and held
SYSTEM_EVENT_KINDS = (LATE_ROWS,)


def error_kind(message: str | None) -> str | None:
    """The kind of an error message; None for no error."""
    if not message:
        return None
    low = message.lower()
    for kind, phrases in KINDS:
        if any(p in low for p in phrases):
            return kind
    return OTHER


# Wrappers the runner and bridge put around the cause; the console line drops them.
_PREFIXES = re.compile(r"^(policy_bridge (start )?(refused|reported an error): |policy session reset failed: |"
                       r"evaluation invalid: )+")


def cause(message: str) -> str:
    """The cause of an error message, without the runner's and bridge's wrappers."""
    text = message
    while True:
        stripped = _PREFIXES.sub("", text)
        if stripped == text:
            return text
        text = stripped


def console_line(episode_id: str, message: str) -> str:
    """One line per errored episode: `episode <id>: <cause> [<kind>]`."""
    return f"episode {episode_id}: {cause(message)} [{error_kind(message)}]"
