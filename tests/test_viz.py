"""Table.plot and Table.show: widgets holding a static table at once, a streaming one
as pw.run() processes it."""

from __future__ import annotations

import pytest

import sparkway as pw
from sparkway.errors import PlanError

pytestmark = pytest.mark.usefixtures("spark")
pytest.importorskip("panel", reason="Table.plot and Table.show need the viz extra")
from bokeh.plotting import figure  # noqa: E402


def scatter(source):
    fig = figure(height=200, width=200)
    fig.scatter("x", "y", source=source)
    return fig


def plotted(viz) -> dict[str, list]:
    """What the figure of ``viz`` draws: its data source's columns."""
    return dict(viz[1].object.renderers[0].data_source.data)


def header(viz) -> str:
    return viz[0][0].object


def test_a_static_table_is_plotted_at_once_in_the_order_of_sorting_col() -> None:
    t = pw.debug.table_from_markdown(
        """
        x | y
        1 | 30
        2 | 10
        3 | 20
        """
    )
    viz = t.plot(scatter, sorting_col="y")
    assert header(viz) == "Static preview"
    assert plotted(viz) == {"x": [2, 3, 1], "y": [10, 20, 30]}


def test_a_static_table_without_sorting_col_keeps_every_row_once() -> None:
    t = pw.debug.table_from_markdown(
        """
          | x | y  | __time__ | __diff__
        1 | 1 | 30 | 2        | 1
        2 | 2 | 10 | 2        | 1
        1 | 1 | 30 | 4        | -1
        """
    )
    assert plotted(t.plot(scatter)) == {"x": [2], "y": [10]}


def test_a_sorting_col_that_is_not_a_column_is_refused() -> None:
    t = pw.debug.table_from_markdown("x | y\n1 | 2")
    with pytest.raises(PlanError, match="'z' is not a column.*x, y"):
        t.plot(scatter, sorting_col="z")


class Counts(pw.io.python.ConnectorSubject):
    """Three words over two commits: "a" is counted twice, so its row is updated."""

    def run(self) -> None:
        self.next(word="a")
        self.next(word="b")
        self.commit()
        self.next(word="a")
        self.commit()


class Words(pw.Schema):
    word: str


def test_a_streaming_table_is_plotted_as_pw_run_processes_it() -> None:
    words = pw.io.python.read(Counts(), schema=Words)
    counts = words.groupby(pw.this.word).reduce(x=pw.this.word, y=pw.reducers.count())
    viz = counts.plot(scatter, sorting_col="x")
    assert header(viz) == "Streaming mode"
    assert plotted(viz) == {"x": [], "y": []}  # nothing before the run
    pw.run(monitoring_level=pw.MonitoringLevel.NONE)
    # the first count of "a" was retracted when it became 2
    assert plotted(viz) == {"x": ["a", "b"], "y": [2, 1]}


def test_show_gives_the_rows_with_ids_as_text_and_json_cut_short() -> None:
    long_text = "v" * 100
    t = pw.debug.table_from_rows(pw.schema_from_types(a=int, j=pw.Json), [(1, pw.Json({"k": long_text}))])
    t = t.select(pw.this.a, pw.this.j, ref=t.id)
    frame = t.show()[1].value
    assert list(frame.columns) == ["id", "a", "j", "ref"]
    [row] = frame.to_dict("records")
    assert row["id"] == row["ref"] and row["id"].startswith("^") and len(row["id"]) == 9
    assert row["j"] == f'{{"k": "{"v" * 57} ...'  # 64 characters, then " ..."
    assert t.show(short_pointers=False)[1].value["id"][0].startswith(row["id"])


def test_show_without_snapshot_lists_every_change_with_its_time_and_diff() -> None:
    t = pw.debug.table_from_markdown(
        """
          | a | __time__ | __diff__
        1 | 1 | 2        | 1
        2 | 2 | 4        | 1
        1 | 1 | 4        | -1
        """
    )
    viz = t.show(snapshot=False, include_id=False)
    changes = sorted(map(tuple, viz[1].value[["a", "time", "diff"]].values.tolist()))
    assert changes == [(1, 2, 1), (1, 4, -1), (2, 4, 1)]
    assert viz[1].sorters == [{"field": "time", "dir": "desc"}, {"field": "diff", "dir": "desc"}]


def test_a_table_is_static_only_when_every_source_it_reads_is(tmp_path) -> None:
    (tmp_path / "in.csv").write_text("x,y\n1,2\n")
    schema = pw.schema_from_types(x=int, y=int)
    static = pw.io.csv.read(str(tmp_path), schema=schema, mode="static")
    streaming = pw.io.csv.read(str(tmp_path), schema=schema, mode="streaming")
    assert header(static.plot(scatter)) == "Static preview"
    both = static.concat_reindex(streaming)
    assert header(both.plot(scatter)) == "Streaming mode"

