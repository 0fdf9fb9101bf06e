"""External events at hidden times (core.external_events): the seeded draw of the
trigger time, the episode's watch (premature interactions, the response) and the
population metrics over the episodes that reached the event."""
from __future__ import annotations

import pytest

from labference_ros.core.external_events import (
    ExternalEventSpec,
    ExternalEventWatch,
    draw_trigger_time,
    instance_record,
    population_metrics,
)

SPEC = ExternalEventSpec(name="lamp", window_s=(4.0, 10.0), affected=("a", "b"), cue="a lamp lights")


def test_the_trigger_time_is_a_camera_tick_in_the_window_drawn_from_the_task_seed():
    times = [draw_trigger_time(SPEC, seed) for seed in range(200)]
    assert all(4.0 <= t <= 10.0 for t in times)
    assert all(abs(t * 10 - round(t * 10)) < 1e-9 for t in times)  # on the 0.1 s grid
    assert len(set(times)) > 30  # spread over the window, not one value
    assert times == [draw_trigger_time(SPEC, seed) for seed in range(200)]  # the same seed, the same time
    record = instance_record(SPEC, 7)
    assert record == {"name": "lamp", "window_s": [4.0, 10.0], "trigger_t": draw_trigger_time(SPEC, 7)}


def test_a_window_without_a_tick_after_the_start_is_refused():
    with pytest.raises(ValueError, match="holds no"):
        ExternalEventSpec(name="x", window_s=(0.0, 1.0), affected=(), cue="")
    with pytest.raises(ValueError, match="holds no"):
        ExternalEventSpec(name="x", window_s=(1.01, 1.05), affected=(), cue="")


def test_each_contact_onset_with_an_affected_object_before_the_event_is_premature():
    w = ExternalEventWatch(SPEC, 5.0)
    assert w.contacts(1.0, {"a", "other"}) == ["a"]
    assert w.contacts(1.1, {"a"}) == []  # the same contact goes on
    assert w.contacts(1.2, set()) == []
    assert w.contacts(1.3, {"a", "b"}) == ["a", "b"]  # a touched again, b for the first time
    assert w.happened(5.0) and not w.happened(5.1)
    assert w.contacts(5.2, set()) == [] and w.contacts(5.3, {"a"}) == []  # after the event: allowed
    assert [p["object"] for p in w.premature] == ["a", "a", "b"]


def test_the_response_is_the_first_identified_choice_at_or_after_the_event():
    w = ExternalEventWatch(SPEC, 5.0)
    w.choice(3.0, {"type": "add"}, False, 1)  # before the event: no response
    assert w.response is None
    w.happened(5.0)
    w.choice(6.25, {"type": "add"}, True, 2)
    w.choice(7.0, {"type": "remove"}, True, 3)
    s = w.scores(completed=True)
    assert s["response"]["t"] == 6.25 and s["response_latency_s"] == 1.25 and s["response"]["correct"] is True
    assert s["reached"] and s["t"] == 5.0 and s["trigger_t"] == 5.0 and s["completed"]


def test_population_metrics_count_only_episodes_that_reached_the_event():
    def record(reached, premature, latency, completed):
        return {"reached": reached, "premature": premature > 0, "premature_interactions": premature,
                "response_latency_s": latency, "completed": completed}

    m = population_metrics([record(True, 0, 2.0, True), record(True, 2, 4.0, True), record(True, 0, None, False),
                            record(False, 1, None, False)])
    assert (m["episodes"], m["reached"], m["not_reached"]) == (4, 3, 1)
    assert (m["premature_violation"]["k"], m["premature_violation"]["n"]) == (1, 3)
    assert m["premature_interactions"] == 2 and m["premature_interactions_per_episode"] == pytest.approx(2 / 3)
    assert m["response"]["n"] == 2 and m["response"]["mean_latency_s"] == 3.0 and m["response"]["median_latency_s"] == 3.0
    assert (m["completion"]["k"], m["completion"]["n"]) == (2, 3)
    assert 0 < m["completion"]["lo"] < 2 / 3 < m["completion"]["hi"] < 1
    empty = population_metrics([record(False, 0, None, False)])
    assert empty["reached"] == 0 and empty["premature_violation"]["estimate"] is None


def test_the_report_shows_the_metrics_in_text_and_html():
    from labference_ros.reporting.html_report import coordination_table
    from labference_ros.reporting.report import _coordination_lines

    m = population_metrics([{"reached": True, "premature": True, "premature_interactions": 2, "response_latency_s": 1.5,
                             "completed": True}, {"reached": False}])
    text = "\n".join(_coordination_lines(m))
    assert "reached 1/2" in text and "premature violation (PVR) 100.0% 1/1" in text and "median 1.5 s" in text
    html = coordination_table(m)
    assert "premature violation rate (PVR)" in html and "1 / 1" in html
    assert _coordination_lines(None) == [] and coordination_table(None) == ""
