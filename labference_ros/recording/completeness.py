"""Did the recorder get every message? Per periodic topic, from the header stamps.

The graph's measurement and camera streams are periodic in sim time: lab_sim
stamps a world state, a wrench, a joint state (and the balance a reading) every
measurement period, and each camera's image and camera_info every camera
period. Per topic and episode, the recorder's tally counts the distinct stamps
it wrote after the episode's last rewind of sim time (the reset) and the
instants the stream's period puts between the first and the last of them
(a stamp before the timeline's first is a rewind; one older than the newest
but not before the first is a late resend, counted in place)
(period: the median step between consecutive stamps); the difference is what
it missed. A loss before the first or after the last written stamp is not seen
this way.

(The DDS writers' sequence numbers, which rclpy hands a subscription callback
with its MessageInfo, would also count non-periodic topics; taken on the
recorder's raw subscriptions in the running graph they failed inside rclpy's
take ("SystemError: null argument to internal routine") and stopped the
recorder, so they are not used.)
"""
from __future__ import annotations

import json
import statistics

CUSTOM_KEY = "completeness"
# Streams with one message per period of sim time.
PERIODIC_TOPICS = ("/evaluator/world_state", "/balance/reading", "/balance/wrench", "/joint_states")
PERIODIC_PATTERNS = ("/cameras/",)


def periodic(topic: str) -> bool:
    return topic in PERIODIC_TOPICS or (topic.startswith(PERIODIC_PATTERNS) and
                                        topic.endswith(("/image_raw", "/camera_info")))


class Completeness:
    """Header stamps (integer ns) of what was written, per periodic topic, for one episode."""

    def __init__(self):
        self.stamps: dict[str, list[int]] = {}

    def note(self, topic: str, stamp_ns: int) -> None:
        seen = self.stamps.setdefault(topic, [])
        if seen and stamp_ns < seen[0]:
            seen.clear()  # sim time rewound past the timeline's start (a reset): the episode's starts here
        # Older than the newest but not before the start: a sample resent late or out of order,
        # one instant of this timeline (it fills its gap; it must not wipe the gaps counted so far).
        seen.append(stamp_ns)

    def report(self) -> dict[str, dict]:
        """{topic: {"expected", "recorded", "missing", "period_s"}}."""
        out = {}
        for topic, seen in sorted(self.stamps.items()):
            distinct = sorted(set(seen))
            steps = [b - a for a, b in zip(distinct, distinct[1:])]
            if not steps:
                out[topic] = {"expected": len(distinct), "recorded": len(distinct), "missing": 0, "period_s": None}
                continue
            period = statistics.median(steps)
            expected = round((distinct[-1] - distinct[0]) / period) + 1
            out[topic] = {"expected": expected, "recorded": len(distinct),
                          "missing": max(0, expected - len(distinct)), "period_s": period * 1e-9}
        return out


def gaps(custom: dict) -> dict[str, dict]:
    """Topics with missing messages, from a bag's custom_data ({} when it holds no tally,
    as in bags recorded before the recorder counted)."""
    text = custom.get(CUSTOM_KEY)
    if not text:
        return {}
    try:
        tally = json.loads(text)
    except ValueError:
        return {}
    return {topic: row for topic, row in tally.items() if isinstance(row, dict) and row.get("missing", 0) > 0}


def describe_gaps(found: dict[str, dict]) -> str:
    return ", ".join(f"{topic} {row['missing']} of {row['expected']} missing" for topic, row in sorted(found.items()))
