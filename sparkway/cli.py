"""The ``sparkway`` command (also ``python -m sparkway``): run a program, inspect a
persistence storage, look at and clean the machine-local cache.

    sparkway run --master local[4] --driver-memory 8g --conf spark.sql.shuffle.partitions=8 pipeline.py ARGS
    sparkway server --port 15002      # a warm Spark that programs attach to (sc://127.0.0.1:15002)
    sparkway daemon status            # the warm local Spark that short runs share; also: stop
    sparkway inspect ./state
    sparkway cache info
    sparkway cache clean
    sparkway --version
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import runpy
import shutil
import sys
import time
from collections.abc import Sequence
from typing import Any

from sparkway.engine.cache import cache_root, cds_folder, state_cache


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line ``argv`` (default: this process's); returns the exit code.

    >>> main(["cache", "info"]) == 0  # doctest: +ELLIPSIS
    cache: ...
    True
    """
    args = _parser().parse_args(argv)
    if args.version:
        print(_version())
        return 0
    if args.command is None:
        _parser().print_help()
        return 2
    return args.command(args)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sparkway", description="Incremental, persistent data pipelines on Spark.")
    parser.add_argument("--version", action="store_true", help="print the versions of sparkway, pyspark and Python")
    parser.set_defaults(command=None)
    commands = parser.add_subparsers(title="commands")

    run = commands.add_parser("run", help="run a program (its pw.run) on a Spark of your choosing; options "
                              "come before the program, whose own arguments follow it")
    run.add_argument("program", help="the Python file to run")
    run.add_argument("program_args", nargs=argparse.REMAINDER, help="arguments of the program")
    _spark_options(run, "the Spark master, or a server's sc://host:port (SPARKWAY_SPARK_MASTER; default local[2])")
    run.set_defaults(command=_run)

    server = commands.add_parser("server", help="keep a Spark session warm, with a Spark Connect endpoint that "
                                 "programs attach to (SPARKWAY_SPARK_MASTER=sc://HOST:PORT): no JVM start per run")
    server.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1: this machine only)")
    server.add_argument("--port", type=int, default=15002, help="the port to listen on (default 15002)")
    _spark_options(server, "the Spark master of the server's session (SPARKWAY_SPARK_MASTER; default local[2])")
    server.set_defaults(command=_server)

    daemon = commands.add_parser("daemon", help="the warm local Spark that short runs share (SPARKWAY_DAEMON=0: "
                                 "none), started by the first run and stopped after SPARKWAY_DAEMON_IDLE seconds idle")
    daemon_actions = daemon.add_subparsers(title="actions", required=True)
    daemon_actions.add_parser("status", help="this user's daemons").set_defaults(command=_daemon_status)
    daemon_actions.add_parser("stop", help="stop this user's daemons").set_defaults(command=_daemon_stop)
    serve = daemon_actions.add_parser("serve", help="(what a program starts) run a daemon with this folder")
    serve.add_argument("folder")
    serve.set_defaults(command=_daemon_serve)
    daemon_actions.add_parser("warm-up", help="(what a daemon runs) a small program, attached to it").set_defaults(
        command=_daemon_warm_up)

    inspect = commands.add_parser("inspect", help="what a persistence storage holds")
    inspect.add_argument("storage", help="its folder, or s3://bucket/prefix")
    inspect.set_defaults(command=_inspect)

    cache = commands.add_parser("cache", help=f"the machine-local cache ({cache_root()})")
    actions = cache.add_subparsers(title="actions", required=True)
    actions.add_parser("info", help="what the cache holds").set_defaults(command=_cache_info)
    clean = actions.add_parser("clean", help="delete the cache (everything in it is made again when needed)")
    clean.add_argument("--state", action="store_true", help="only the working copies of persisted state")
    clean.add_argument("--cds", action="store_true", help="only the JVM's class-data archives")
    clean.set_defaults(command=_cache_clean)
    return parser


def _version() -> str:
    from importlib.metadata import version

    return f"sparkway {version('sparkway')} (pyspark {version('pyspark')}, Python {sys.version.split()[0]})"


# -- run ----------------------------------------------------------------------------------

def _spark_options(parser: argparse.ArgumentParser, master_help: str) -> None:
    parser.add_argument("--master", help=master_help)
    parser.add_argument("--driver-memory", help="the Spark driver's heap, e.g. 8g (SPARKWAY_DRIVER_MEMORY; default 4g)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting of the session sparkway starts (SPARKWAY_SPARK_CONF); repeatable")


def _use_spark_options(args: argparse.Namespace, command: str) -> bool:
    """Puts the Spark options into the environment sparkway's session reads; False (and
    a message) when one is malformed."""
    conf = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key:
            print(f"sparkway {command}: --conf {item!r} is not KEY=VALUE", file=sys.stderr)
            return False
        conf[key] = value
    if args.master:
        os.environ["SPARKWAY_SPARK_MASTER"] = args.master
    if args.driver_memory:
        os.environ["SPARKWAY_DRIVER_MEMORY"] = args.driver_memory
    if conf:
        os.environ["SPARKWAY_SPARK_CONF"] = json.dumps(conf)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Spark's workers run this Python
    return True


def _run(args: argparse.Namespace) -> int:
    if not _use_spark_options(args, "run"):
        return 2
    sys.argv = [args.program, *args.program_args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(args.program)))
    runpy.run_path(args.program, run_name="__main__")
    return 0


# -- server -------------------------------------------------------------------------------

def _server(args: argparse.Namespace) -> int:
    import threading

    from sparkway.engine.signals import StopSignals
    from sparkway.engine.spark import serve
    from sparkway.errors import SparkError

    if not _use_spark_options(args, "server"):
        return 2
    stop = threading.Event()
    signals = StopSignals(lambda name, nth: stop.set())
    signals.install()  # a Ctrl-C while Spark starts stops the server once it is up
    try:
        spark = serve(args.host, args.port)
    except SparkError as error:  # one line, as a program's Spark errors are
        signals.restore()
        print(f"sparkway server: {error}", file=sys.stderr)
        return 1
    signals.install()  # again: the new SparkContext put its own SIGINT handler
    print(f"sparkway server: programs attach with SPARKWAY_SPARK_MASTER=sc://{args.host}:{args.port} "
          "(Ctrl-C stops it)", flush=True)
    stop.wait()
    signals.restore()
    spark.stop()
    return 0


# -- daemon -------------------------------------------------------------------------------

def _daemon_status(args: argparse.Namespace) -> int:
    from sparkway.engine import daemon

    running = [d for d in daemon.all_daemons() if d.address() is not None]
    if not running:
        print(f"no sparkway daemon runs ({daemon.daemons_folder()})")
    for found in running:
        record = found.record or {}
        clients = found.clients()
        print(f"daemon {found.folder.name}: pid {record['pid']}, port {record['port']}, "
              f"up {_duration(time.time() - record['started_at'])}, {len(clients)} program(s) attached, "
              f"sparkway {record['package']}")
    return 0


def _daemon_stop(args: argparse.Namespace) -> int:
    from sparkway.engine import daemon

    for found in daemon.all_daemons():
        record = found.record
        if daemon.stop(found):
            print(f"stopped the daemon {found.folder.name} (pid {record['pid']})")
    return 0


def _daemon_serve(args: argparse.Namespace) -> int:
    from pathlib import Path

    from sparkway.engine import daemon_server

    daemon_server.serve(Path(args.folder))
    return 0


def _daemon_warm_up(args: argparse.Namespace) -> int:
    """A small program of the usual operators (reducers, a join, a filter, a Python
    function, string methods, a window), which a new daemon runs attached to itself."""
    import sparkway.public as pw

    sales = pw.debug.table_from_markdown("shop | amount | t\n north | 2 | 1\n south | 3 | 4\n north | 5 | 9")
    shops = pw.debug.table_from_markdown("shop | city\n north | Oslo\n south | Rome")
    totals = sales.groupby(sales.shop).reduce(sales.shop, total=pw.reducers.sum(sales.amount), n=pw.reducers.count())
    joined = totals.join(shops, totals.shop == shops.shop).select(shops.city, totals.total)
    shaped = joined.filter(joined.total > 1).select(text=pw.apply(str, joined.city), city=joined.city.str.upper())
    windows = sales.windowby(sales.t, window=pw.temporal.tumbling(duration=5)).reduce(n=pw.reducers.count())
    pw.debug.table_to_dicts(shaped)
    pw.debug.table_to_dicts(windows)
    return 0


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


# -- inspect ------------------------------------------------------------------------------

def _inspect(args: argparse.Namespace) -> int:
    from sparkway.persistence.metadata import MetadataLog
    from sparkway.persistence.storage import BlobStorage

    root = args.storage if "://" in args.storage else os.path.abspath(args.storage)
    storage = BlobStorage(root)
    metadata = MetadataLog(storage)
    plan = metadata.stored_plan()
    if plan is None:
        print(f"sparkway inspect: {root} holds no sparkway program's state (no plan.json)", file=sys.stderr)
        return 1
    print(f"storage: {root}")
    print(f"plan: {len(plan.get('nodes', []))} nodes, {plan.get('partitions')} state partitions, state format "
          f"{plan.get('state_format', 1)}, incarnation {plan.get('incarnation')}")
    if metadata.rebuilding():
        print("a rebuild (on_plan_change='rebuild') was interrupted: the next run finishes it")
    commit = metadata.last_commit()
    if commit is None:
        print("last commit: none (no step has completed)")
    else:
        print(f"last commit: step {commit['step']}, time {commit['time']} ({_as_date(commit['time'])})")
        print("sources:")
        for name, position in sorted(commit.get("positions", {}).items()):
            entries = commit.get("entries", {}).get(name, 0)
            print(f"  {name}: {entries:,} entries read; {_position(position)}")
    print("operators (state in the storage):")
    for name in storage.list("operators"):
        size, files = _size(storage.fs, storage.path(f"operators/{name}"))
        print(f"  {name}: {_size_text(size)} in {files} file(s)")
    return 0


def _as_date(time: int) -> str:
    """A sparkway time (milliseconds of the clock, for input that just arrives) as a date."""
    try:
        return datetime.datetime.fromtimestamp(time / 1000, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return "not a clock time"


def _position(position: dict[str, Any]) -> str:
    files = position.get("files")
    if isinstance(files, dict):
        return f"{len(files)} file(s) read"
    from sparkway.persistence.metadata import brief_position

    return brief_position(position)


def _size(fs: Any, path: str) -> tuple[int, int]:
    """Bytes and files under ``path`` of the filesystem ``fs`` (fsspec's)."""
    sizes = [info.get("size") or 0 for info in fs.find(path, detail=True).values()]
    return sum(sizes), len(sizes)


def _size_text(size: int) -> str:
    """``size`` bytes for a reader: ``512 B``, ``3.5 KB``, ``1,024.0 MB``."""
    if size < 1024:
        return f"{size} B"
    return f"{size / 1024:,.1f} KB" if size < 2**20 else f"{size / 2**20:,.1f} MB"


# -- cache --------------------------------------------------------------------------------

def _cache_parts() -> dict[str, str]:
    return {"state": state_cache(), "cds": cds_folder()}


def _cache_info(args: argparse.Namespace) -> int:
    print(f"cache: {cache_root()}")
    for name, path in _cache_parts().items():
        size, files = _size(_local_files(), path)
        print(f"  {name}: {path}: {_size_text(size)} in {files} file(s)")
    return 0


def _cache_clean(args: argparse.Namespace) -> int:
    chosen = [name for name in ("state", "cds") if getattr(args, name)] or ["state", "cds"]
    for name in chosen:
        path = _cache_parts()[name]
        size, _ = _size(_local_files(), path)
        shutil.rmtree(path, ignore_errors=True)
        print(f"deleted {path} ({_size_text(size)})")
    return 0


def _local_files() -> Any:
    import fsspec

    return fsspec.filesystem("file")
