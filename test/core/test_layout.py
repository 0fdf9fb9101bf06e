"""Layout seed -> placements: deterministic, apart, reachable, on the pan."""
import math

import pytest

from labference_ros.tasks.weighing.layout import (
    BALANCE, MIN_OBJECT_SPACING, TABLE_X, TABLE_Y, generate_layout, pan_slot)
from labference_ros.tasks.weighing.objects import SAMPLE, STANDARDS


def test_same_seed_same_layout_and_seeds_differ():
    assert generate_layout(11) == generate_layout(11)
    assert len({tuple(sorted(generate_layout(s).items())) for s in range(20)}) == 20


@pytest.mark.parametrize("seed", range(200))
def test_layout_is_feasible(seed):
    lay = generate_layout(seed)
    assert set(lay) == {"balance", SAMPLE, *STANDARDS}
    bx, by = lay["balance"]
    behind, front = BALANCE.footprint_half_x
    for i, a in enumerate(STANDARDS):
        x, y = lay[a]
        assert TABLE_X[0] <= x <= TABLE_X[1] and TABLE_Y[0] <= y <= TABLE_Y[1]
        assert 0.3 < math.hypot(x, y) < 0.75  # comfortably inside the Panda's reach
        # clear of the balance footprint
        assert not (bx - behind - 0.05 < x < bx + front + 0.05 and abs(y - by) < BALANCE.housing_half_y + 0.05)
        for b in STANDARDS[i + 1:]:
            assert math.dist(lay[a], lay[b]) >= MIN_OBJECT_SPACING
    assert math.dist(lay[SAMPLE], lay["balance"]) < 0.01
    for name in STANDARDS:
        sx, sy = pan_slot(name, lay["balance"])
        assert math.hypot(sx - bx, sy - by) + 0.019 < BALANCE.pan_radius
