"""A reset asked again before anything moved the scene is answered, not done again.

The episode runner asks lab_sim's reset again when its reply is lost (Fast DDS can drop a
reply sent before its writer matched the client: docs/pitfalls.md). Loading the scene twice
would restart sim time and publish the tare again under a recorder already open; so a
request equal to the last one that succeeded, before any command, advance, restore or entity
pose set since, gets that reset's answer again (ResetEpisode's response fields). In realtime
sim time runs on meanwhile: the answer is still the first (the reset happened once, then),
which is safer than a second reset that a slow first reply could leave under a started
referee."""
from __future__ import annotations

ANSWER_FIELDS = ("success", "message", "layout_hash", "scene_hash", "sim_time")


class RepeatedReset:
    def __init__(self):
        self._last: tuple[tuple[str, str], dict] | None = None

    def answered(self, request, response) -> None:
        """The reset just served; only a successful one can be repeated."""
        key = (request.episode_id, request.instance_json)
        self._last = (key, {f: getattr(response, f) for f in ANSWER_FIELDS}) if response.success else None

    def moved(self) -> None:
        """A command, an advance or a restore: a reset asked from now on is done again."""
        self._last = None

    def repeat(self, request, response) -> bool:
        """Fills response with the last answer when the request repeats it; whether it did."""
        # Only an episode's reset (the runner names it) repeats; simulation_interfaces' ResetSimulation
        # names none, and asked twice it restarts sim time twice, as the standard says.
        if not request.episode_id or self._last is None or self._last[0] != (request.episode_id,
                                                                              request.instance_json):
            return False
        for name, value in self._last[1].items():
            setattr(response, name, value)
        return True
