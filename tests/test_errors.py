"""Errors: one base class; a failure inside a step names the operator and the program line."""

from __future__ import annotations

import inspect
import json
import logging
import os

import pytest

import sparkway as pw
from sparkway import errors
from sparkway.persistence.metadata import PlanChangedError, StorageInUseError

pytestmark = pytest.mark.usefixtures("spark")


def here(offset: int = 1) -> str:
    """``file:line`` of the caller's line plus ``offset``."""
    caller = inspect.currentframe().f_back
    return f"{caller.f_code.co_filename}:{caller.f_lineno + offset}"


def test_every_kind_of_error_is_a_sparkway_error_and_the_builtin_python_expects() -> None:
    kinds = {
        errors.PlanError: ValueError, errors.PlanTypeError: TypeError, errors.SchemaError: ValueError,
        errors.InputDataError: ValueError, errors.PersistenceError: RuntimeError,
        errors.ConnectorError: RuntimeError, errors.ComputationError: RuntimeError, errors.SparkError: RuntimeError,
        StorageInUseError: RuntimeError, PlanChangedError: RuntimeError,
    }
    for kind, builtin in kinds.items():
        assert issubclass(kind, errors.SparkwayError) and issubclass(kind, builtin), kind


def test_plan_errors_are_raised_while_the_program_is_built() -> None:
    t = pw.debug.table_from_markdown("a | b\n1 | x")
    with pytest.raises(errors.PlanError, match="no column 'c'"):
        t.select(pw.this.c)
    with pytest.raises(errors.PlanTypeError, match="has to be bool"):
        t.filter(pw.this.a + 1)


def test_an_exception_in_a_user_function_names_the_function_the_operator_and_the_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def inverse(a: int) -> float:
        return 1 / a

    t = pw.debug.table_from_markdown("a\n1\n0")
    where = here()
    result = t.select(x=pw.apply(inverse, pw.this.a))
    with caplog.at_level(logging.DEBUG, logger="sparkway"), pytest.raises(errors.ComputationError) as info:
        pw.debug.table_to_pandas(result)
    message = str(info.value)
    assert message.startswith(f"select at {where}: ")
    assert "inverse: ZeroDivisionError: division by zero" in message
    assert "\n" not in message and "java" not in message.lower()
    # the whole of Spark's error stays available at DEBUG level
    assert any("ZeroDivisionError" in (r.exc_text or "") for r in caplog.records if r.levelno == logging.DEBUG)


def test_a_key_error_message_is_not_quoted() -> None:
    def look_up(a: int) -> int:
        raise KeyError("no price for this item")

    t = pw.debug.table_from_markdown("a\n1")
    with pytest.raises(KeyError) as info:
        pw.debug.table_to_pandas(t.select(x=pw.apply(look_up, pw.this.a)))
    assert str(info.value).endswith("look_up: KeyError: no price for this item")


def test_a_failing_reducer_names_the_reduce_and_its_line() -> None:
    t = pw.debug.table_from_markdown("k | v\n1 | 1\n1 | 2")
    where = here()
    result = t.groupby(t.k).reduce(t.k, v=pw.reducers.unique(t.v))
    with pytest.raises(errors.ComputationError, match=f"^reduce at {where}: ValueError: .*unique"):
        pw.debug.table_to_pandas(result)


def test_unwrap_of_none_names_the_select_and_its_line() -> None:
    t = pw.debug.table_from_markdown("a\n1\nNone")
    where = here()
    result = t.select(b=pw.unwrap(pw.this.a))
    with pytest.raises(errors.ComputationError, match=f"^select at {where}: ValueError: cannot unwrap a None value") as info:
        pw.debug.table_to_pandas(result)
    assert isinstance(info.value, ValueError)


def test_a_failure_in_a_step_is_also_the_exception_python_raised() -> None:
    def lookup(key: str) -> int:
        return {"a": 1}[key]

    t = pw.debug.table_from_markdown("key | a | b\na | 1 | 0")
    with pytest.raises(KeyError) as info:  # from a user function on an executor
        pw.debug.table_to_pandas(t.select(x=pw.apply(lookup, pw.this.a.to_string())))
    assert isinstance(info.value, errors.ComputationError)
    with pytest.raises(ZeroDivisionError):  # from Spark SQL's own arithmetic
        pw.debug.table_to_pandas(t.select(x=pw.this.a // pw.this.b))
    # a kind that is not Python's own keeps the plain ComputationError
    assert type(errors.ComputationError.of("PySparkTypeError", "x")) is errors.ComputationError


def test_run_all_computes_tables_no_output_reads() -> None:
    t = pw.debug.table_from_markdown("a\n2\n0")
    read = t.select(a=pw.this.a + 1)
    pw.io.null.write(read)
    pw.run()  # computes only what outputs read: no division
    t.select(inverse=1 // pw.this.a)
    with pytest.raises(ZeroDivisionError):
        pw.run_all()


def test_errors_show_the_program_line_that_caused_them() -> None:
    t = pw.debug.table_from_markdown("v\n1\n0")
    where = here(2)
    with pytest.raises(TypeError) as built:
        t.select(r=pw.this.v <= "foo")
    assert built.value.__notes__ == [f"Occurred here:\n    Line: t.select(r=pw.this.v <= \"foo\")\n    File: {where}"]
    where = here()
    t.select(r=1 / pw.this.v)
    with pytest.raises(ZeroDivisionError) as computed:
        pw.run_all()
    assert computed.value.__notes__[0].endswith(f"Line: t.select(r=1 / pw.this.v)\n    File: {where}")
    with pytest.raises(TypeError) as called:
        pw.io.csv.read()  # a call with wrong arguments names the caller's line
    assert "pw.io.csv.read()" in called.value.__notes__[0]


def test_a_user_error_s_traceback_ends_at_the_program_unless_debugging(caplog) -> None:
    import traceback

    t = pw.debug.table_from_markdown("v\n1")

    def frames_in_sparkway() -> list[str]:
        with pytest.raises(errors.UnknownColumnError) as info:
            t.select(r=pw.this.w)
        return [f.name for f in traceback.extract_tb(info.value.__traceback__) if "/sparkway/" in f.filename]

    assert frames_in_sparkway() == ["call"]  # the public API's entry, which re-raises
    with caplog.at_level(logging.DEBUG, logger="sparkway"):
        assert len(frames_in_sparkway()) > 3  # the whole way to the type rules


def test_a_changed_program_is_refused_naming_the_operator_and_its_line(tmp_path) -> None:
    from sparkway.api import graph

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("word,n\na,1\nb,2\n")
    config = pw.persistence.Config(pw.persistence.Backend.filesystem(tmp_path / "state"))

    class Words(pw.Schema):
        word: str
        n: int

    for reducer in (pw.reducers.sum, pw.reducers.max):
        graph.clear()
        t = pw.io.csv.read(tmp_path / "in", schema=Words, mode="static", name="words")
        where = here()
        pw.io.null.write(t.groupby(t.word).reduce(t.word, total=reducer(t.n)))
        if reducer is pw.reducers.sum:
            pw.run(persistence_config=config)
    with pytest.raises(PlanChangedError) as info:
        pw.run(persistence_config=config)
    assert f"the reduce at {where} (operator #1) changed: aggregates: ['sum'] -> ['max']" in str(info.value)


@pytest.mark.parametrize(("build", "kind", "message"), [
    # Pathway 0.33's words (from its own tests), which programs and their tests match on
    (lambda t: t.select("a"), ValueError, "Expected a ColumnReference, found a string. Did you mean this.a instead of 'a'?"),
    (lambda t: t.reduce(1), ValueError, "In reduce() all positional arguments have to be a ColumnReference"),
    (lambda t: t.groupby(pw.this.a, output=pw.this.a), ValueError, "Table.groupby() received extra kwargs."),
    (lambda t: t.groupby(t.a).reduce(t.a, bad=t.b), ValueError, "You cannot use <table1>.b in this reduce statement."),
    (lambda t: t.filter(t.reduce(m=pw.reducers.max(t.a)).m > 0), ValueError,
     "You cannot use <table1>.m in this context. Its universe is different"),
    (lambda t: t.select(pw.this.join), ValueError, "join is a method name. It is discouraged to use it as a column name."),
    (lambda t: pw.this(), TypeError, "You cannot instantiate `this` class."),
    (lambda t: pw.Table.from_columns(), ValueError, "Table.from_columns() cannot have empty arguments list"),
    (lambda t: t.groupby(t.a, t.b, id=t.a), ValueError, "cannot have id argument when grouping by multiple columns"),
])
def test_build_errors_use_pathways_words(build, kind, message) -> None:
    t = pw.debug.table_from_markdown("a | b\n1 | 2")
    with pytest.raises(kind) as raised:
        build(t)
    assert message in str(raised.value)


def test_more_build_errors_use_pathways_words() -> None:
    t = pw.debug.table_from_markdown("a | b\n1 | 2")
    with pytest.raises(ValueError, match="argument name has to be an existing table column name"):
        t.update_types(c=int)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'to_flatten'"):
        t.flatten()
    with pytest.raises(ValueError, match="argument has to be a ColumnReference to the same table or pw.this"):
        t[t.select(pw.this.a).a]
    assert t[pw.this.a].name == "a"


def test_state_of_another_state_format_is_refused_or_rebuilt(tmp_path) -> None:
    from sparkway.persistence.metadata import STATE_FORMAT, MetadataLog
    from sparkway.persistence.storage import BlobStorage

    storage = BlobStorage(str(tmp_path))
    nodes = [{"kind": "Input", "inputs": []}]
    # what a sparkway of the first state format wrote: no format in the record
    storage.write_bytes("plan.json", json.dumps({"nodes": nodes, "incarnation": "x", "partitions": 2}).encode())
    log = MetadataLog(storage)
    with pytest.raises(PlanChangedError, match="another version of sparkway .state format 1; this one reads format"):
        log.check_plan(nodes, rebuild=False, partitions=2)
    assert log.check_plan(nodes, rebuild=True, partitions=2) == (None, True)  # the caller clears, then writes
    record = log.write_plan(nodes, partitions=2)
    assert record["state_format"] == STATE_FORMAT
    assert log.check_plan(nodes, rebuild=False, partitions=2) == (record, False)


def test_a_failure_of_spark_itself_is_reported_with_spark_s_message() -> None:
    from sparkway.engine.failures import computation_error

    text = (
        "An error occurred while calling o411.getResult.\n"
        ": org.apache.spark.SparkException: Job aborted due to stage failure: Total size of serialized results "
        "of 2 tasks (1100.0 MiB) is bigger than spark.driver.maxResultSize (1024.0 MiB)\n"
        "\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2856)\n"
    )
    message = str(computation_error(RuntimeError(text)))
    assert "SparkException: Job aborted due to stage failure: Total size of serialized results" in message
    assert "o411" not in message and "DAGScheduler" not in message


def test_py4j_s_traceback_of_a_connection_the_jvm_broke_goes_to_the_debug_log(spark, caplog) -> None:
    """py4j logs a reset connection (its JVM killed) on the root logger at ERROR level
    before raising: the program's stderr got that traceback under sparkway's one-line
    SparkError.  Here py4j's own code meets a connection that breaks as a killed JVM's."""
    from py4j.java_gateway import GatewayClient
    from py4j.protocol import ERROR, ERROR_ON_RECEIVE, Py4JNetworkError

    class ResetConnection:
        def send_command(self, command: str) -> str:
            raise Py4JNetworkError("Error while sending or receiving", ConnectionResetError(104, "reset"),
                                   ERROR_ON_RECEIVE)

        def close(self, reset: bool = False) -> None:
            pass

    client = GatewayClient()
    client._get_connection = ResetConnection
    with caplog.at_level(logging.DEBUG), caplog.at_level(logging.DEBUG, logger="sparkway"):
        answer = client.send_command("c\nt\ngetLocalProperty\ne\n")
    assert answer == ERROR  # from which the caller raises its error
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    debug = [r for r in caplog.records if r.name == "sparkway"]
    assert [r.getMessage() for r in debug] == ["py4j: Exception while sending command."]
    assert debug[0].exc_info[0] is Py4JNetworkError


def test_a_python_worker_that_dies_is_named_as_such() -> None:
    def leave(a: int) -> int:
        if a == 2:
            os._exit(3)  # as a crash in native code, or the system's OOM killer, would end it
        return a

    t = pw.debug.table_from_markdown("a\n1\n2")
    with pytest.raises(errors.ComputationError) as info:
        pw.debug.table_to_pandas(t.select(b=pw.apply(leave, pw.this.a)))
    message = str(info.value)
    assert "a Python worker of Spark ended in the middle of a task" in message
    assert "\n" not in message and "awaitResult" not in message


@pytest.mark.parametrize("cause, said", [
    ("java.lang.OutOfMemoryError: Java heap space", "Spark's JVM ran out of memory: give it more (SPARKWAY_DRIVER_MEMORY"),
    ("java.io.IOException: No space left on device", "(spark.local.dir) is full"),
    ("org.apache.spark.SparkFileNotFoundException: File file:/data/a.csv does not exist",
     "SparkFileNotFoundException: File file:/data/a.csv does not exist"),
])
def test_spark_s_own_failures_say_what_failed_inside_its_wrappers(cause: str, said: str) -> None:
    from sparkway.engine.failures import computation_error

    text = (  # the shape of a task's failure in a Py4JJavaError
        "An error occurred while calling o196.getResult.\n"
        ": org.apache.spark.SparkException: Exception thrown in awaitResult: \n"
        "\tat org.apache.spark.util.SparkThreadUtils$.awaitResult(SparkThreadUtils.scala:56)\n"
        "Caused by: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 0.0 "
        "failed 1 times, most recent failure: Lost task 0.0 in stage 0.0 (TID 0) (localhost executor driver): "
        f"{cause}\n"
        "\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2856)\n"
    )
    message = str(computation_error(RuntimeError(text)))
    assert said in message and "awaitResult" not in message
