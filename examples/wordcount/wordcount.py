"""Persistent word count (seed 000).

Reads CSV files with a header line `word` and one word per line from ./inputs/,
and writes the counts as a stream of updates to ./result.jsonlines: lines with
"word", "count", "time" and "diff". Its state lives in ./state/, so a rerun
reads only the files added since the last run and outputs only the changes
they cause. Run it from the directory that holds inputs/, for instance:

    mkdir -p /tmp/wc/inputs && cd /tmp/wc
    printf 'word\\nhello\\nworld\\nhello\\n' > inputs/a.csv
    /path/to/sparkway/.venv/bin/python /path/to/sparkway/examples/wordcount/wordcount.py
    cat result.jsonlines
    printf 'word\\nworld\\n' > inputs/b.csv      # then rerun: only "world" changes
"""

import argparse

import sparkway as pw


class InputSchema(pw.Schema):
    word: str


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--streaming",
        action="store_true",
        help="keep polling inputs/ for new files, as in the seed (runs until killed)",
    )
    args = parser.parse_args()

    # The seed polls the directory forever (streaming mode, the default of
    # pw.io.csv.read). This example defaults to mode="static" so that it reads
    # what is there, writes the result and ends; persistence still makes the
    # next run continue where this one stopped. --streaming restores the seed's
    # behaviour.
    words = pw.io.csv.read(
        "inputs/",
        schema=InputSchema,
        mode="streaming" if args.streaming else "static",
    )
    word_counts = words.groupby(words.word).reduce(words.word, count=pw.reducers.count())
    pw.io.jsonlines.write(word_counts, "result.jsonlines")

    persistence_backend = pw.persistence.Backend.filesystem("./state/")
    persistence_config = pw.persistence.Config.simple_config(persistence_backend)
    pw.run(persistence_config=persistence_config)
