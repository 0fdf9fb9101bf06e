"""ROS 2 simulation_interfaces (the standard simulator services, 2.1.0) on lab_sim.

lab_sim answers the standard's services and its SimulateSteps action, under the
names Isaac Sim's simulation-control extension uses (`/get_simulator_features`,
`/step_simulation`, ..., in the namespace of the `sim_interfaces_ns` parameter,
default the root). They map onto what lab_sim already does:

- LoadWorld: an instance's scene; the world resource's `resource_string` is the
  family's instance JSON (or `uri` a file:// path to one), as `/lab_sim/reset` loads it.
- ResetSimulation: the loaded instance again, from its start state (every scope
  resets time, state and spawned entities alike: lab_sim spawns none).
- StepSimulation and SimulateSteps: sync mode's advance by that many physics steps,
  with no commands awaited (lab_sim is paused between steps in sync mode; in
  realtime mode it plays and refuses steps).
- GetSimulationState / SetSimulationState: NO_WORLD before a load, then PAUSED (sync)
  or PLAYING (realtime); STOPPED resets. A switch between sync and realtime is refused:
  the step mode is fixed when lab_sim starts.
- GetEntities, GetEntityState, GetEntitiesStates: the robot's base, the fixtures
  and the objects (name filter: a regular expression searched in the name; category
  filter), in the world frame, stamped with sim time.
- SetEntityState: pose and twist of a free object (instance setup, tests).

Spawning, deleting, entity tags, bounds, named poses and world listing are not
offered: an instance's scene comes whole from LoadWorld, and GetSimulatorFeatures
says so. The checkpoints (`/lab_sim/save_checkpoint`, `/lab_sim/restore_checkpoint`)
have no equivalent in the standard and stay lab_sim's own, with `/lab_sim/advance`
(a step that waits for the control boundary's commands) and `/lab_sim/reset`."""
from __future__ import annotations

import pathlib
import re
import urllib.parse

from builtin_interfaces.msg import Time
from rclpy.action import ActionServer, CancelResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from simulation_interfaces.action import SimulateSteps
from simulation_interfaces.msg import EntityCategory, EntityState, Result, SimulationState, SimulatorFeatures
from simulation_interfaces.srv import (
    GetEntities,
    GetEntitiesStates,
    GetEntityState,
    GetSimulationState,
    GetSimulatorFeatures,
    LoadWorld,
    ResetSimulation,
    SetEntityState,
    SetSimulationState,
    StepSimulation,
)

from labference.srv import Advance, ResetEpisode
from labference_ros.msgconv import s_to_stamp

# Standard interface -> service name (Isaac Sim's names; relative to the namespace).
SERVICE_NAMES = {
    "GetSimulatorFeatures": "get_simulator_features",
    "GetSimulationState": "get_simulation_state",
    "SetSimulationState": "set_simulation_state",
    "ResetSimulation": "reset_simulation",
    "StepSimulation": "step_simulation",
    "LoadWorld": "load_world",
    "GetEntities": "get_entities",
    "GetEntityState": "get_entity_state",
    "GetEntitiesStates": "get_entities_states",
    "SetEntityState": "set_entity_state",
}
ACTION_NAME = "simulate_steps"
# What lab_sim offers (SimulatorFeatures constants).
FEATURES = (
    SimulatorFeatures.ENTITY_CATEGORIES,
    SimulatorFeatures.ENTITY_STATE_GETTING,
    SimulatorFeatures.ENTITY_STATE_SETTING,
    SimulatorFeatures.SIMULATION_RESET,
    SimulatorFeatures.SIMULATION_RESET_TIME,
    SimulatorFeatures.SIMULATION_RESET_STATE,
    SimulatorFeatures.SIMULATION_STATE_GETTING,
    SimulatorFeatures.SIMULATION_STATE_SETTING,
    SimulatorFeatures.SIMULATION_STATE_PAUSE,
    SimulatorFeatures.STEP_SIMULATION_SINGLE,
    SimulatorFeatures.STEP_SIMULATION_MULTIPLE,
    SimulatorFeatures.STEP_SIMULATION_ACTION,
    SimulatorFeatures.WORLD_LOADING,
    SimulatorFeatures.WORLD_RESOURCE_STRING,
)
WORLD_FORMAT = "labference-instance-json"
CUSTOM_INFO = (f"lab_sim (MuJoCo). LoadWorld takes a task family's instance ({WORLD_FORMAT}) as "
               "resource_string or a file:// uri; entities come with the world (no spawning). "
               "Checkpoints: /lab_sim/save_checkpoint, /lab_sim/restore_checkpoint.")
CATEGORIES = {
    "robot": EntityCategory.CATEGORY_ROBOT,
    "fixture": EntityCategory.CATEGORY_STATIC_OBJECT,
    "object": EntityCategory.CATEGORY_DYNAMIC_OBJECT,
}
# SimulateSteps: feedback after every this many steps.
FEEDBACK_EVERY_STEPS = 50


def _result(code=Result.RESULT_OK, message: str = "") -> Result:
    return Result(result=code, error_message=message)


def select_entities(entities, name_filter: str, categories: set[int]):
    """The entities whose name the regular expression matches (searched, as std::regex_search)
    and whose category is among ``categories`` (all when empty); ValueError for a bad pattern."""
    try:
        pattern = re.compile(name_filter) if name_filter else None
    except re.error as exc:
        raise ValueError(f"bad name filter {name_filter!r}: {exc}") from None
    return [e for e in entities
            if (pattern is None or pattern.search(e.name))
            and (not categories or CATEGORIES[e.category] in categories)]


def entity_state_msg(entity, t: float) -> EntityState:
    msg = EntityState()
    msg.header.frame_id = "world"
    msg.header.stamp = s_to_stamp(t, Time())
    p = msg.pose.position
    p.x, p.y, p.z = entity.position
    q = msg.pose.orientation
    q.w, q.x, q.y, q.z = entity.orientation
    v = msg.twist.linear
    v.x, v.y, v.z = entity.linear_velocity
    w = msg.twist.angular
    w.x, w.y, w.z = entity.angular_velocity
    return msg


def world_text(resource) -> str:
    """The instance JSON a LoadWorld resource names (resource_string, else a file:// or plain path uri)."""
    if resource.resource_string:
        return resource.resource_string
    if not resource.uri:
        raise LookupError("both uri and resource_string are empty")
    parsed = urllib.parse.urlparse(resource.uri)
    if parsed.scheme not in ("", "file"):
        raise ValueError(f"unsupported uri scheme {parsed.scheme!r} (file:// or a path)")
    return pathlib.Path(urllib.parse.unquote(parsed.path)).read_text()


class SimulationInterfaces:
    """The standard services on a LabSim node (its backend, reset and advance)."""

    def __init__(self, sim, namespace: str = ""):
        self.sim = sim
        prefix = namespace.rstrip("/") + "/" if namespace else "/"
        callbacks = {
            "GetSimulatorFeatures": (GetSimulatorFeatures, self.on_features),
            "GetSimulationState": (GetSimulationState, self.on_get_state),
            "SetSimulationState": (SetSimulationState, self.on_set_state),
            "ResetSimulation": (ResetSimulation, self.on_reset),
            "LoadWorld": (LoadWorld, self.on_load_world),
            "GetEntities": (GetEntities, self.on_get_entities),
            "GetEntityState": (GetEntityState, self.on_get_entity_state),
            "GetEntitiesStates": (GetEntitiesStates, self.on_get_entities_states),
            "SetEntityState": (SetEntityState, self.on_set_entity_state),
        }
        for interface, (srv_type, callback) in callbacks.items():
            sim.create_service(srv_type, prefix + SERVICE_NAMES[interface], callback)
        # Steps wait like an advance: their own group, so commands and readings still arrive.
        stepping = MutuallyExclusiveCallbackGroup()
        sim.create_service(StepSimulation, prefix + SERVICE_NAMES["StepSimulation"], self.on_step,
                           callback_group=stepping)
        self.action = ActionServer(sim, SimulateSteps, prefix + ACTION_NAME, execute_callback=self.on_simulate_steps,
                                   cancel_callback=lambda _goal: CancelResponse.ACCEPT, callback_group=stepping)

    # simulator and its state ------------------------------------------------------
    def on_features(self, _request, response):
        response.features.features = list(FEATURES)
        response.features.spawn_formats = []
        response.features.custom_info = CUSTOM_INFO
        return response

    def state(self) -> int:
        if not self.sim.loaded:
            return SimulationState.STATE_NO_WORLD
        return SimulationState.STATE_PAUSED if self.sim.step_mode == "sync" else SimulationState.STATE_PLAYING

    def on_get_state(self, _request, response):
        response.state.state = self.state()
        response.result = _result()
        return response

    def on_set_state(self, request, response):
        target, now = request.state.state, self.state()
        if now == SimulationState.STATE_NO_WORLD:
            response.result = _result(Result.RESULT_INCORRECT_STATE, "no world loaded (LoadWorld first)")
        elif target == now:
            response.result = _result(SetSimulationState.Response.ALREADY_IN_TARGET_STATE,
                                      f"already in state {now}")
        elif target == SimulationState.STATE_STOPPED:
            response.result = self._reload()
        elif target in (SimulationState.STATE_PAUSED, SimulationState.STATE_PLAYING):
            response.result = _result(
                SetSimulationState.Response.STATE_TRANSITION_ERROR,
                f"lab_sim runs step_mode {self.sim.step_mode!r}, fixed at start (sync: paused between "
                "steps; realtime: playing)")
        else:
            response.result = _result(Result.RESULT_FEATURE_UNSUPPORTED, f"state {target} is not offered")
        return response

    def on_reset(self, request, response):
        response.result = self._reload()
        return response

    def _reload(self) -> Result:
        """The loaded instance (through LoadWorld or /lab_sim/reset) from its start state."""
        if not self.sim.loaded:
            return _result(Result.RESULT_INCORRECT_STATE, "no world loaded (LoadWorld first)")
        ok, message = self.load(self.sim.backend.instance.to_json())
        return _result() if ok else _result(Result.RESULT_OPERATION_FAILED, message)

    def load(self, instance_json: str) -> tuple[bool, str]:
        answer = self.sim.on_reset(ResetEpisode.Request(instance_json=instance_json), ResetEpisode.Response())
        return answer.success, answer.message

    def on_load_world(self, request, response):
        try:
            text = world_text(request.world_resource)
        except LookupError as exc:
            response.result = _result(LoadWorld.Response.NO_RESOURCE, str(exc))
            return response
        except (OSError, ValueError) as exc:
            response.result = _result(LoadWorld.Response.UNSUPPORTED_FORMAT, str(exc))
            return response
        ok, message = self.load(text)
        if not ok:
            response.result = _result(LoadWorld.Response.RESOURCE_PARSE_ERROR, message)
            return response
        response.result = _result()
        response.world.name = self.sim.backend.instance.instance_id
        response.world.world_resource = request.world_resource
        response.world.description = f"{self.sim.family.name} instance"
        response.world.tags = [self.sim.family.name]
        return response

    # stepping -----------------------------------------------------------------
    async def step(self, steps: int) -> Result:
        """Sync mode's advance by ``steps`` physics steps, awaiting no commands."""
        if self.state() != SimulationState.STATE_PAUSED:
            why = "no world loaded" if not self.sim.loaded else "simulation is playing (realtime mode)"
            return _result(Result.RESULT_INCORRECT_STATE, why)
        request = Advance.Request(duration_s=steps * self.sim.backend.timestep)
        request.command_stamp = s_to_stamp(self.sim.backend.sim_time, Time())
        answer = await self.sim.on_advance(request, Advance.Response())
        return _result() if answer.success else _result(Result.RESULT_OPERATION_FAILED, answer.message)

    async def on_step(self, request, response):
        response.result = await self.step(int(request.steps))
        return response

    async def on_simulate_steps(self, goal_handle):
        total = int(goal_handle.request.steps)
        done = 0
        result = SimulateSteps.Result(result=_result())
        while done < total:
            if goal_handle.is_cancel_requested:
                goal_handle.canceled()
                result.result = _result(Result.RESULT_OPERATION_FAILED, f"canceled after {done} steps")
                return result
            chunk = min(FEEDBACK_EVERY_STEPS, total - done)
            result.result = await self.step(chunk)
            if result.result.result != Result.RESULT_OK:
                goal_handle.abort()
                return result
            done += chunk
            goal_handle.publish_feedback(SimulateSteps.Feedback(completed_steps=done, remaining_steps=total - done))
        goal_handle.succeed()
        return result

    # entities -----------------------------------------------------------------
    def _entities(self):
        return self.sim.backend.entity_states() if self.sim.loaded else []

    def _selected(self, filters):
        if filters.tags.tags or filters.bounds.points:
            raise NotImplementedError("entity tags and bounds filters are not offered")
        return select_entities(self._entities(), filters.filter, {c.category for c in filters.categories})

    def on_get_entities(self, request, response):
        try:
            response.entities = [e.name for e in self._selected(request.filters)]
            response.result = _result()
        except NotImplementedError as exc:
            response.result = _result(Result.RESULT_FEATURE_UNSUPPORTED, str(exc))
        except ValueError as exc:
            response.result = _result(Result.RESULT_OPERATION_FAILED, str(exc))
        return response

    def on_get_entities_states(self, request, response):
        try:
            selected = self._selected(request.filters)
        except NotImplementedError as exc:
            response.result = _result(Result.RESULT_FEATURE_UNSUPPORTED, str(exc))
            return response
        except ValueError as exc:
            response.result = _result(Result.RESULT_OPERATION_FAILED, str(exc))
            return response
        t = self.sim.backend.sim_time if self.sim.loaded else 0.0  # no world: no entities either
        response.entities = [e.name for e in selected]
        response.states = [entity_state_msg(e, t) for e in selected]
        response.result = _result()
        return response

    def _entity(self, name: str):
        return next((e for e in self._entities() if e.name == name), None)

    def on_get_entity_state(self, request, response):
        entity = self._entity(request.entity)
        if entity is None:
            response.result = _result(Result.RESULT_NOT_FOUND, f"no entity {request.entity!r}")
            return response
        response.state = entity_state_msg(entity, self.sim.backend.sim_time)
        response.result = _result()
        return response

    def on_set_entity_state(self, request, response):
        entity = self._entity(request.entity)
        if entity is None:
            response.result = _result(Result.RESULT_NOT_FOUND, f"no entity {request.entity!r}")
        elif not entity.movable:
            response.result = _result(Result.RESULT_OPERATION_FAILED, f"{request.entity!r} is not a free object")
        elif request.set_acceleration:
            response.result = _result(Result.RESULT_FEATURE_UNSUPPORTED, "setting an acceleration is not offered")
        elif self.sim.advancing:
            response.result = _result(Result.RESULT_INCORRECT_STATE, "a step is running")
        elif request.state.header.frame_id not in ("", "world"):
            response.result = _result(Result.RESULT_OPERATION_FAILED,
                                      f"frame {request.state.header.frame_id!r}: only world poses are taken")
        else:
            response.result = self._set(request)
        return response

    def _set(self, request) -> Result:
        state = request.state
        self.sim.resets.moved()  # the scene is no longer the reset's
        if request.set_pose:
            p, q = state.pose.position, state.pose.orientation
            quat = (q.w, q.x, q.y, q.z)
            if sum(c * c for c in quat) < 1e-12:
                return _result(SetEntityState.Response.INVALID_POSE, "zero quaternion")
            self.sim.backend.set_object_pose(request.entity, (p.x, p.y, p.z), quat)
        if request.set_twist:
            v, w = state.twist.linear, state.twist.angular
            self.sim.backend.set_object_velocity(request.entity, (v.x, v.y, v.z), (w.x, w.y, w.z))
        return _result()
