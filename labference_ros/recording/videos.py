"""Per-episode MP4 of each registered camera stream, written from the bag.

Frames are placed on the sim-time axis at the stream's own rate (taken from the
header stamps), so a video plays at sim speed whatever the wall-clock pace of a
sync-mode run was. Files: <out_dir>/<episode_id>_<camera>.mp4.
"""
from __future__ import annotations

import pathlib
import re

import numpy as np

from .bag_reader import EpisodeBagReader
from .topics import camera_of

ENCODINGS = {"rgb8": 3, "bgr8": 3, "mono8": 1, "rgba8": 4, "bgra8": 4}


def image_array(msg) -> np.ndarray:
    """HxWx3 uint8 RGB from a sensor_msgs/Image (rosbags or rclpy)."""
    channels = ENCODINGS.get(msg.encoding)
    if channels is None:
        raise ValueError(f"unsupported image encoding {msg.encoding!r}")
    buf = np.frombuffer(bytes(msg.data), dtype=np.uint8)
    rows = buf.reshape(msg.height, msg.step)[:, :msg.width * channels]
    img = rows.reshape(msg.height, msg.width, channels)
    if msg.encoding.startswith("bgr"):
        img = img[..., 2::-1]
    elif channels == 1:
        img = np.repeat(img, 3, axis=2)
    return np.ascontiguousarray(img[..., :3])


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text) or "episode"


def stream_fps(stamps: list[float], default: float = 10.0) -> float:
    if len(stamps) < 2:
        return default
    dt = float(np.median(np.diff(stamps)))
    return 1.0 / dt if dt > 0 else default


def write_videos(bag: str | pathlib.Path, out_dir: str | pathlib.Path, episode_id: str | None = None) -> dict:
    """Writes one MP4 per camera found in the bag; returns {camera: (path, frames)}."""
    import imageio.v2 as imageio

    reader = EpisodeBagReader(bag)
    episode = episode_id or reader.custom.get("episode_id") or reader.dir.parent.name
    topics = {t for t in reader.topics() if camera_of(t)}
    frames: dict[str, list] = {}
    for topic, _t, msg in reader.messages(topics, decoder="rosbags"):
        frames.setdefault(camera_of(topic), []).append((msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9, msg))
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {}
    for cam, items in sorted(frames.items()):
        items.sort(key=lambda x: x[0])
        fps = stream_fps([t for t, _ in items])
        path = out_dir / f"{safe_name(episode)}_{safe_name(cam)}.mp4"
        tmp = path.with_name(f".{path.stem}.tmp.mp4")
        # Small test images are not multiples of 16: keep their size (no rescaling).
        with imageio.get_writer(tmp, fps=fps, codec="libx264", macro_block_size=1, quality=8,
                                ffmpeg_log_level="error") as w:
            for _t, msg in items:
                w.append_data(image_array(msg))
        tmp.replace(path)
        written[cam] = (path, len(items))
    return written
