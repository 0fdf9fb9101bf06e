"""What every family's hidden-event condition with a lamp shares (core.external_events):
the simulated environment that lights an indicator lamp at the instance's trigger time.

lab_sim (and the Oracle's in-process world) asks the environment at every camera tick,
as placement recall's occluder, so the lamp lights at a tick and that tick's frames are
the first to show it. It changes only the lamp geom's colour (no physics); the world
state published right after carries the event's record (WorldMeasurement.environment),
which is how the referee and the replay audit reading the bag learn of it. Nothing
reaches a tested system but the pixels.
"""
from __future__ import annotations

from labference_ros.core.external_events import ENVIRONMENT_KEY


class IndicatorLampEnvironment:
    """One episode's lamp: `geom` turns `lit_rgba` at the instance's trigger time."""

    def __init__(self, instance, geom: str, lit_rgba):
        self.instance, self.geom, self.lit_rgba = instance, geom, tuple(lit_rgba)
        self.trigger_t = float(instance.external_event["trigger_t"])
        self.lit_t: float | None = None

    def occluded(self, t: float) -> bool:
        return False  # the cameras always see

    def update(self, m, model, data) -> dict | None:
        """At a camera tick: lights the lamp once its time has come; returns the event's
        record for the next world state, else None."""
        if self.lit_t is not None or m.t < self.trigger_t - 1e-9:
            return None
        model.geom_rgba[model.geom(self.geom).id] = self.lit_rgba
        self.lit_t = m.t
        name = self.instance.external_event["name"]
        return {ENVIRONMENT_KEY: {"id": f"{self.instance.instance_id}:{name}", "name": name, "t": m.t}}


def lamp_event_profile(spec) -> dict:
    """run.json's account of a hidden-event condition (its lamp, window, cue and the objects
    it guards; the time is each instance's); {} for a condition without one (spec None)."""
    if spec is None:
        return {}
    return {"external_event": spec.name, "window_s": list(spec.window_s), "cue": spec.cue,
            "affected": list(spec.affected)}


def lamp_environment(instance, geom: str, lit_rgba) -> IndicatorLampEnvironment | None:
    """The hidden-event condition's lamp for this episode; None for an instance without an event."""
    if not instance.external_event:
        return None
    return IndicatorLampEnvironment(instance, geom, lit_rgba)
