"""The episode runner's records and console across a run: the plan, the attempt log,
the progress bar, summary.json and the exit code (rclpy-free).

Exit code (also `labference launch`'s): 0 every episode ran and was scored;
1 the run could not start (bad settings, instance list, output directory);
3 every episode ran but at least one was not scored (an evaluation-validity
error: each prints one console line with its cause); 4 it was stopped before
every instance ran. summary.json is written in cases 0, 3 and 4."""
from __future__ import annotations

import sys

from tqdm import tqdm

from labference_ros.core.failures import console_line
from labference_ros.core.summary import format_rate, format_table
from labference_ros.episodes.attempts import AttemptLog
from labference_ros.episodes.plan import RunSettings, plan_instances, resolve_run_dir, write_plan

EXIT_OK, EXIT_SETUP, EXIT_UNSCORED, EXIT_INTERRUPTED = 0, 1, 3, 4


def say(line: str) -> None:
    """A console line of its own, also while the progress bar is drawn."""
    tqdm.write(line, file=sys.stdout)
    sys.stdout.flush()


class RunProgress:
    def __init__(self, settings: RunSettings):
        self.settings = settings
        self.exit_code = EXIT_OK
        self.log: AttemptLog | None = None
        self.planned = 0
        self.bar = None

    def plan(self):
        """The run directory and its instances, written before the first episode
        (PlanError, or OSError for an unwritable or full output directory)."""
        run_dir = resolve_run_dir(self.settings.output_dir)
        instances = plan_instances(self.settings)
        write_plan(run_dir, self.settings, instances)
        self.log = AttemptLog(run_dir, {"run_dir": str(run_dir), "settings": vars(self.settings),
                                        "planned_episodes": len(instances)})
        self.planned = len(instances)
        return run_dir, instances

    def open_bar(self) -> None:
        self.bar = tqdm(total=self.planned, desc="episodes", unit="ep", file=sys.stderr,
                        mininterval=0, dynamic_ncols=False, ncols=120)

    def record(self, attempt) -> bool:
        """One episode's attempt on record and on the console; False when the run must stop."""
        try:
            self.log.record(attempt)
        except OSError as exc:
            self.stop_on_write_failure(attempt, exc)
            return False
        if attempt.status != "ok":
            say(console_line(attempt.episode_id, attempt.error or "unknown error"))
        try:
            self.progress()
        except OSError as exc:
            self.stop_on_write_failure(None, exc)
            return False
        return True

    def finish(self, run_dir) -> None:
        """Every instance ran: summary.json, the table, and the exit code."""
        self.bar.close()
        try:
            summary = self.log.write_summary(interrupted=False, attempted_episodes=len(self.log.attempts))
        except OSError as exc:
            self.stop_on_write_failure(None, exc)
            return
        print(f"\nsummary: {run_dir / 'summary.json'}\n{format_table(summary)}", flush=True)
        unscored = sum(1 for a in self.log.attempts if a.status != "ok" or a.scores is None)
        if unscored:
            print(f"{unscored} of {len(self.log.attempts)} episodes were not scored "
                  f"(validity errors above; exit status {EXIT_UNSCORED})", flush=True)
        self.exit_code = EXIT_UNSCORED if unscored else EXIT_OK

    def interrupt(self, current, why: str) -> None:
        """A stop (SIGINT/SIGTERM) during the run: the episode in flight becomes an ERROR row."""
        try:
            if current is not None:
                current.fail(f"{why}: episode runner stopped during the episode" if why
                             else "episode runner stopped during the episode")
                current.reason = current.reason or "aborted"
                say(console_line(current.episode_id, current.error))
                self.log.record(current)
        except OSError as exc:
            print(f"cannot write {exc.filename}: {exc.strerror or exc}", flush=True)
        self.write_final_summary()
        if self.bar is not None:
            self.bar.close()
        self.exit_code = EXIT_INTERRUPTED

    def stop_on_write_failure(self, attempt, exc: OSError) -> None:
        """The run's own records cannot be written (a full disk): no more episodes. What
        is on disk stays parseable (whole lines, atomic JSON); the console says why."""
        if attempt is not None:
            attempt.fail(f"cannot write {exc.filename}: {exc.strerror or exc}")
            say(console_line(attempt.episode_id, attempt.error))
        if self.bar is not None:
            self.bar.close()
        print(f"run stopped after {len(self.log.attempts)} of {self.planned} episodes: cannot write "
              f"{exc.filename}: {exc.strerror or exc}", flush=True)
        self.write_final_summary()
        self.exit_code = EXIT_INTERRUPTED

    def write_final_summary(self) -> None:
        """summary.json of an interrupted run; where it cannot be written (a full disk),
        the previous one is removed, so that no stale summary says the run went on."""
        try:
            self.log.write_summary(interrupted=True, attempted_episodes=len(self.log.attempts))
        except OSError as exc:
            stale = self.log.run_dir / "summary.json"
            stale.unlink(missing_ok=True)
            print(f"cannot write {exc.filename}: {exc.strerror or exc}; {stale} removed (it described "
                  f"the run before it stopped)", flush=True)

    def progress(self) -> None:
        s = self.log.write_summary(interrupted=False, attempted_episodes=len(self.log.attempts))["overall"]
        self.bar.set_postfix_str(f"selection {format_rate(s['selection'])}, "
                                 f"completion {format_rate(s['completion'])}, errors {s['errors']}",
                                 refresh=False)
        self.bar.update(1)
