"""Which texts CSV input takes as bools, ints and floats (rows that do not parse are left out)."""
import pathway as pw

TEXTS = ["true", "TRUE", "tRuE", "1", "yes", "On", "t", "y", " true", "false", "0", "no", "off", "F", "n",
         "+7", "-0", "007", "1_000", " 5", "1e3", ".5", "inf", "-inf", "nan", "NaN", "x", ""]


class AsBool(pw.Schema):
    text: str
    value: bool


class AsInt(pw.Schema):
    text: str
    value: int


class AsFloat(pw.Schema):
    text: str
    value: float


def run(workdir, step):
    source = workdir / "in"
    source.mkdir()
    (source / "texts.csv").write_text("text,value\n" + "".join(f'"[{t}]",{t}\n' for t in TEXTS))
    for name, schema in (("bools", AsBool), ("ints", AsInt), ("floats", AsFloat)):
        table = pw.io.csv.read(source, schema=schema, mode="static")
        pw.io.jsonlines.write(table, workdir / "out" / f"{name}.jsonl")
    pw.run()
