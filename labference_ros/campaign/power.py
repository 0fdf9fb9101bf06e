"""`labference campaign plan`: how many episodes per arm, written into the spec before it is locked.

The numbers come from core/sequential.plan (exact, no simulation); the spec gets
them as its `plan:` block, appended to the file as written (comments and order
kept), so `campaign lock` hashes the plan with everything else and refuses arms
or a sequential maximum below what the plan needs (campaign/sequential.py).
"""
from __future__ import annotations

from pathlib import Path

import yaml

from labference_ros.core.sequential import DEFAULT_PRIOR, plan


def plan_for_spec(spec: dict | None, p0: float, p1: float, alpha: float | None, power: float,
                  episodes: int | None = None) -> dict:
    """The plan with the spec's sequential alpha and prior when it declares a sequential test
    (an --alpha that contradicts it is refused: the plan must describe the locked test)."""
    seq = (spec or {}).get("sequential") or {}
    if seq.get("alpha") is not None and alpha is not None and float(seq["alpha"]) != alpha:
        raise ValueError(f"--alpha {alpha:g} differs from the spec's sequential alpha {seq['alpha']:g}")
    alpha = alpha if alpha is not None else float(seq.get("alpha", 0.05))
    return plan(p0, p1, alpha=alpha, power=power, prior=float(seq.get("prior", DEFAULT_PRIOR)), episodes=episodes)


def write_plan(spec_path: Path, result: dict) -> None:
    """Append the plan to the spec; refused when the spec already has one (plan once, then lock)."""
    spec_path = Path(spec_path)
    text = spec_path.read_text(encoding="utf-8")
    spec = yaml.safe_load(text) or {}
    if isinstance(spec, dict) and "plan" in spec:
        raise ValueError(f"{spec_path} already has a plan; remove it to plan again")
    block = yaml.safe_dump({"plan": result}, sort_keys=False, default_flow_style=False)
    sep = "" if text.endswith("\n") or not text else "\n"
    spec_path.write_text(text + sep + "# written by `labference campaign plan`\n" + block, encoding="utf-8")


def format_plan(p: dict) -> str:
    def n(x):
        return "not reached within the search limit" if x is None else str(x)

    lines = [f"plan: reference rate p0 = {p['p0']:g} -> candidate rate p1 = {p['p1']:g}, alpha {p['alpha']:g}, "
             f"power {p['power']:g}", f"  model: {p['model']}"]
    f = p["fixed"]
    lines.append(f"  fixed N (exact McNemar): {n(f['episodes_per_arm'])} episodes per arm"
                 + (f" (power {f['power']:.3f})" if f["power"] is not None else ""))
    s = p["sequential"]
    if s:
        lines.append(f"  sequential ({s['test']}, prior Beta({s['prior']:g}, {s['prior']:g})): at most "
                     f"{s['max_episodes_per_arm']} episodes per arm (power {s['power']:.3f}); expected "
                     f"{s['expected_episodes_per_arm_p1']:.1f} at p1, {s['expected_episodes_per_arm_p0']:.1f} "
                     f"with no difference (type I error {s['type_i_error_at_p0']:.3f})")
    else:
        lines.append("  sequential: power not reached within the search limit")
    w = p["interval"]
    if w:
        widths = ", ".join(f"{100 * v:.1f} points at p = {r}" for r, v in w["expected_width"].items())
        lines.append(f"  95% Wilson interval of one arm's rate with {w['episodes']} episodes: expected width "
                     f"{widths}; at most {100 * w['worst_width']:.1f} points")
    return "\n".join(lines)
