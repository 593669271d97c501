"""pw.io.postgres.write in snapshot mode keeps the table equal to the result by primary key; the table read back, with its columns' types."""
import psycopg

import pathway as pw


def run(workdir, step, postgres):
    t = pw.debug.table_from_markdown(
        """
        id | k | n | x   | s  | __time__ | __diff__
        1  | a | 1 | 1.5 | p  | 2        | 1
        2  | b | 2 | 2.5 | q  | 2        | 1
        1  | a | 1 | 1.5 | p  | 4        | -1
        1  | a | 5 | 0.5 | p2 | 4        | 1
        2  | b | 2 | 2.5 | q  | 6        | -1
        """
    )
    with psycopg.connect(**postgres, autocommit=True) as conn:
        conn.execute("CREATE TABLE snap (k TEXT PRIMARY KEY, n BIGINT NOT NULL, x DOUBLE PRECISION NOT NULL, s TEXT NOT NULL)")
    pw.io.postgres.write(t, postgres, "snap", output_table_type="snapshot", primary_key=[t.k])
    pw.run()
    with psycopg.connect(**postgres) as conn:
        columns = conn.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'snap' ORDER BY ordinal_position"
        ).fetchall()
        rows = conn.execute("SELECT * FROM snap ORDER BY k").fetchall()
    (workdir / "out" / "snap.txt").write_text("".join(f"{c!r}\n" for c in columns) + "".join(f"{r!r}\n" for r in rows))
