"""The step loop's own promises, in process."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest

import sparkway as pw
from sparkway.api import graph
from sparkway.engine.runner import Runner, RunOptions

pytestmark = pytest.mark.usefixtures("spark")


class Words(pw.Schema):
    word: str


def _word_count_run(work: Path, partitions: int) -> list[dict]:
    graph.clear()
    words = pw.io.csv.read(work / "in", schema=Words, mode="static", name="words")
    counts = words.groupby(words.word).reduce(words.word, n=pw.reducers.count())
    pw.io.jsonlines.write(counts, work / "out.jsonl")
    config = pw.persistence.Config(pw.persistence.Backend.filesystem(work / "state"))
    Runner(graph.outputs(), RunOptions(persistence=config, partitions=partitions)).run()
    return [json.loads(line) for line in (work / "out.jsonl").read_text().splitlines()]


def test_the_first_run_fixes_the_number_of_state_partitions(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("word\n" + "\n".join(f"w{i}" for i in range(20)) + "\n")
    first = _word_count_run(tmp_path, partitions=3)
    assert sorted((r["word"], r["n"], r["diff"]) for r in first) == [(f"w{i}", 1, 1) for i in sorted(range(20), key=str)]
    (tmp_path / "in" / "b.csv").write_text("word\n" + "\n".join(f"w{i}" for i in range(20)) + "\n")
    # more parallelism now: keys must still find their state where the first run put it
    second = _word_count_run(tmp_path, partitions=5)
    expected = [(f"w{i}", 1, -1) for i in range(20)] + [(f"w{i}", 2, 1) for i in range(20)]
    assert sorted((r["word"], r["n"], r["diff"]) for r in second) == sorted(expected)


def test_a_step_that_fails_is_retried_from_the_committed_state_on_restart(tmp_path: Path) -> None:
    marker = tmp_path / "failed-once"

    def flaky(word: str) -> str:
        # fails the first time it runs, after the groupby's state was updated in this step
        if not marker.exists():
            marker.write_text("")
            raise RuntimeError("transient failure")
        return word.upper()

    def run() -> list[dict]:
        graph.clear()
        words = pw.io.csv.read(tmp_path / "in", schema=Words, mode="static", name="words")
        counts = words.groupby(words.word).reduce(words.word, n=pw.reducers.count())
        pw.io.jsonlines.write(counts.select(word=pw.apply(flaky, counts.word), n=counts.n), tmp_path / "out.jsonl")
        config = pw.persistence.Config(pw.persistence.Backend.filesystem(tmp_path / "state"))
        pw.run(persistence_config=config)
        return [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("word\nx\ny\nx\n")
    marker.write_text("")
    assert sorted((r["word"], r["n"]) for r in run()) == [("X", 2), ("Y", 1)]
    marker.unlink()
    (tmp_path / "in" / "b.csv").write_text("word\nx\n")
    with pytest.raises(Exception, match="transient failure"):
        run()
    changes = run()  # replays the failed step: the count of x moves from 2 to 3, once
    assert sorted((r["word"], r["n"], r["diff"]) for r in changes) == [("X", 2, -1), ("X", 3, 1)]


def test_monitoring_configuration_that_sparkway_does_not_use_is_warned_about():
    with pytest.warns(UserWarning, match="OTLP"):
        pw.set_monitoring_config(server_endpoint="https://example.com:4317")
    pw.set_monitoring_config()  # clearing it is quiet


def test_tables_that_no_run_computed_are_warned_about():
    from sparkway.api.graph import warn_if_some_operators_unused

    t = pw.debug.table_from_markdown("a\n1")
    with pytest.warns(UserWarning, match="operators in the computation graph that haven't been used"):
        warn_if_some_operators_unused()
    pw.debug.compute_and_print(t)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_some_operators_unused()


def test_run_takes_pathways_parameters_and_refuses_misspelled_ones():
    import inspect

    assert inspect.signature(pw.run) == inspect.signature(pw.run_all)
    assert {"persistence_config", "monitoring_level", "terminate_on_error", "udf_cache_directory"} <= set(
        inspect.signature(pw.run).parameters
    )
    with pytest.raises(TypeError, match="persistance_config"):
        pw.run(persistance_config=None)
    with pytest.raises(TypeError, match="persistance_config"):
        pw.run_all(persistance_config=None)


def test_a_large_step_s_output_is_collected_in_pieces_that_follow_its_input() -> None:
    import numpy as np
    import pyarrow as pa

    from sparkway.connectors.base import ExecutorRead
    from sparkway.engine.runner import collect_parts

    def files(size: int) -> ExecutorRead:
        return ExecutorRead([], lambda piece: (pa.table({}), {}), pa.schema([]), lambda skipped: None, size)

    assert collect_parts({"logs": files(10 << 20)}, 2) == 2  # a piece per state partition at least
    assert collect_parts({"logs": files(85 << 20)}, 2) == 6  # 5M keys of the latency benchmark's history
    assert collect_parts({"logs": files(210 << 20)}, 2) == 14  # 10M rows of the benchmark's history
    assert collect_parts({"logs": files(2 << 30), "more": files(1 << 30)}, 2) == 16  # at most 8 per partition
    assert collect_parts({"logs": files(200 << 20), "rows": pa.table({"x": np.zeros(10_000_000, np.int64)})}, 4) == 18


def test_a_large_step_s_output_goes_to_file_sinks_a_piece_at_a_time_and_to_others_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each id's changes in one piece, formatted by Spark's tasks, where they
    consolidate (an updated count: its retraction and insertion); the pieces together
    are the step's changes; a callback sink sees the step in one batch, one end of time."""
    from sparkway.connectors.writers import JsonLinesSink

    monkeypatch.setattr("sparkway.engine.runner.LARGE_STEP_ROWS", 0)
    monkeypatch.setattr("sparkway.engine.runner.collect_parts", lambda tables, partitions: 4)
    written: list[list[tuple]] = []
    take_piece = JsonLinesSink.take_piece

    def recording(self: JsonLinesSink, time: int, piece) -> None:
        lines = [json.loads(line) for line in piece.data.decode().splitlines()]
        assert len(lines) == piece.rows and {line["time"] for line in lines} == {time}
        written.append([(line["word"], line["n"], line["diff"]) for line in lines])
        take_piece(self, time, piece)

    monkeypatch.setattr(JsonLinesSink, "take_piece", recording)

    def run() -> tuple[list[tuple], list[int]]:
        graph.clear()
        table = pw.io.csv.read(tmp_path / "in", schema=Words, mode="static", name="words")
        counts = table.groupby(table.word).reduce(table.word, n=pw.reducers.count())
        pw.io.jsonlines.write(counts, tmp_path / "out.jsonl")
        seen, ends = [], []
        pw.io.subscribe(counts, on_time_end=ends.append,
                        on_change=lambda key, row, time, is_addition: seen.append((row["word"], row["n"], is_addition)))
        config = pw.persistence.Config(pw.persistence.Backend.filesystem(tmp_path / "state"))
        Runner(graph.outputs(), RunOptions(persistence=config, partitions=2)).run()
        return seen, ends

    words = [f"w{i}" for i in range(40)]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("word\n" + "\n".join(words) + "\n")
    run()
    assert len(written) > 1 and sorted(sum(written, [])) == sorted((w, 1, 1) for w in words)

    written.clear()
    (tmp_path / "in" / "b.csv").write_text("word\n" + "\n".join(words[:30]) + "\n")
    seen, ends = run()
    assert len(written) > 1
    for piece in written:  # an updated word: both its changes in one piece
        assert sorted(w for w, _, d in piece if d < 0) == sorted(w for w, _, d in piece if d > 0)
    expected = [(w, 1, -1) for w in words[:30]] + [(w, 2, 1) for w in words[:30]]
    assert sorted(sum(written, [])) == sorted(expected)
    assert sorted(seen) == sorted((w, n, d > 0) for w, n, d in expected) and len(ends) == 1


def test_working_copies_of_state_that_can_no_longer_be_used_are_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Of a persistence folder deleted, or of an earlier incarnation of a storage's plan;
    an older sparkway's folder (no origin) and another live storage's are kept."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("SPARKWAY_STATE_CACHE", str(cache))
    (cache / "older-sparkway").mkdir(parents=True)
    first, second = tmp_path / "first", tmp_path / "second"
    for work in (first, second):
        (work / "in").mkdir(parents=True)
        (work / "in" / "a.csv").write_text("word\nx\n")
        _word_count_run(work, partitions=2)

    def origins() -> list[str]:
        return sorted(json.loads((d / "origin.json").read_text())["storage"] for d in cache.iterdir() if (d / "origin.json").exists())

    assert origins() == sorted([str(first / "state"), str(second / "state")])
    shutil.rmtree(first)  # rm -rf of a program's folder, its persistence with it
    _word_count_run(second, partitions=2)
    assert origins() == [str(second / "state")] and (cache / "older-sparkway").is_dir()
    def incarnations() -> set[str]:
        return {json.loads((d / "origin.json").read_text())["incarnation"] for d in cache.iterdir() if (d / "origin.json").exists()}

    before = incarnations()
    graph.clear()
    words = pw.io.csv.read(second / "in", schema=Words, mode="static", name="words")
    pw.io.jsonlines.write(words.groupby(words.word).reduce(words.word, n=pw.reducers.count(), m=pw.reducers.min(words.word)),
                          second / "out.jsonl")
    config = pw.persistence.Config(pw.persistence.Backend.filesystem(second / "state"), on_plan_change="rebuild")
    Runner(graph.outputs(), RunOptions(persistence=config, partitions=2)).run()  # a changed program: a new incarnation
    after = incarnations()
    assert len(after) == 1 and after != before


@pytest.mark.parametrize("interval", [-5, 1.5, "60000", True])
def test_a_snapshot_interval_that_is_no_count_of_milliseconds_is_refused(tmp_path: Path, interval) -> None:
    backend = pw.persistence.Backend.filesystem(tmp_path / "state")
    with pytest.raises(ValueError, match=f"snapshot_interval_ms must be a whole number of milliseconds.*{interval!r}"):
        pw.persistence.Config(backend, snapshot_interval_ms=interval)
    assert pw.persistence.Config(backend, snapshot_interval_ms=0).snapshot_interval_ms == 0


def test_a_rebuild_that_crashed_half_way_is_done_again_by_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sparkway.persistence.metadata import MetadataLog

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("word\nx\ny\nx\n")
    _word_count_run(tmp_path, partitions=2)

    def changed_program() -> list[dict]:
        graph.clear()
        words = pw.io.csv.read(tmp_path / "in", schema=Words, mode="static", name="words")
        counts = words.groupby(words.word).reduce(words.word, n=pw.reducers.count(), top=pw.reducers.max(words.word))
        pw.io.jsonlines.write(counts, tmp_path / "out.jsonl")
        backend = pw.persistence.Backend.filesystem(tmp_path / "state")
        Runner(graph.outputs(), RunOptions(persistence=pw.persistence.Config(backend, on_plan_change="rebuild"))).run()
        return [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]

    def crash(self: MetadataLog) -> None:
        raise KeyboardInterrupt("killed while clearing the old state")

    with monkeypatch.context() as patched:
        patched.setattr(MetadataLog, "clear", crash)
        with pytest.raises(KeyboardInterrupt):
            changed_program()
    # the old program, run next, finishes the rebuild (its state is half gone): every count from scratch
    rows = _word_count_run(tmp_path, partitions=2)
    assert sorted((r["word"], r["n"], r["diff"]) for r in rows) == [("x", 2, 1), ("y", 1, 1)]
    with monkeypatch.context() as patched:
        patched.setattr(MetadataLog, "clear", crash)
        with pytest.raises(KeyboardInterrupt):
            changed_program()
    rows = changed_program()  # the rebuild again: every count from scratch
    assert sorted((r["word"], r["n"], r["top"], r["diff"]) for r in rows) == [("x", 2, "x", 1), ("y", 1, "y", 1)]
    assert not (tmp_path / "state" / "REBUILDING").exists()


@pytest.mark.parametrize("damage", ["plan.json", "the last commit", "a source's position", "a source's stored rows",
                                    "a state run"])
def test_a_damaged_file_of_the_storage_stops_the_run_naming_it(tmp_path: Path, damage: str, monkeypatch) -> None:
    monkeypatch.setenv("SPARKWAY_STATE_CACHE", str(tmp_path / "cache"))
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("word\nx\ny\nx\n")
    _word_count_run(tmp_path, partitions=2)
    state = tmp_path / "state"
    candidates = {
        "plan.json": [state / "plan.json"],
        "the last commit": sorted((state / "commits").iterdir())[-1:],
        "a source's position": sorted((state / "positions").rglob("*.json")),
        "a source's stored rows": sorted((state / "sources").rglob("*.arrow")),
        "a state run": sorted(p for p in (state / "operators").rglob("*") if p.parent.name == "runs"),
    }[damage]
    assert candidates, f"no file for {damage} in {sorted(str(p) for p in state.rglob('*'))}"
    target = candidates[0]
    target.write_bytes(b"\x00garbage" + target.read_bytes()[: 10])
    shutil.rmtree(tmp_path / "cache")  # state is read from the storage, not a working copy
    (tmp_path / "in" / "a.csv").write_text("word\nx\ny\n")  # a changed file: its old rows are read back
    with pytest.raises(pw.errors.PersistenceError, match=f"cannot read {target}.*damaged"):
        _word_count_run(tmp_path, partitions=2)


def test_each_stateful_operator_gives_spark_one_python_function_for_all_its_steps(spark) -> None:
    """Steps reuse the Python function of an operator (its step and time come from the
    job, ``engine.spark.computing_step``): a program of two stateful operators run over
    four times makes two, not eight, and counts right."""
    from sparkway.engine.spark import _ARROW_FUNCTIONS

    graph.clear()
    words = pw.debug.table_from_markdown("""
        word | n | __time__
        ant  | 1 | 2
        bee  | 2 | 4
        ant  | 3 | 6
        bee  | 4 | 8
    """)
    sums = words.groupby(words.word).reduce(words.word, total=pw.reducers.sum(words.n))
    best = words.deduplicate(value=words.n, instance=words.word, acceptor=lambda new, old: new > old)
    before = set(_ARROW_FUNCTIONS.get(spark.sparkContext, {}))
    totals = {row[0]: row[1] for row in pw.debug.table_to_pandas(sums).itertuples(index=False)}
    highest = {row[0]: row[1] for row in pw.debug.table_to_pandas(best).itertuples(index=False)}
    made = {key for key in set(_ARROW_FUNCTIONS[spark.sparkContext]) - before if b"_run_partitions" in key}
    assert (totals, highest) == ({"ant": 4, "bee": 6}, {"ant": 3, "bee": 4})
    assert len(made) == 2, f"{len(made)} Python functions for two operators over four steps"


def test_a_stream_or_a_large_batch_gets_the_optimizing_jit_and_a_small_batch_the_fast_tier(tmp_path: Path) -> None:
    from sparkway.connectors.files import FileSource
    from sparkway.engine.runner import OPTIMIZING_JIT_BYTES, wants_optimizing_jit

    small, large = tmp_path / "small", tmp_path / "large"
    for folder, size in [(small, 1000), (large, OPTIMIZING_JIT_BYTES)]:
        folder.mkdir()
        with open(folder / "a.txt", "wb") as f:
            f.truncate(size)  # sparse: the size is what the listing reports

    def source(folder: Path, mode: str) -> FileSource:
        return FileSource(str(folder), format="plaintext", columns={}, mode=mode)

    assert not wants_optimizing_jit([source(small, "static")])
    assert wants_optimizing_jit([source(large, "static")])
    assert wants_optimizing_jit([source(small, "static"), source(small, "streaming")])
