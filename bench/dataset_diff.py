"""The diff of two dataset versions on a large CSV: seconds and peak memory (ru_maxrss) of
engine.data.diff.diff_tables by content and by a key column.

    PYTHONPATH=. .venv/bin/python bench/dataset_diff.py --rows 1000000 [--key id]
"""

from __future__ import annotations

import argparse
import random
import resource
import tempfile
import time
from pathlib import Path

from engine.data.diff import TableFile, diff_tables


def write(path: Path, rows: int, skip: set[int], seed: int) -> None:
    rng = random.Random(seed)
    with path.open("w") as out:
        out.write("id,a,b,city,label\n")
        for i in range(rows):
            a, b, city = rng.random(), rng.gauss(0, 1), rng.choice(["oslo", "rome", "lima"])
            if i in skip:
                continue
            out.write(f"{i},{a:.6f},{b:.6f},{city},{i % 3}\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--key", default=None, help="a key column (id); default: rows matched by content")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        before, after = Path(tmp) / "v1.csv", Path(tmp) / "v2.csv"
        write(before, args.rows, set(), 0)
        write(after, args.rows, set(range(0, args.rows, 1000)), 0)  # every 1000th row removed
        size = before.stat().st_size
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for key in (args.key,):
            start = time.perf_counter()
            diff = diff_tables(TableFile(str(before), target="label"), TableFile(str(after), target="label"), key=key)
            took = time.perf_counter() - start
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            print(f"{args.rows} rows ({size / 2**20:.0f} MiB), key={key}: {took:.1f} s, removed "
                  f"{diff['rows']['removed']}, peak RSS {peak / 1024:.0f} MiB (+{(peak - base) / 1024:.0f} MiB)")


if __name__ == "__main__":
    main()
