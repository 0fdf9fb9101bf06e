"""A profile's declared conventions against what the server says about itself.

Servers describe themselves in their first message: OpenPI's metadata map,
RoboArena's PolicyServerConfig (image_resolution, needs_wrist_camera,
n_external_cameras, needs_stereo_camera, needs_session_id, action_space),
GR00T's get_modality_config. Whatever the server states is compared with
what the profile declares before the episode starts; one mismatch stops it
with one line naming both sides. A server that states nothing about a
convention is not contradicted (stock OpenPI servers send little); the
declared conventions and the metadata are recorded either way.
"""
from __future__ import annotations

from labference_ros.core.system import EvaluationValidityError

MISMATCH = "convention mismatch"

# metadata keys that state the control rate
_RATE_KEYS = ("control_rate_hz", "control_frequency_hz", "control_hz", "fps")


class ConventionMismatch(EvaluationValidityError):
    """The server states a convention the profile does not declare."""


def _exterior_slots(conventions: dict) -> list[str]:
    return [k for k in conventions["cameras"] if "exterior" in k]


def _wrist_slots(conventions: dict) -> list[str]:
    return [k for k in conventions["cameras"] if "wrist" in k]


def mismatches(conventions: dict, metadata: dict, resize: list | None) -> list[str]:
    """(server says X, profile declares Y) lines; empty when they agree."""
    out = []

    def differ(what: str, server, declared) -> None:
        out.append(f"{what}: server {server!r}, profile {declared!r}")

    space = metadata.get("action_space")
    if isinstance(space, str) and space != conventions["action_space"]:
        differ("action_space", space, conventions["action_space"])
    dim = metadata.get("action_dim")
    if isinstance(dim, int) and not isinstance(dim, bool) and dim != conventions["action_dim"]:
        differ("action_dim", dim, conventions["action_dim"])
    for key in _RATE_KEYS:
        rate = metadata.get(key)
        if isinstance(rate, (int, float)) and not isinstance(rate, bool):
            if abs(float(rate) - conventions["control_rate_hz"]) > 1e-6:
                differ(key, rate, conventions["control_rate_hz"])
            break
    if "n_external_cameras" in metadata:
        exterior = _exterior_slots(conventions)
        cameras = _whole_number(metadata["n_external_cameras"])
        if cameras != len(exterior):  # a value that is no count differs too, named as sent
            differ("n_external_cameras", metadata["n_external_cameras"] if cameras is None else cameras,
                   len(exterior))
    if "needs_wrist_camera" in metadata and bool(metadata["needs_wrist_camera"]) != bool(_wrist_slots(conventions)):
        differ("needs_wrist_camera", bool(metadata["needs_wrist_camera"]), bool(_wrist_slots(conventions)))
    if metadata.get("needs_stereo_camera"):
        differ("needs_stereo_camera", True, "no stereo pair in the cell")
    resolution = metadata.get("image_resolution")
    if resolution is not None and "image_resolution" in metadata:
        sizes = [_whole_number(x) for x in resolution] if isinstance(resolution, (list, tuple)) else [None]
        server = resolution if None in sizes else sizes
        if server != (list(resize) if resize else None):
            differ("image_resolution", server, list(resize) if resize else None)
    return out


def _whole_number(value) -> int | None:
    """A count or size as the server sent it, or None where it is not a whole number
    (a malformed metadata value is a mismatch to name, never a crash)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def check(profile_name: str, conventions: dict, metadata: dict, resize: list | None) -> None:
    """Raise ConventionMismatch naming every disagreement."""
    found = mismatches(conventions, metadata, resize)
    if found:
        raise ConventionMismatch(f"{MISMATCH} with profile {profile_name!r}: {'; '.join(found)}")
