"""Time to result of small programs (issue 36): the wall time of the whole process, for the
programs of ``bench/small_programs`` (joins, reducers, windows, temporal joins, UDFs and
strings, JSON and date-times, sort/ix/flatten, iterate and updates; a few hundred rows
at most), under Pathway 0.33 and sparkway, in one invocation.

    .venv/bin/python bench/time_to_result.py [--runs 3] [--programs orders_joins,...]
        [--pathway-python PY] [--quiet-wait 30]

Each program file says ``import pathway as pw``: Pathway runs it from a virtual
environment of its own (``--pathway-python``, by default the one ``bench/latency.py``
makes), sparkway with ``bench/as_pathway`` on its path, in three ways:

- ``own Spark``: ``SPARKWAY_DAEMON=0``, a Spark of the process's own, as every run was
  before the daemon (and as a first run is, when no daemon runs yet);
- ``daemon``: attached to the warm daemon that an earlier run left behind (the runs
  after the first);
- and, once per round, ``bench/spark_floor.py``'s floor: the least a fresh process with
  its own Spark pays before a step can end (API load, Spark's start, one Python task).

Rounds alternate the systems program by program, so that a slow minute of the machine
hits all of them.  Prints, per program, the median of each and the ratios to Pathway,
then issue 36's targets: every program attached to the daemon at most 1.5x Pathway's
time and the median at most 1.2x; a first run at most 1.5 s above the floor.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import spark_floor  # noqa: E402
from latency import PATHWAY, pathway_python  # noqa: E402
from run import ROOT, child_env, say, timed  # noqa: E402

PROGRAMS = os.path.join(HERE, "small_programs")
SYSTEMS = ("pathway", "own Spark", "daemon")


def programs(names: str | None) -> list[str]:
    found = sorted(f[:-3] for f in os.listdir(PROGRAMS) if f.endswith(".py"))
    chosen = found if not names else names.split(",")
    unknown = set(chosen) - set(found)
    if unknown:
        raise SystemExit(f"--programs: unknown {', '.join(sorted(unknown))}; choose among {', '.join(found)}")
    return chosen


def environments(pathway: str, cache: str) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Per system, the interpreter and the environment its runs get."""
    sparkway = child_env(cache)
    sparkway["PYTHONPATH"] = os.pathsep.join([os.path.join(HERE, "as_pathway"), sparkway["PYTHONPATH"]])
    sparkway.pop("SPARKWAY_DRIVER_MEMORY", None)  # a user's run sets none: the daemon serves it
    for name in ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "BUILDKITE", "JENKINS_URL", "TF_BUILD"):
        sparkway.pop(name, None)
    return {
        "pathway": ([pathway], {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}),
        "own Spark": ([sys.executable], sparkway),
        "daemon": ([sys.executable], {**sparkway, "SPARKWAY_DAEMON": "1"}),
    }


def daemon_ready(env: dict[str, str], program: str, work: str, timeout_s: float = 300) -> None:
    """Runs ``program`` once so that it leaves the daemon behind, then waits until the
    daemon listens."""
    from sparkway.engine import daemon

    timed([sys.executable, program], cwd=work, env=env, timeout=600, log=os.path.join(work, "prime.log"),
          quiet_wait=0)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(d.address() is not None for d in daemon.all_daemons()):
            return
        time.sleep(0.5)
    raise SystemExit(f"the daemon did not come up in {timeout_s:.0f} s (see {daemon.daemons_folder()})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--programs", help="comma-separated names (default: all)")
    parser.add_argument("--pathway-python", help=f"a Python with pathway=={PATHWAY} (default: a venv made on first use)")
    parser.add_argument("--quiet-wait", type=float, default=30.0, help="seconds to wait for an idle machine per run")
    args = parser.parse_args()
    chosen = programs(args.programs)
    from sparkway.engine.cache import cache_root

    pathway = args.pathway_python or pathway_python(os.path.join(cache_root(), "bench", f"pathway-{PATHWAY}"))
    compileall.compile_dir(os.path.join(ROOT, "sparkway"), quiet=1)  # as an installed package has it
    times: dict[tuple[str, str], list[float]] = {}
    floors: list[float] = []
    others: list[float] = []
    from sparkway.engine import daemon

    before = {d.folder for d in daemon.all_daemons()}
    with tempfile.TemporaryDirectory(prefix="time-to-result-") as work:
        systems = environments(pathway, os.path.join(work, "state-cache"))
        daemon_ready(systems["daemon"][1], os.path.join(PROGRAMS, f"{chosen[0]}.py"), work)
        for round_ in range(args.runs):
            floor = spark_floor.run("python", os.path.join(work, "state-cache"))
            floors.append(floor["api"] + floor["spark start"] + floor["first python job"])
            for name in chosen:
                for system in SYSTEMS:
                    interpreter, env = systems[system]
                    run = timed([*interpreter, os.path.join(PROGRAMS, f"{name}.py")], cwd=work, env=env, timeout=600,
                                log=os.path.join(work, f"{name}.{system}.log"), quiet_wait=args.quiet_wait)
                    if run["status"] != "ok":
                        raise SystemExit(f"{name} under {system}: {run['status']}: {run.get('error')}\n"
                                         + open(os.path.join(work, f"{name}.{system}.log")).read()[-3000:])
                    times.setdefault((name, system), []).append(run["seconds"])
                    others.append(run["others_cores"])
            say(f"round {round_ + 1} of {args.runs} done")
        for started in (d for d in daemon.all_daemons() if d.folder not in before):
            daemon.stop(started)  # its state cache is this run's temporary folder
    report(chosen, times, floors, others)


def report(chosen: list[str], times: dict[tuple[str, str], list[float]], floors: list[float], others: list[float]) -> None:
    median = {key: statistics.median(values) for key, values in times.items()}
    say(f"\nTime to result, {len(floors)} run(s) each, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"other processes used {max(others):.2f} cores at most during a run\n")
    say("| program | Pathway | sparkway, own Spark | sparkway, daemon | own / Pathway | daemon / Pathway |")
    say("| :--- | ---: | ---: | ---: | ---: | ---: |")
    ratios = []
    for name in chosen:
        pathway, own, warm = (median[(name, s)] for s in SYSTEMS)
        ratios.append(warm / pathway)
        say(f"| {name} | {pathway:.2f} s | {own:.2f} s | {warm:.2f} s | {own / pathway:.1f}x | {warm / pathway:.2f}x |")
    floor = statistics.median(floors)
    first_over = max(median[(name, "own Spark")] for name in chosen) - floor
    say(f"\nfloor (bench/spark_floor.py: API, Spark's start, one Python task): median {floor:.2f} s\n")
    say("| target (issue 36) | measured | met |\n| :--- | ---: | :---: |")
    for what, value, limit in [
        ("daemon: every program at most 1.5x Pathway", max(ratios), 1.5),
        ("daemon: median at most 1.2x Pathway", statistics.median(ratios), 1.2),
        ("first run (own Spark): at most 1.5 s above the floor, slowest program", first_over, 1.5),
    ]:
        unit = "s" if "floor" in what else "x"
        say(f"| {what} | {value:.2f} {unit} | {'yes' if value <= limit else 'no'} |")


if __name__ == "__main__":
    main()
