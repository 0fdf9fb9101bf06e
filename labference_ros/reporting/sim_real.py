"""`labference sim-real`: real success estimated from simulated (or rehearsal) runs and a few real ones.

Outcomes are PASS (valid completion in a final scores.json; anything else is
not a PASS, as in the accounting), one per instance (episodes.resolve). The
real runs' instances must all have a simulated result; the simulated
instances without a real run are the simulated-only set. The estimate and
its assumptions are core/ppi.py's.
"""
from __future__ import annotations

from labference_ros.core.ppi import prediction_powered

from . import accounting as acc
from .episodes import load, resolve


def _outcomes(roots) -> dict[str, bool]:
    results, _ = resolve(load(roots))
    return {r["instance_id"]: acc.outcome(r) == acc.PASS for r in results if r.get("instance_id")}


def sim_real(sim_roots, real_roots) -> dict:
    sim, real = _outcomes(sim_roots), _outcomes(real_roots)
    if not real:
        raise ValueError("no real episode found under the real run directories")
    unpaired = sorted(set(real) - set(sim))
    if unpaired:
        raise ValueError(f"{len(unpaired)} real instance(s) have no simulated result (e.g. {unpaired[0]}); "
                         "run the simulator on every instance the rig ran")
    paired = sorted(real)
    sim_only = sorted(set(sim) - set(real))
    out = prediction_powered([real[i] for i in paired], [sim[i] for i in paired], [sim[i] for i in sim_only])
    return {**out, "paired_instances": paired, "sim_only_instances": len(sim_only)}


def format_sim_real(r: dict) -> str:
    def pct(x):
        return f"{100 * x:.1f}%"
    ro = r["real_only"]
    sim_only = "n/a" if r["sim_rate_only"] is None else pct(r["sim_rate_only"])
    lines = [f"real success     {pct(r['estimate'])} [{pct(r['lo'])}, {pct(r['hi'])}]  ({r['method']}, "
             f"lambda {r['lambda']:.2f})",
             f"real runs alone  {r['real_successes']}/{r['n_real']} = {pct(ro['estimate'])} "
             f"[{pct(ro['lo'])}, {pct(ro['hi'])}] (Wilson)",
             f"simulation       {pct(r['sim_rate_paired'])} on the {r['n_real']} paired instances, {sim_only} on "
             f"{r['n_sim_only']} simulated-only; sim and real agree on {pct(r['agreement'])} of the pairs",
             "assumes: the real instances are a random subset of the list, chosen before any outcome was seen; "
             "every simulated outcome is kept (docs/reporting.md)"]
    if r.get("reason"):
        lines.insert(1, f"note             {r['reason']}")
    return "\n".join(lines)
