"""`labference view`: one recorded episode as a Rerun recording (.rrd) to scrub.

Everything is placed on one `sim_time` timeline (the messages' header stamps):
the cameras, every joint position, the balance reading (displayed and filtered
grams, stability), the referee's events, opportunities, legal sets and
verdicts as text logs, and the objects' evaluator-side positions in 3D. Open
the file with the Rerun viewer (`rerun FILE.rrd`, installed with rerun-sdk).

Entity paths (stream names; the test reads them back with Rerun's reader):
  cameras/<name>            image per camera message (JPEG-compressed)
  joints/<joint>            scalar per joint state
  balance/displayed_g, balance/filtered_g, balance/stable   scalar per reading
  referee/events            text per referee event (choices carry their verdict)
  referee/verdicts          text per scored first choice (correct / WRONG)
  referee/opportunities, referee/legal_set   text per message
  world/objects             3D points per world-state sample (thinned to the camera rate)
"""
from __future__ import annotations

import json
import math
import pathlib

from .bag_reader import EpisodeBagReader
from .topics import camera_of
from .videos import image_array

TIMELINE = "sim_time"
JPEG_QUALITY = 85
WORLD_PERIOD_S = 0.1  # world-state points every 0.1 s of sim time (its topic runs at 100 Hz)


def _stamp(msg) -> float:
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


def _op(op) -> str:
    text = " ".join(x for x in (op.type, op.object) if x)
    return f"{text} -> {op.destination}" if op.destination else text


def event_text(msg) -> str:
    detail = json.loads(msg.detail_json or "{}")
    text = f"{msg.category}"
    if msg.object:
        text += f" {msg.object}"
    if msg.operation.type:
        text += f" [{_op(msg.operation)}]"
    if msg.category == "choice":
        if detail.get("scored"):
            text += " correct" if detail.get("correct") else " WRONG"
        else:
            text += f" unscored ({detail.get('reason', '')})"
    if not math.isnan(msg.measured_value):
        text += f" @ {msg.measured_value:g} g"
    return text


def write_recording(episode_dir: str | pathlib.Path, out: str | pathlib.Path | None = None) -> tuple[pathlib.Path, dict]:
    """Writes <episode_dir>/view.rrd (or `out`); returns (path, messages per stream)."""
    import rerun as rr

    episode_dir = pathlib.Path(episode_dir)
    reader = EpisodeBagReader(episode_dir)
    episode = reader.custom.get("episode_id") or reader.dir.parent.name
    path = pathlib.Path(out) if out else reader.dir.parent / "view.rrd"
    path.parent.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}

    def log(entity: str, value) -> None:
        rec.log(entity, value)
        counts[entity] = counts.get(entity, 0) + 1

    rec = rr.RecordingStream("labference_view", recording_id=str(episode))
    rec.save(str(path))
    rec.log("referee/episode", rr.TextDocument(f"episode {episode}"), static=True)
    topics = set(reader.topics())
    next_world = -1.0
    for topic, _log_ns, msg in reader.messages(topics):
        if not hasattr(msg, "header"):
            continue
        t = _stamp(msg)
        rec.set_time(TIMELINE, duration=t)
        camera = camera_of(topic)
        if camera:
            log(f"cameras/{camera}", rr.Image(image_array(msg)).compress(jpeg_quality=JPEG_QUALITY))
        elif topic == "/joint_states":
            for name, q in zip(msg.name, msg.position):
                log(f"joints/{name}", rr.Scalars(float(q)))
        elif topic == "/balance/reading":
            log("balance/displayed_g", rr.Scalars(float(msg.displayed_g)))
            log("balance/filtered_g", rr.Scalars(float(msg.filtered_g)))
            log("balance/stable", rr.Scalars(1.0 if msg.stable and msg.valid else 0.0))
        elif topic == "/referee/events":
            text = event_text(msg)
            level = "WARN" if msg.category in ("execution_failure", "premature_advancement", "validity") else "INFO"
            log("referee/events", rr.TextLog(text, level=level))
            detail = json.loads(msg.detail_json or "{}")
            if msg.category == "choice" and detail.get("scored"):
                verdict = "correct" if detail.get("correct") else "WRONG"
                log("referee/verdicts", rr.TextLog(f"opportunity {msg.opportunity_id}: first choice "
                                                   f"{_op(msg.operation)} {verdict}",
                                                   level="INFO" if detail.get("correct") else "ERROR"))
        elif topic == "/referee/opportunities":
            log("referee/opportunities", rr.TextLog(f"opportunity {msg.id} opened ({msg.trigger}), "
                                                    f"evidence v{msg.evidence_version}"))
        elif topic == "/referee/legal_set":
            ops = ", ".join(_op(op) for op in msg.operations) or "-"
            log("referee/legal_set", rr.TextLog(f"opportunity {msg.opportunity_id}: legal {ops}"))
        elif topic == "/evaluator/world_state" and t + 1e-9 >= next_world:
            next_world = t + WORLD_PERIOD_S
            names = [o.name for o in msg.objects]
            points = [(o.pose.position.x, o.pose.position.y, o.pose.position.z) for o in msg.objects]
            log("world/objects", rr.Points3D(points, labels=names, radii=0.015))
    rec.flush()
    rec.disconnect()
    return path, counts


def stream_row_counts(path: str | pathlib.Path) -> dict[str, int]:
    """Rows per entity path of an .rrd file, read with Rerun's own reader."""
    from rerun.chunk import RrdReader

    counts: dict[str, int] = {}
    for chunk in RrdReader(path).stream():
        if chunk.is_static:
            continue
        entity = chunk.entity_path.lstrip("/")
        counts[entity] = counts.get(entity, 0) + chunk.num_rows
    return counts
