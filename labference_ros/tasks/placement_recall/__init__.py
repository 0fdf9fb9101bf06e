"""Placement recall (paper 4.3, 8.3): the robot places a tube in a freely chosen
empty hole of a 3 x 4 rack, withdraws, the scene is occluded (and the rack may be
turned), and it must then retrieve that same tube; its actual released hole, not
the intended one, is the retrieval reference.

The rack's hole labels, local frames and rigid transforms with the eq. 10
reconstruction (rack.py), the instance generator with its separately balanced
factors (instances.py), the contract (contract.py), the task state F and legal
set U (task_state.py), the seating predicate and recognisers in the rack's frame
(recognisers.py), the episode referee (referee.py), its SR/SSR steps
(evaluation.py), the scene in the placement cell (scene.py), the occluded
environment transition on a simulated scene (transition.py) and when lab_sim runs
it (environment.py), the reference systems (systems.py) and the TaskFamily object
(family.py). What is still missing is listed in docs/placement_recall.md.
"""
from labference_ros.tasks.placement_recall.family import FAMILY

__all__ = ["FAMILY"]
