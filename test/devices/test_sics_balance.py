"""The MT-SICS driver against a balance emulator on a pseudo-terminal: every
reply a real balance gives, and every way the exchange fails, as readings the
referee can use (valid ones) or record (validity events)."""
from __future__ import annotations

import time
from dataclasses import replace

import pytest

from labference_ros.devices.sics_balance import SicsBalance, SicsError
from labference_ros.devices.sics_emulator import SicsBalanceEmulator
from labference_ros.tasks import family
from labference_ros.tasks.weighing.synthetic_world import SyntheticWorld

SETTLE_S = 0.2


@pytest.fixture
def rig(tmp_path):
    emulator = SicsBalanceEmulator(tmp_path / "balance", settle_s=SETTLE_S, stability_timeout_s=0.5).start()
    driver = SicsBalance(str(tmp_path / "balance"), reply_timeout_s=0.3, reconnect_interval_s=0.1)
    yield emulator, driver
    driver.close()
    emulator.stop()


def _settled(driver: SicsBalance):
    time.sleep(SETTLE_S + 0.05)
    return driver.read()


def test_a_changing_load_reads_dynamic_then_stable(rig):
    emulator, driver = rig
    emulator.set_load_g(150.0)
    moving = driver.read()
    assert moving.valid and not moving.stable and moving.displayed_g == 150.0
    settled = _settled(driver)
    assert settled.valid and settled.stable and settled.displayed_g == 150.0
    assert emulator.received[-2:] == ["SI", "SI"]


def test_zero_and_tare_shift_the_net_value(rig):
    emulator, driver = rig
    emulator.set_load_g(30.0)
    time.sleep(SETTLE_S + 0.05)
    assert driver.zero().status == "A"
    emulator.set_load_g(40.0)
    time.sleep(SETTLE_S + 0.05)
    assert driver.tare().value_g == pytest.approx(10.0)
    emulator.set_load_g(65.0)
    assert _settled(driver).displayed_g == pytest.approx(25.0)


def test_an_overload_is_flagged_not_read(rig):
    emulator, driver = rig
    emulator.set_load_g(700.0)
    reading = driver.read()
    assert reading.valid and reading.overload and not reading.stable
    assert reading.displayed_g != reading.displayed_g  # no value: the balance gave none


@pytest.mark.parametrize("fault, cause", [
    ("mute", "no reply to SI within 0.3 s"),
    ("unsupported", "ES (syntax error"),
    ("busy", "S I (command not executable"),
    ("underload", "S - (underload)"),
])
def test_a_refused_or_missing_reply_is_an_invalid_reading_naming_device_and_cause(rig, fault, cause):
    emulator, driver = rig
    emulator.set_load_g(100.0)
    assert _settled(driver).valid
    if fault == "mute":
        emulator.mute = True
    elif fault == "unsupported":
        emulator.unsupported = {"SI"}
    elif fault == "busy":
        emulator.busy = True
    else:
        emulator.set_load_g(-20.0)
    reading = driver.read()
    assert not reading.valid and not reading.stable
    assert reading.invalid_reason.startswith(driver.source + ": ") and cause in reading.invalid_reason
    emulator.mute, emulator.unsupported, emulator.busy = False, set(), False
    emulator.set_load_g(100.0)
    again = _settled(driver)
    assert again.valid and again.displayed_g == 100.0


def test_a_late_reply_is_never_taken_for_the_next_one(rig):
    emulator, driver = rig
    emulator.set_load_g(10.0)
    time.sleep(SETTLE_S + 0.05)
    emulator.reply_delay_s = 0.5  # answers after the driver gave up
    assert "no reply" in driver.read().invalid_reason
    emulator.set_load_g(20.0)
    time.sleep(0.6)  # the late "10.00" is in the port now
    emulator.reply_delay_s = 0.0
    assert driver.read().displayed_g == 20.0


def test_a_balance_slower_than_the_timeout_gives_invalid_readings_never_stale_ones(rig):
    emulator, driver = rig
    emulator.set_load_g(10.0)
    time.sleep(SETTLE_S + 0.05)
    emulator.reply_delay_s = 0.35  # just over the driver's 0.3 s
    readings = []
    for grams in (20.0, 30.0, 40.0, 50.0):
        emulator.set_load_g(grams)
        readings.append((grams, driver.read()))
    assert all(not r.valid or r.displayed_g == grams for grams, r in readings), readings
    assert any(not r.valid for _, r in readings)


def test_a_port_gone_for_a_while_is_an_invalid_reading_not_an_exception(rig):
    emulator, driver = rig
    assert driver.read().valid
    emulator.disconnect()
    time.sleep(0.2)  # the emulator has let go of the pty's master
    for _ in range(3):
        assert not driver.read().valid


def test_a_port_that_disappears_mid_episode_is_reported_and_reopened(rig):
    emulator, driver = rig
    emulator.set_load_g(50.0)
    assert _settled(driver).valid
    emulator.disconnect()
    lost = [driver.read() for _ in range(3)]
    assert all(not r.valid for r in lost)
    assert "lost" in lost[0].invalid_reason or "unavailable" in lost[0].invalid_reason
    assert any("unavailable" in r.invalid_reason for r in lost)
    emulator.reconnect()
    deadline = time.monotonic() + 5
    back = driver.read()
    while not back.valid and time.monotonic() < deadline:
        time.sleep(0.05)
        back = driver.read()
    assert back.valid and back.displayed_g == 50.0
    assert driver.connections == 2


def test_each_device_fault_becomes_a_recorded_validity_event_and_the_episode_goes_on(rig):
    """The weighing referee, fed the driver's readings: faults are validity (or safety)
    events with their cause, and the episode still finishes with scores."""
    emulator, driver = rig
    weighing = family("feedback_weighing")
    instance = weighing.generate("basic", 1, task_seed=3, layout_seed=3, policy_seed=0)[0]
    referee = weighing.make_referee(weighing.contract_for("basic"), instance, episode_id="ep_rig",
                                    session_id="ep_rig")
    world = SyntheticWorld(instance)
    records: list[dict] = []

    def step(seconds: float = 0.1):
        world.run(seconds)
        records.extend(referee.step(replace(world.measure(), balance=driver.read())))

    emulator.set_load_g(world.measure().balance.raw_g)
    time.sleep(SETTLE_S + 0.05)
    step()
    emulator.mute = True
    step()
    emulator.mute = False
    step()
    emulator.unsupported = {"SI"}
    step()
    emulator.unsupported = set()
    step()
    emulator.disconnect()
    step()
    emulator.reconnect()
    time.sleep(0.15)
    step()
    emulator.set_load_g(700.0)
    step()
    records.extend(referee.finish(world.t + 0.1, "policy_stop"))
    reasons = [r["detail"]["reason"] for r in records if r.get("record") == "event" and r["category"] == "validity"]
    assert [driver.source in r for r in reasons] == [True] * 3, reasons
    assert "no reply to SI" in reasons[0] and "ES (syntax error" in reasons[1] and "lost" in reasons[2]
    assert any(r.get("category") == "safety_violation" and r["detail"]["reason"] == "overload" for r in records)
    assert records[-1]["record"] == "scores" and "overload" in records[-1]["violations"]


def test_a_load_cell_model_s_stability_is_what_the_balance_reports(rig):
    """The rehearsal's emulator says stable when the simulated load cell does, whatever the timing."""
    emulator, driver = rig
    emulator.set_load_g(80.0, settled=False)
    time.sleep(SETTLE_S + 0.05)
    held = driver.read()
    assert held.valid and not held.stable  # unchanged for longer than settle_s, yet the model says moving
    emulator.set_load_g(80.01, settled=True)
    at_once = driver.read()
    assert at_once.valid and at_once.stable and at_once.displayed_g == 80.01


def test_the_rehearsal_port_names_the_ros_domain(monkeypatch):
    from labference_ros.nodes.balance_sics import expand_port

    monkeypatch.setenv("ROS_DOMAIN_ID", "17")
    assert expand_port("/tmp/balance-{domain}") == "/tmp/balance-17"
    assert expand_port("/dev/ttyUSB0") == "/dev/ttyUSB0"


def test_continuous_output_gives_every_weight_value_a_short_overload_included(rig):
    """SIR: one line per weight value, so an overload that lasts one value is seen; a poll
    between two values would miss it."""
    emulator, driver = rig
    emulator.set_load_g(100.0)
    driver.start_continuous()
    assert emulator.received[-1] == "SIR"
    first = driver.read_continuous()
    assert first.valid and first.displayed_g == 100.0
    loads = [150.0, 700.0, 160.0, 170.0]  # one overloaded value between two in range
    for grams in loads:
        emulator.set_load_g(grams)
    readings = []
    while len([r for r in readings if r.overload or r.displayed_g in loads]) < len(loads):
        readings.append(driver.read_continuous())
        assert readings[-1].valid, readings[-1].invalid_reason
    seen = [("+" if r.overload else r.displayed_g) for r in readings if r.overload or r.displayed_g in loads]
    assert seen == [150.0, "+", 160.0, 170.0]
    assert driver.read().displayed_g == 170.0  # SI ends continuous output and answers as SI
    assert emulator.received[-1] == "SI" and not driver.continuous


def test_continuous_output_repeats_an_unchanged_load_and_a_silent_balance_is_invalid(rig):
    emulator, driver = rig
    emulator.set_load_g(80.0)
    driver.start_continuous()
    readings = [driver.read_continuous() for _ in range(int(0.4 / emulator.update_period_s))]
    assert all(r.valid and r.displayed_g == 80.0 for r in readings)
    assert readings[-1].stable  # unchanged for settle_s: the balance calls it stable
    emulator.mute = True
    time.sleep(0.1)
    while driver._serial.in_waiting:  # the lines sent before it fell silent
        driver.read_continuous()
    silent = driver.read_continuous()
    assert not silent.valid and "no weight value within 0.3 s" in silent.invalid_reason
    assert silent.invalid_reason.startswith(driver.source + ": ")


def test_a_balance_without_continuous_output_says_so(rig):
    emulator, driver = rig
    emulator.unsupported = {"SIR"}
    with pytest.raises(SicsError, match="SIR refused: ES"):
        driver.start_continuous()
    assert not driver.continuous
    emulator.set_load_g(40.0)
    assert driver.read().displayed_g == 40.0  # polling still works


def test_a_port_lost_during_continuous_output_is_invalid_and_output_starts_again(rig):
    emulator, driver = rig
    emulator.set_load_g(50.0)
    driver.start_continuous()
    emulator.disconnect()
    time.sleep(0.2)
    readings = [driver.read_continuous() for _ in range(10)]  # the lines sent before, then the loss
    lost = [r for r in readings if not r.valid]
    assert lost and "lost" in lost[0].invalid_reason and not driver.continuous
    assert all(not r.valid for r in readings[readings.index(lost[0]):])
    emulator.reconnect()
    time.sleep(driver.reconnect_interval_s)
    driver.start_continuous()
    emulator.set_load_g(55.0)
    assert any(driver.read_continuous().displayed_g == 55.0 for _ in range(20))
