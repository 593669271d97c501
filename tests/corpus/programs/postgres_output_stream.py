"""pw.io.postgres.write in stream mode: one row per change, with time and diff columns; read back in order."""
import psycopg

import pathway as pw


def run(workdir, step, postgres):
    t = pw.debug.table_from_markdown(
        """
        id | word | n | __time__ | __diff__
        1  | a    | 1 | 2        | 1
        2  | b    | 2 | 2        | 1
        1  | a    | 1 | 4        | -1
        """
    )
    with psycopg.connect(**postgres, autocommit=True) as conn:
        conn.execute("CREATE TABLE changes (word TEXT, n BIGINT, time BIGINT, diff BIGINT)")
    pw.io.postgres.write(t, postgres, "changes")
    pw.run()
    with psycopg.connect(**postgres) as conn:
        rows = conn.execute("SELECT word, n, diff, DENSE_RANK() OVER (ORDER BY time) FROM changes ORDER BY time, word, diff").fetchall()
    (workdir / "out" / "changes.txt").write_text("".join(f"{r!r}\n" for r in rows))
