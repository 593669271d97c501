"""Session windows (max gap 3) per user over a stream: sessions merge when a bridging event arrives."""
import pathway as pw


def run(workdir, step):
    t = pw.debug.table_from_markdown(
        """
        user | t  | __time__
        u    | 1  | 2
        u    | 2  | 2
        u    | 8  | 2
        u    | 5  | 4
        v    | 3  | 4
        """
    )
    r = t.windowby(pw.this.t, window=pw.temporal.session(max_gap=3), instance=pw.this.user).reduce(
        user=pw.this._pw_instance, start=pw.reducers.min(pw.this.t), end=pw.reducers.max(pw.this.t), n=pw.reducers.count()
    )
    pw.io.csv.write(r, workdir / "out" / "sessions.csv")
    pw.run()
