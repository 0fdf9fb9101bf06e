"""The toy family's SR/SSR step: the puck placed on the instruction's pad (scores.json)."""
STEP_PREDICATES = {"placed_on_goal": lambda scores: bool(scores.get("physically_complete"))}
