"""A deterministic stream of serialized messages like an episode's: three
320x240 rgb8 cameras at 10 Hz (a rendered-looking scene with one moving block),
load-cell wrenches (a robot-side stream) and balance readings (an evaluator
topic) at 50 Hz, in log-time order."""
from __future__ import annotations

import numpy as np

from labference_ros.recording.topics import typestore

CAMERAS = ("front", "wrist", "display")
T0_NS = 1_700_000_000_000_000_000


def _frame(cam: int, k: int) -> np.ndarray:
    h, w = 240, 320
    y = np.arange(h)[:, None]
    x = np.arange(w)[None, :]
    img = np.empty((h, w, 3), np.uint8)
    img[..., 0] = (x * 255 // w + 40 * cam) % 256
    img[..., 1] = (y * 255 // h) % 256
    img[..., 2] = 90 + 30 * cam
    r = np.random.default_rng(cam * 100_000 + k)
    img ^= (r.random((h, w, 1)) < 0.02).astype(np.uint8)  # a little sensor-like noise
    x0 = (10 + 4 * k) % (w - 40)
    img[100:140, x0:x0 + 40] = (200, 30, 30)
    return img


def sample_stream(seconds: float):
    """(topic, msgtype, log_time_ns, cdr bytes)."""
    store = typestore()
    Time = store.types["builtin_interfaces/msg/Time"]
    Header = store.types["std_msgs/msg/Header"]
    Image = store.types["sensor_msgs/msg/Image"]
    Reading = store.types["labference/msg/BalanceReading"]
    Wrench = store.types["geometry_msgs/msg/Wrench"]
    WrenchStamped = store.types["geometry_msgs/msg/WrenchStamped"]
    Vector3 = store.types["geometry_msgs/msg/Vector3"]
    steps = int(seconds * 50)
    for i in range(steps):
        t_ns = T0_NS + i * 20_000_000
        stamp = Time(i // 50, (i % 50) * 20_000_000)
        if i % 5 == 0:
            k = i // 5
            for c, cam in enumerate(CAMERAS):
                msg = Image(Header(stamp, cam), 240, 320, "rgb8", 0, 960, _frame(c, k).reshape(-1))
                yield (f"/cameras/{cam}/image_raw", "sensor_msgs/msg/Image", t_ns + c,
                       bytes(store.serialize_cdr(msg, "sensor_msgs/msg/Image")))
        wrench = WrenchStamped(Header(stamp, "pan_load_cell"),
                               Wrench(Vector3(0.0, 0.0, 0.005 * i), Vector3(0.0, 0.0, 0.0)))
        yield ("/balance/wrench", "geometry_msgs/msg/WrenchStamped", t_ns + 4,
               bytes(store.serialize_cdr(wrench, "geometry_msgs/msg/WrenchStamped")))
        reading = Reading(Header(stamp, "pan"), 0.5 * i, 0.5 * i, 0.5 * i, True, False, True, "", "sim")
        yield ("/balance/reading", "labference/msg/BalanceReading", t_ns + 5,
               bytes(store.serialize_cdr(reading, "labference/msg/BalanceReading")))
