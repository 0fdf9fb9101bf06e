"""The readout shows exactly the balance model's value, and the camera can read it."""
import math

from sim_helpers import balance_for, make_instance, run_balance

from labference_ros.cell.display_layout import display_text, text_value
from labference_ros.perception.display_decode import decode_display
from labference_ros.sim.mujoco_backend import MujocoBackend
from labference_ros.tasks.weighing.layout import BALANCE, pan_slot
from labference_ros.tasks.weighing.scene import STANDARD_SHAPES


def test_decoded_display_equals_balance_model_value():
    inst = make_instance(layout_seed=5, sample_mass_g=77.7)
    backend = MujocoBackend()
    backend.load(inst)
    balance = balance_for(backend)
    x, y = pan_slot("std_20", inst.layout["balance"])
    backend.set_object_pose("std_20", (x, y, BALANCE.pan_top_z + STANDARD_SHAPES["std_20"].height))
    seen = set()
    for _ in range(12):  # sample the settling transient and the stable end
        reading = run_balance(backend, balance, 0.25)[-1]
        backend.set_display(reading.displayed_g, reading.stable)
        decoded = decode_display(backend.render("display"))
        assert decoded.ok, decoded
        assert decoded.value == reading.displayed_g
        assert decoded.stable == reading.stable
        seen.add(reading.stable)
    assert seen == {False, True}
    assert abs(reading.displayed_g - 97.7) <= 0.1
    backend.close()


def test_error_display_and_formatting():
    assert display_text(float("nan")) == "-----"
    assert display_text(123456.0) == "-----"
    assert display_text(-0.04) == "   00"  # one char per digit; the point is fixed
    assert display_text(130.2) == " 1302"
    assert text_value(display_text(-12.3)) == -12.3
    assert text_value("-----") is None
    backend = MujocoBackend()
    backend.load(make_instance())
    backend.set_display(math.nan, False)
    decoded = decode_display(backend.render("display"))
    assert decoded.text == "-----" and decoded.value is None and not decoded.stable
    backend.close()
