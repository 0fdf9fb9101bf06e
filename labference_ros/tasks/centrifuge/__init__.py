"""Centrifuge loading (paper 4.1, 8.1): an equal-mass tube pair must occupy
opposite rotor slots; the second tube's destination follows from where the
first one actually settled, not where the robot meant to put it.

Built so far (pure, no simulator): the rotor's calibrated slots (rotor.py),
the versioned contract (contract.py), the insertion predicate with its 0.5 s
seating dwell (insertion.py), the grasp, release and directed-approach
recognisers (recognisers.py), the task state and legal set (task_state.py),
the episode referee (referee.py, scored on synthetic streams in
test/tasks/centrifuge) and the instance generator with its strata and
controlled destination pairs (instances.py), the Oracle site payloads from
measurements (oracle_scope.py), the SR/SSR steps (evaluation.py) and the
TaskFamily object (family.py), and the rotor and tubes as a MuJoCo model
(scene.py: a tube let go in a socket slides to its seat and the predicate
confirms it there). Not yet built: the full scene (robot, cameras, table
from a cell description), the simulator backend's tube and rotor
measurements, reference systems and the graph. The family is therefore not in
the task registry (labference_ros.tasks.BUILTIN) yet: nothing can launch it.
"""
