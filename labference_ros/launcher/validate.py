"""What a run's launch arguments mean, checked before any node starts.

parse_launch_arguments() checks names, choices and types; this checks values:
ranges, the tested system against the policy registry, its parameters against
what the system declares (its defaults), the support condition, the instance
list and the output directory. Every refusal is a LaunchArgumentError naming
the argument and what it accepts.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

from labference_ros.core.system_params import OWN_ARGUMENTS, merged_system_params
from labference_ros.core.trajectory_commands import ROW_INTERVAL_S, timing_problem
from labference_ros.tasks import DEFAULT_FAMILY

from .arguments import LaunchArgumentError

# argument -> (lowest allowed value, exclusive?, what it accepts)
RANGES = {
    "episodes": (1, False, "an integer of at least 1"),
    "seed": (0, False, "an integer of at least 0"),
    "deadline_s": (0.0, True, "a number of seconds above 0"),
    "camera_rate": (0.0, True, "a rate in Hz above 0"),
    "service_timeout_s": (0.0, True, "a number of seconds above 0"),
    "image_width": (8, False, "a width in pixels of at least 8"),
    "image_height": (8, False, "a height in pixels of at least 8"),
    "joint_state_timeout_s": (0.0, True, "a number of seconds above 0"),
    "command_latency_s": (0.0, True, "a number of seconds above 0"),
    "command_delivery_s": (0.0, True, "a number of seconds above 0"),
}
MAX_IMAGE_SIDE = 4096


def _number(name: str, text: str):
    try:
        return int(text) if name in ("episodes", "seed", "image_width", "image_height") else float(text)
    except ValueError:
        raise LaunchArgumentError(f"launch argument {name!r} must be {RANGES[name][2]}; got {text!r}") from None


def check_ranges(values: dict[str, str]) -> None:
    for name, (low, exclusive, accepts) in RANGES.items():
        if name not in values or (name == "episodes" and values.get("instances")):
            continue  # an instance list sets the number of episodes itself
        v = _number(name, values[name])
        bad = v != v or (v <= low if exclusive else v < low)  # v != v: NaN
        if name.startswith("image_") and v > MAX_IMAGE_SIDE:
            bad, accepts = True, f"{accepts} and at most {MAX_IMAGE_SIDE}"
        if bad:
            raise LaunchArgumentError(f"launch argument {name!r} must be {accepts}; got {values[name]!r}")
    if "command_latency_s" in values and "command_delivery_s" in values:
        latency, delivery = float(values["command_latency_s"]), float(values["command_delivery_s"])
        problem = timing_problem(ROW_INTERVAL_S, latency, delivery)
        if problem:
            raise LaunchArgumentError(f"launch arguments 'command_latency_s' and 'command_delivery_s': {problem}")


def system_params(values: dict[str, str]) -> dict:
    """system_params as a JSON object, plus agent_url/agent_model (as policy_bridge merges them)."""
    try:
        return merged_system_params(values.get("system_params", ""),
                                    **{key: values.get(key, "") for key in OWN_ARGUMENTS})
    except ValueError as exc:
        raise LaunchArgumentError(f"launch argument 'system_params' {exc}") from None


def _kind(value) -> str | None:
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return None


def check_system(values: dict[str, str], task: str = DEFAULT_FAMILY) -> None:
    """The system is registered (for the graph's task family); its parameters are ones it
    declares, of the declared kind; constructing it (no connection is made) accepts them."""
    from labference_ros.policies import available, make, system_class

    name = values.get("system", "")
    known = available(task)
    if name not in known:
        raise LaunchArgumentError(f"launch argument 'system' must be a registered tested system "
                                  f"({', '.join(known)}); got {name!r}")
    params = system_params(values)
    try:
        declared = make(name, task=task).params  # its defaults: what it reads
    except Exception:  # a system with required parameters (e.g. agent_model) declares none without them
        declared = None
    if declared is not None:
        allowed = set(declared) | set(system_class(name, task).optional_params)
        unknown = sorted(set(params) - allowed)
        if unknown:
            raise LaunchArgumentError(f"system_params of system {name!r}: unknown key(s) {', '.join(unknown)}; "
                                      f"allowed: {', '.join(sorted(allowed))}")
        for key, value in params.items():
            if key not in declared:
                continue  # optional, no default to compare kinds with; the system checks it below
            want = _kind(declared[key])
            if want is not None and _kind(value) != want:
                raise LaunchArgumentError(f"system_params of system {name!r}: {key!r} must be {want} "
                                          f"(default {json.dumps(declared[key])}); got {json.dumps(value)}")
    if name == "http":
        _check_http(params)
    try:
        make(name, task=task, **params).close()
    except Exception as exc:  # the system's own check of its parameters
        raise LaunchArgumentError(f"system_params of system {name!r} refused: {exc}") from None


def _check_http(params: dict) -> None:
    url = str(params.get("url", "http://127.0.0.1:8000"))
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise LaunchArgumentError(f"system_params of system 'http': 'url' must be http://HOST[:PORT][/BASE]; "
                                  f"got {url!r}")
    act = str(params.get("act_path", "/act"))
    if act and parts.path.rstrip("/").endswith(act.rstrip("/")):
        raise LaunchArgumentError(f"system_params of system 'http': 'url' is the server's base URL (the client "
                                  f"posts to url + act_path {act!r}); got {url!r}, which would post to "
                                  f"{url.rstrip('/') + act!r}")


def check_support(values: dict[str, str], task: str = DEFAULT_FAMILY) -> None:
    """The condition parses, and the tested system exposes every site it names
    (capability negotiation, paper 6.3): a support the system cannot take would
    never reach it, and its episodes would look supported while they are not."""
    from labference_ros.oracle.supports import COMPATIBLE, compatibility, parse_launch_support

    try:
        supports = parse_launch_support(values.get("support", "none"))
    except (ValueError, KeyError) as exc:
        raise LaunchArgumentError(f"launch argument 'support': {exc}") from None
    name = values.get("system", "")
    if not supports or not name:
        return
    system = _construct(name, system_params(values), task)
    if system is None:
        return
    refused = {str(s): compatibility(system, s) for s in supports}
    refused = {s: status for s, status in refused.items() if status != COMPATIBLE}
    if refused:
        what = ", ".join(f"{s} ({status})" for s, status in refused.items())
        able = _systems_taking(supports, task)
        hint = f"systems that take {values['support']}: {', '.join(able)}" if able else \
            f"no registered system takes {values['support']}"
        from labference_ros.policies.request_support import PARAM, RequestSupport

        if isinstance(system, RequestSupport):  # a remote server says what it can take
            hint += (f"; or, if the {name} server reads the request's 'support' field, declare it: "
                     f"system_params:='{{\"{PARAM}\": \"{values['support'].replace('+', ',')}\"}}'")
        raise LaunchArgumentError(f"launch argument 'support': system {name!r} cannot take {what}; the support "
                                  f"would never reach it. Run it without support, or choose another system ({hint})")


def _construct(name: str, params: dict, task: str):
    from labference_ros.policies import make

    try:
        system = make(name, task=task, **params)
    except Exception:  # required parameters missing: check_system already named what it refused
        return None
    system.close()
    return system


def _systems_taking(supports, task: str) -> list[str]:
    from labference_ros.oracle.supports import COMPATIBLE, compatibility
    from labference_ros.policies import available

    able = []
    for name in available(task):
        system = _construct(name, {}, task)
        if system is not None and all(compatibility(system, s) == COMPATIBLE for s in supports):
            able.append(name)
    return able


def check_instances(values: dict[str, str], family) -> None:
    path = values.get("instances", "")
    if not path:
        return
    try:
        items = family.read_instances(path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LaunchArgumentError(f"launch argument 'instances': cannot read instance list {path}: {exc}") from None
    if not items:
        raise LaunchArgumentError(f"launch argument 'instances': instance list {path} is empty")
    cell = family.cell_description()
    for item in items:  # a held-out binding the cell does not have: named before anything starts
        try:
            cell.bound(getattr(item, "binding", None))
        except ValueError as exc:
            raise LaunchArgumentError(f"launch argument 'instances': {path}: instance "
                                      f"{getattr(item, 'instance_id', '?')}: {exc}") from None


def writable_ancestor(path: Path) -> Path:
    """The nearest existing directory at or above path (where it would be created)."""
    p = path.absolute()
    while not p.exists():
        p = p.parent
    return p


def check_output_dir(values: dict[str, str]) -> Path | None:
    """The run directory can be created and written; returns the existing directory it goes under."""
    text = values.get("output_dir", "")
    if not text:
        return None
    path = Path(text.replace("{timestamp}", "timestamp"))
    base = writable_ancestor(path)
    if not base.is_dir():
        raise LaunchArgumentError(f"launch argument 'output_dir': {base} is not a directory")
    try:  # a real write: permission bits say nothing about a read-only mount, or to root
        fd, probe = tempfile.mkstemp(prefix=".labference-write-check-", dir=base)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise LaunchArgumentError(f"launch argument 'output_dir': cannot write to {base} "
                                  f"({exc.strerror or exc}); choose a writable directory") from None
    if (path / "attempts.jsonl").exists() or (path / "summary.json").exists():
        raise LaunchArgumentError(f"launch argument 'output_dir': {path} already holds a run; choose another")
    return base


def validate_run(values: dict[str, str], family) -> None:
    """Every check a graph's arguments need, in the order a user would fix them;
    ``family``: the graph's task family (it reads instance lists)."""
    check_ranges(values)
    if "system" in values:
        check_system(values, family.name)
    if "support" in values:
        check_support(values, family.name)
    check_instances(values, family)
    check_output_dir(values)
