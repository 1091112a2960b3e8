"""Make this directory's trimmed copies and ``configurations.json`` from the full Benchmark Hub
files (Kernel Tuner cache format)::

    python tests/data/benchmark_hub/trim.py DIR [FILE.json.gz ...]

For every ``*.json.gz`` in DIR, ``configurations.json`` records its parameter names, how many
configurations it holds and the SHA-256 of their sorted cache keys (``tests/test_real_data.py``
compares beast's survivors with them).  Each FILE named is also copied here trimmed: the header,
and per configuration only its parameters and its ``time`` (ms, or the error string).
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = ("device_name", "kernel_name", "problem_size", "tune_params_keys", "tune_params", "objective")


def digest(keys) -> str:
    """SHA-256 of the sorted configuration keys, one per line."""
    return hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    folder, trim = argv[0], set(argv[1:])
    manifest = {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json.gz"):
            continue
        with gzip.open(os.path.join(folder, name), "rt", encoding="utf-8") as fh:
            data = json.load(fh)
        names = data["tune_params_keys"]
        manifest[name] = {"tune_params_keys": names, "configurations": len(data["cache"]),
                          "sha256": digest(data["cache"])}
        if name in trim:
            small = {k: data[k] for k in HEADER if k in data}
            small["cache"] = {key: dict({n: entry[n] for n in names}, time=entry["time"])
                              for key, entry in data["cache"].items()}
            text = json.dumps(small, separators=(",", ":")).encode()
            with open(os.path.join(HERE, name), "wb") as fh:
                fh.write(gzip.compress(text, 9, mtime=0))
    with open(os.path.join(HERE, "configurations.json"), "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1)
        fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
