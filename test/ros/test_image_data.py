"""msgconv.image_data: pixels into sensor_msgs/Image's data field in one copy, the
message carrying the same pixels as one built from the pixels' bytes."""
from __future__ import annotations

import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import Image

from labference_ros.msgconv import image_data


def _image(data=None, pixels=None) -> Image:
    msg = Image(height=pixels.shape[0], width=pixels.shape[1], encoding="rgb8", step=pixels.shape[1] * 3,
                **({} if data is None else {"data": data}))
    return msg


def test_the_frame_arrives_as_one_built_from_its_bytes():
    pixels = np.random.default_rng(0).integers(0, 256, (24, 32, 3), dtype=np.uint8)
    fast = _image(pixels=pixels)
    fast.data = image_data(pixels)
    # Compared after a round trip: rclpy leaves the alignment gaps of a serialization as
    # its memory held them, so two serializations of equal messages may differ there.
    assert deserialize_message(serialize_message(fast), Image) == _image(pixels.tobytes(), pixels)
    assert bytes(fast.data) == pixels.tobytes()


def test_a_view_that_is_not_contiguous_keeps_its_pixel_order():
    pixels = np.random.default_rng(1).integers(0, 256, (24, 32, 3), dtype=np.uint8)[:, ::2]
    assert not pixels.flags.c_contiguous
    assert image_data(pixels).tobytes() == pixels.tobytes()


def test_an_empty_frame_gives_no_bytes_and_another_pixel_type_is_refused():
    assert len(image_data(np.zeros((0, 32, 3), np.uint8))) == 0
    with pytest.raises(ValueError, match="uint8"):
        image_data(np.zeros((2, 2, 3), np.uint16))
