"""The user's frame: the first frame of the call stack outside the beast package.

Errors point at the user's line and warnings are attributed to it; every place that needs it asks
here, so what counts as "inside beast" is decided once.
"""
from __future__ import annotations

import os
import sys

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def inside_beast(frame) -> bool:
    """Whether ``frame`` runs code of the beast package."""
    return os.path.abspath(frame.f_code.co_filename).startswith(PACKAGE_DIR)


def user_frame():
    """The first frame outside beast above the caller (None if the whole stack is beast's)."""
    f = sys._getframe(1)
    while f is not None and inside_beast(f):
        f = f.f_back
    return f


def user_stacklevel() -> int:
    """The ``stacklevel`` of :func:`warnings.warn` that names the user's line, for a warning
    issued by the caller."""
    level, f = 1, sys._getframe(1)
    while f is not None and inside_beast(f):
        level, f = level + 1, f.f_back
    return level
