"""Centrifuge loading (paper 4.1, 8.1): an equal-mass tube pair must occupy
opposite rotor slots; the second tube's destination follows from where the
first one actually settled, not where the robot meant to put it.

The rotor's calibrated slots (rotor.py), the versioned contract (contract.py),
the insertion predicate with its 0.5 s seating dwell (insertion.py), the grasp,
release and directed-approach recognisers (recognisers.py), the task state and
legal set (task_state.py), the episode referee (referee.py), the instance
generator with its strata and controlled destination pairs (instances.py), the
Oracle site payloads from measurements (oracle_scope.py), the SR/SSR steps
(evaluation.py), the scene in the centrifuge cell (scene.py, simulator only)
and the TaskFamily object (family.py).
"""
from labference_ros.tasks.centrifuge.family import FAMILY

__all__ = ["FAMILY"]
