"""Draw a space's DAG through Graphviz's ``dot`` program (``beast dag --format png|svg``)."""
from __future__ import annotations

import os
import shutil
import subprocess

from ..errors import BeastError

DRAW_FORMATS = ("png", "svg")
HOW_TO_GET = ("install Graphviz: `apt-get install graphviz` (Debian/Ubuntu), `brew install graphviz` "
              "(macOS), or see https://graphviz.org/download/; `beast dag --format dot` prints the "
              "DAG without it")


def dot_program() -> str | None:
    """The path of Graphviz's ``dot``, or None when it is not installed (``BEAST_DOT`` overrides)."""
    return shutil.which(os.environ.get("BEAST_DOT") or "dot")


def draw(dot_text: str, path: str, fmt: str) -> str:
    """Render ``dot_text`` to ``path`` in ``fmt`` (png or svg): a temporary file, then renamed."""
    if fmt not in DRAW_FORMATS:
        raise BeastError(f"cannot draw the DAG as {fmt!r}", hint="use png or svg")
    dot = dot_program()
    if dot is None:
        raise BeastError(f"drawing the DAG as {fmt} needs Graphviz's `dot` program, which is not on PATH",
                         hint=HOW_TO_GET)
    from .output import output_file
    with output_file(path, "." + fmt) as tmp:
        proc = subprocess.run([dot, f"-T{fmt}", "-o", tmp], input=dot_text, capture_output=True,
                              text=True, timeout=120)
        if proc.returncode != 0:
            said = (proc.stderr or proc.stdout).strip()[-2000:] or "it said nothing"
            raise BeastError(f"Graphviz's dot failed (exit status {proc.returncode}): {said}")
    return path
