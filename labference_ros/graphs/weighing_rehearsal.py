"""Feedback weighing rehearsed for the real cell: the simulator plays the hardware and
the referee scores from sensors alone, beside a shadow referee that reads the simulator.

launch/weighing_rehearsal.launch.py is generated from this file. It is the real graph
(graphs/weighing_real.py) with the hardware played by the simulator, which publishes
only what a real cell's hardware would:
- lab_sim (realtime, `fiducials`): joint states, the cameras and the overhead marker
  camera, the markers on the objects' top faces, and the arm and gripper command
  interfaces. Its world state goes to /shadow/world_state, not to the referee.
- the balance: the simulated load cell (sim_balance, on /sim_balance/reading) sets the
  load of sics_emulator, an MT-SICS balance on a pseudo-terminal; balance_sics reads
  it through the serial driver a real balance uses and publishes /balance/reading.
- object poses: fiducial_tracker reads the markers on the overhead camera and
  world_estimator, given that camera's rays, publishes the referee's
  /evaluator/world_state and the checked /evaluator/balance_reading.
- the referee scores from those; shadow_referee (the same node, remapped to
  /shadow_referee/*) scores the same episodes from lab_sim's state and the simulated
  balance, and writes its records in each episode's shadow/ folder.
  `labference agreement RUN_DIR` compares the two.
- between episodes lab_sim resets the scene, and the episode starts only once the
  estimator's scene check confirms it from the sensors (episode_runner setup=rehearsal).
A privileged tested system (scripted_expert) reads lab_sim's state, as in simulation:
what is rehearsed is the referee's sensing, not the system's. Every chunk passes the
Franka envelope (`safety`, franka as in the real graph) before it reaches the arm.
"""
from __future__ import annotations

import dataclasses
import json

from labference_ros.tasks import family as task_family

from . import weighing_sim
from .graph import Graph, LaunchArgument, NodeSpec, Param

TASK = weighing_sim.TASK
_SHARED = ("episodes", "system", "system_params", "agent_url", "agent_model", "condition", "seed", "support",
           "output_dir", "record", "instances", "deadline_s", "free_space_check", "monitor",
           "service_timeout_s", "image_width", "image_height", "camera_rate", "safety")
# The real graph's envelope: what would reach a real arm is checked as it would be there.
ARGUMENTS = tuple(dataclasses.replace(a, default="franka") if a.name == "safety" else a
                  for a in weighing_sim.ARGUMENTS if a.name in _SHARED) + (
    LaunchArgument("marker_camera_width", "1600", "Overhead marker camera image width in pixels (std_10's "
                   "15 mm marker needs about 1600)"),
    LaunchArgument("marker_camera_height", "1200", "Overhead marker camera image height in pixels"),
    LaunchArgument("balance_port", "/tmp/labference-rehearsal-balance-{domain}", "Where the emulated MT-SICS "
                   "balance's pty is linked ({domain}: the launch's ROS domain, so two rehearsals never share one)"),
    LaunchArgument("realtime_factor", "0.5", "Sim seconds per wall second: lab_sim renders four cameras, one of them "
                   "at 1600x1200, and must keep the pace it promises (the arm follows its rows only then)"),
    LaunchArgument("setup_timeout_s", "30", "Seconds for the estimator to confirm lab_sim's reset from the sensors "
                   "before the episode is recorded as not started"),
    LaunchArgument("balance_marker", "false", "true: the scene check senses the balance's pose from the marker "
                   "on the simulated balance's pan (markers: balance) and refuses a balance more than 1 cm from "
                   "the instance's place, as the real launch does; false: the balance is taken to stand where the "
                   "instance says", choices=("true", "false")),
    LaunchArgument("confirm", "auto", "auto: an episode starts once its scene check passes; operator: also only "
                   "after a confirmation (`labference operator confirm`), as on the real cell",
                   choices=("auto", "operator")),  # episodes.operator.CONFIRM_MODES
)

STEP_MODE = "realtime"  # the balance is polled on its own clock, as a real one is
MARKER_CAMERA = "overhead"
# The estimator trusts an unseen marker this long: a 10 Hz camera with rendering and detection latency.
MARKER_TIMEOUT_S = 0.35
SIM_TIME = {"use_sim_time": True}  # nodes stamping with their own clock stamp sim time
SHADOW_REMAPS = tuple((f"/referee/{name}", f"/shadow_referee/{name}") for name in (
    "events", "legal_set", "opportunities", "scores", "receipts", "start_episode", "finish_episode",
    "report_operation")) + (("/evaluator/world_state", "/shadow/world_state"),
                            ("/balance/reading", "/sim_balance/reading"))

NODES = (
    NodeSpec("lab_sim", "lab_sim",
             parameters={"step_mode": STEP_MODE, "camera_rate": Param("camera_rate", float),
                         "image_width": Param("image_width", int), "image_height": Param("image_height", int),
                         "fiducials": True, "marker_camera_width": Param("marker_camera_width", int),
                         "marker_camera_height": Param("marker_camera_height", int),
                         "realtime_factor": Param("realtime_factor", float)},
             remappings=(("/evaluator/world_state", "/shadow/world_state"),
                         ("/balance/reading", "/sim_balance/reading"))),
    NodeSpec("sim_balance", "balance", parameters={}, remappings=(("/balance/reading", "/sim_balance/reading"),)),
    NodeSpec("sics_emulator", "sics_emulator", parameters={"port": Param("balance_port")}),
    NodeSpec("balance", "balance_sics", parameters={"port": Param("balance_port"), **SIM_TIME}),
    NodeSpec("fiducial_tracker", "fiducial_tracker",
             parameters={"task": TASK, "camera": MARKER_CAMERA,
                         "markers_json": json.dumps(task_family(TASK).cell_description().marker_table())}),
    NodeSpec("world_estimator", "world_estimator",
             parameters={"task": TASK, "marker_camera": MARKER_CAMERA, "marker_timeout_s": MARKER_TIMEOUT_S,
                         "balance_marker": Param("balance_marker", bool), **SIM_TIME}),
    NodeSpec("referee", "referee", parameters={"task": TASK},
             remappings=(("/balance/reading", "/evaluator/balance_reading"),)),
    NodeSpec("shadow_referee", "referee", parameters={"task": TASK, "records_subdir": "shadow"},
             remappings=SHADOW_REMAPS),
    NodeSpec("policy_bridge", "policy_bridge",
             parameters={"system": Param("system"), "system_params_json": Param("system_params"),
                         "agent_url": Param("agent_url"), "agent_model": Param("agent_model"),
                         "step_mode": STEP_MODE, "camera_rate": Param("camera_rate", float),
                         "support": Param("support"), "task": TASK, "safety": Param("safety"),
                         "report_mirror": "/shadow_referee/report_operation"},
             remappings=(("/evaluator/world_state", "/shadow/world_state"),)),
    NodeSpec("oracle", "oracle", parameters={"condition": Param("support"), "task_condition": Param("condition")}),
    NodeSpec("recorder", "recorder", parameters={"task": TASK, "enabled": Param("record", bool)}),
    NodeSpec("monitor", "monitor", parameters={}, when="monitor"),
    NodeSpec("episode_runner", "episode_runner",
             parameters={"episodes": Param("episodes", int), "system": Param("system"),
                         "condition": Param("condition"), "seed": Param("seed", int),
                         "output_dir": Param("output_dir"), "instances": Param("instances"),
                         "deadline_s": Param("deadline_s", float), "step_mode": STEP_MODE,
                         "camera_rate": Param("camera_rate", float),
                         "service_timeout_s": Param("service_timeout_s", float),
                         "record": Param("record", bool), "support": Param("support"), "task": TASK,
                         "image_width": Param("image_width", int), "image_height": Param("image_height", int),
                         "setup": "rehearsal", "setup_timeout_s": Param("setup_timeout_s", float),
                         "confirm": Param("confirm")},
             ends_graph=True),
)

GRAPH = Graph(name="weighing_rehearsal", package="labference",
              description="Feedback weighing rehearsed for the real cell: lab_sim plays the hardware (markers, "
                          "overhead camera, MT-SICS balance on a pty), the referee scores from the sensor-only "
                          "world estimator, a shadow referee from the simulator",
              arguments=ARGUMENTS, nodes=NODES, task=TASK)
