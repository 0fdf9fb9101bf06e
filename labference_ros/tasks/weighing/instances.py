"""Instance generation for feedback weighing (paper 3.4, 4.2, 8.3). Pure.

Task state, layout and policy seeds are separate streams: the task seed draws
target, sample mass and start subset; the layout seed only places objects; the
policy seed goes to the tested system. Plans are balanced over target x answer
strata by a round-robin that covers every stratum once per cycle.
Answer-changing pairs share one layout draw (same layout seed and hash) and
differ in the hidden sample mass, hence in the required answer; their legal
sets at the scored first choice are disjoint.
"""
from __future__ import annotations

import itertools
import random
from dataclasses import replace
from pathlib import Path
from typing import Callable

from labference_ros.core import instance_lists
from labference_ros.core.external_events import instance_record
from labference_ros.tasks.weighing.contract import TaskContract, contract_for
from labference_ros.tasks.weighing.instance import WeighingInstance
from labference_ros.tasks.weighing.objects import STANDARD_MASSES_G, STANDARDS
from labference_ros.tasks.weighing.task_state import Goal, initial_state, legal_set

GENERATOR_VERSION = "weighing-instances-v1"
LayoutFn = Callable[[int], dict]


def default_layout_fn() -> LayoutFn | None:
    try:
        from labference_ros.tasks.weighing.layout import generate_layout
    except ImportError:  # layout module not available: instances carry no layout
        return None
    return generate_layout


def _mass(subset) -> int:
    return sum(STANDARD_MASSES_G[s] for s in subset)


def answers(contract: TaskContract) -> list[tuple[str, ...]]:
    """Possible goal sets W*, each a sorted tuple of standards."""
    lo, hi = contract.goal_size
    out = []
    for k in range(lo, hi + 1):
        out += [tuple(sorted(c, key=STANDARDS.index)) for c in itertools.combinations(STANDARDS, k)]
    return out


def strata(contract: TaskContract) -> list[tuple[int, tuple[str, ...]]]:
    """Feasible (target, W*) strata in a round-robin order: any prefix of
    len(targets) * len(answers) items covers each stratum exactly once, and
    consecutive items rotate both target and answer."""
    targets, ans = list(contract.targets_g), answers(contract)
    order = []
    for k in range(len(targets) * len(ans)):
        a = ans[k % len(ans)]
        t = targets[(k // len(ans) + k) % len(targets)]
        order.append((t, a))
    assert len(set(order)) == len(order)
    return [(t, a) for t, a in order if t - _mass(a) >= contract.min_sample_g]


def legal_at_start(contract: TaskContract, target: float, goal_set, start) -> frozenset:
    goal = Goal(float(target), frozenset(goal_set))
    z = initial_state(goal, tuple(start))
    return frozenset(legal_set(contract, goal, replace(z, reading_ready=True)))


def _start_sets(contract: TaskContract, goal_set) -> list[tuple[str, ...]]:
    if contract.goal_size == (1, 1):  # basic, hidden_event: every standard starts on the table
        return [()]
    out = []
    for k in range(1, len(STANDARDS) + 1):
        for c in itertools.combinations(STANDARDS, k):
            if len(set(c) ^ set(goal_set)) >= contract.min_start_goal_edits:
                out.append(tuple(c))
    return out


def _layout(layout_fn: LayoutFn | None, seed: int) -> dict:
    if layout_fn is None:
        return {}
    return {k: tuple(v) for k, v in layout_fn(seed).items()}


def _external_event(contract: TaskContract, task_seed: int) -> dict:
    """The instance's event time, drawn from the contract's window with its task seed."""
    spec = contract.external_event
    return instance_record(spec, task_seed) if spec is not None else {}


def generate(condition: str, n: int, task_seed: int, layout_seed: int, policy_seed: int,
             layout_fn: LayoutFn | None | str = "default", contract: TaskContract | None = None) -> list[WeighingInstance]:
    """n single instances, balanced over (target, W*) strata."""
    contract = contract or contract_for(condition)
    if contract.rebinds:  # a held-out binding: the rebound condition's instances, rebound
        return [_rebound(i, contract) for i in generate(contract.rebinds, n, task_seed, layout_seed, policy_seed,
                                                         layout_fn)]
    layout_fn = default_layout_fn() if layout_fn == "default" else layout_fn
    rng = random.Random(f"{GENERATOR_VERSION}:task:{condition}:{task_seed}")
    plan = strata(contract)
    out = []
    for i in range(n):
        target, goal_set = plan[i % len(plan)]
        start = rng.choice(_start_sets(contract, goal_set))
        seed = task_seed * 1_000_003 + i
        out.append(WeighingInstance(
            instance_id=f"{condition}-{task_seed}-{i:04d}", condition=condition,
            task_seed=seed, layout_seed=layout_seed + i, policy_seed=policy_seed + i,
            target_g=float(target), sample_mass_g=float(target - _mass(goal_set)),
            initial_on_pan=start, goal_set=goal_set, layout=_layout(layout_fn, layout_seed + i),
            stratum=f"{target}:{'+'.join(goal_set)}", external_event=_external_event(contract, seed)))
    return out


def generate_pairs(condition: str, n_pairs: int, task_seed: int, layout_seed: int, policy_seed: int,
                   layout_fn: LayoutFn | None | str = "default",
                   contract: TaskContract | None = None) -> list[tuple[WeighingInstance, WeighingInstance]]:
    """Answer-changing pairs: same target, start arrangement and layout draw;
    different hidden sample mass and W*; disjoint legal sets at the first choice."""
    contract = contract or contract_for(condition)
    if contract.rebinds:
        return [(_rebound(a, contract), _rebound(b, contract))
                for a, b in generate_pairs(contract.rebinds, n_pairs, task_seed, layout_seed, policy_seed, layout_fn)]
    layout_fn = default_layout_fn() if layout_fn == "default" else layout_fn
    rng = random.Random(f"{GENERATOR_VERSION}:pairs:{condition}:{task_seed}")
    targets = list(contract.targets_g)
    ans = [a for a in answers(contract)]
    # Round-robin over (target, unordered answer pair) strata.
    pair_strata = []
    for t in targets:
        for a, b in itertools.combinations(ans, 2):
            if t - _mass(a) >= contract.min_sample_g and t - _mass(b) >= contract.min_sample_g:
                starts = [s for s in _start_sets(contract, a) if s in set(_start_sets(contract, b))
                          and not (legal_at_start(contract, t, a, s) & legal_at_start(contract, t, b, s))]
                if starts:
                    pair_strata.append((t, a, b, starts))
    # Interleave targets so consecutive pairs rotate the target.
    by_target = {t: [s for s in pair_strata if s[0] == t] for t in targets}
    for lst in by_target.values():
        rng.shuffle(lst)
    interleaved = [s for group in itertools.zip_longest(*by_target.values()) for s in group if s is not None]
    out = []
    for k in range(n_pairs):
        target, a, b, starts = interleaved[k % len(interleaved)]
        start = rng.choice(starts)
        lseed = layout_seed + k
        layout = _layout(layout_fn, lseed)  # one nuisance draw shared by both members
        pair_id = f"{condition}-pair-{task_seed}-{k:04d}"
        members = []
        for role, goal_set in (("a", a), ("b", b)):
            members.append(WeighingInstance(
                instance_id=f"{pair_id}-{role}", condition=condition,
                task_seed=task_seed * 1_000_003 + k, layout_seed=lseed, policy_seed=policy_seed + k,
                target_g=float(target), sample_mass_g=float(target - _mass(goal_set)),
                initial_on_pan=start, goal_set=goal_set, layout=dict(layout),
                stratum=f"{target}:{'+'.join(goal_set)}", pair_id=pair_id, pair_role=role,
                external_event=_external_event(contract, task_seed * 1_000_003 + k)))
        out.append((members[0], members[1]))
    return out


def _rebound(instance: WeighingInstance, contract: TaskContract) -> WeighingInstance:
    """`instance` of the rebound condition with the contract's binding: its ids name the
    held-out condition, binding_twin the instance it repeats."""
    def renamed(ident: str) -> str:
        return contract.condition + ident[len(instance.condition):] if ident else ident
    return replace(instance, instance_id=renamed(instance.instance_id), condition=contract.condition,
                   pair_id=renamed(instance.pair_id), binding=contract.binding or "",
                   binding_twin=instance.instance_id)


def write_instance_list(path: str | Path, instances, meta: dict | None = None) -> None:
    """Instances (or pairs, flattened in order) to one JSON file (core.instance_lists)."""
    instance_lists.write_instance_list(path, instances, GENERATOR_VERSION, meta)


def read_instance_list(path: str | Path) -> list[WeighingInstance]:
    return instance_lists.read_instance_list(path, WeighingInstance.from_json)


def pairs_of(instances) -> list[tuple[WeighingInstance, WeighingInstance]]:
    """Regroup a read list into its registered pairs (incomplete pairs are kept out)."""
    groups: dict[str, dict[str, WeighingInstance]] = {}
    for inst in instances:
        if inst.pair_id:
            groups.setdefault(inst.pair_id, {})[inst.pair_role] = inst
    return [(g["a"], g["b"]) for _, g in sorted(groups.items()) if "a" in g and "b" in g]
