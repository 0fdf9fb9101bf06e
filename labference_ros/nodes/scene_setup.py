"""The episode runner's set-up before an episode starts, as generators of Waits that its
Script drives (nodes/stepwise.py): the reset, the scene check asked until the scene
matches the instance (operator, rehearsal), and the operator's "hands clear"
confirmation (episodes/operator.py), each step in the episode's operator.jsonl."""
from __future__ import annotations

import time

from labference.srv import ResetEpisode

from labference_ros.episodes.operator import (CONFIRM_ASKED, CONFIRMED, NOT_CONFIRMED, SCENE_PASSED, SCENE_REFUSED,
                                              OperatorLog)
from labference_ros.episodes.run_progress import say
from labference_ros.nodes.stepwise import ServiceFailure, Until, reply_lost

SETUP_RETRY_S = 1.0  # an operator's set-up (a rehearsal's scene check) is checked again this often


def set_up_scene(runner, eid: str, instance_json: str, log: OperatorLog):
    """The answer the episode starts from (the reset's, or the last scene check's), or why it
    cannot start. Once the scene matches, the episode waits for its confirmation
    (runner.desk.gate: at once with confirm=auto); on a real cell the scene is then checked once
    more, as the operator was in the cell: a scene changed meanwhile is set up and
    confirmed again."""
    request = ResetEpisode.Request(episode_id=eid, instance_json=instance_json)
    answer = yield from reset_scene(runner, eid, request, log)
    while True:
        if runner.setup == "sim" or isinstance(answer, ServiceFailure) or not answer.success:
            return answer
        runner.desk.gate.ask(eid)
        if runner.desk.gate.is_confirmed(eid):  # confirm=auto
            log.note(CONFIRMED, runner.sim_now, by="auto")
            return answer
        say(f"{eid}: the scene matches the instance; once hands are clear, confirm: labference operator confirm")
        log.note(CONFIRM_ASKED, runner.sim_now)
        # The confirmation itself is noted, with its time, where it arrives (the runner's service).
        confirmed = yield Until(lambda: True if runner.desk.gate.is_confirmed(eid) else None, runner.setup_timeout_s)
        if confirmed is None:
            runner.desk.gate.withdraw()
            message = f"not confirmed within {runner.setup_timeout_s:g} s after the scene matched"
            log.note(NOT_CONFIRMED, runner.sim_now, message=message)
            return ResetEpisode.Response(success=False, message=message)
        if runner.setup != "operator":  # a rehearsal's scene is lab_sim's: no hand was in it
            return answer
        recheck = yield runner.call(runner.reset, request)
        if not isinstance(recheck, ServiceFailure) and recheck.success:
            return recheck
        if not isinstance(recheck, ServiceFailure):
            say(f"{eid}: the scene changed after the confirmation; set it up and confirm again")
        answer = yield from reset_scene(runner, eid, request, log, first=recheck)


def reset_scene(runner, eid: str, request, log: OperatorLog, first=None):
    """The reset's answer. An operator's set-up (or, in a rehearsal, the sensors' view of
    lab_sim's reset) is checked again every SETUP_RETRY_S until the scene matches or
    setup_timeout_s passes; each new refusal is said once and noted in `log`.
    `first`: a scene check's answer already in hand (operator set-up)."""
    # lab_sim answers a repeated reset without doing it again (nodes/repeated_reset.py); the
    # scene check only reads the sensors.
    answer = first if first is not None else (yield runner.call(runner.reset, request, idempotent=True))
    if runner.setup == "sim":
        return answer
    check = runner.reset if runner.setup == "operator" else runner.scene_check
    reset = None
    if runner.setup == "rehearsal":
        if isinstance(answer, ServiceFailure) or not answer.success:
            return answer
        reset, answer = answer, (yield runner.call(check, request))
    said = ""
    checks = 1
    deadline = time.monotonic() + runner.setup_timeout_s
    while time.monotonic() < deadline:
        if reply_lost(answer):
            # The scene check (the world estimator's /world_estimator/reset, in both
            # set-ups) only reads the sensors: asking again is safe. Its reply can be
            # dropped by Fast DDS (docs/pitfalls.md, a reply sent before its writer
            # matched the client), which must not end the episode.
            runner.get_logger().warning(f"{eid}: {answer}; asking the scene check again")
            answer = yield runner.call(check, request)
            checks += 1
            continue
        if isinstance(answer, ServiceFailure) or answer.success:
            break
        if answer.message != said:
            if runner.setup == "operator":
                say(f"{eid}: set the scene up as the instance says ({answer.message})")
            log.note(SCENE_REFUSED, runner.sim_now, check=checks, message=answer.message)
            said = answer.message
        yield Until(lambda: None, SETUP_RETRY_S)
        answer = yield runner.call(check, request)
        checks += 1
    if not isinstance(answer, ServiceFailure):
        if answer.success:
            log.note(SCENE_PASSED, runner.sim_now, checks=checks)
        else:
            answer.message = f"not set up within {runner.setup_timeout_s:g} s: {answer.message}"
    if reset is not None and not isinstance(answer, ServiceFailure) and answer.success:
        return reset  # lab_sim's answer: the scene's hash and its sim time
    return answer
