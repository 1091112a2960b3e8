"""What a space file sees: beast's vocabulary (:mod:`.vocabulary`: ``range``, ``iterator``,
``condition``, ``setting``, ``device`` ...) and the device profiles it prunes for
(:mod:`.devices`, imported only when a space asks for its device).

The names are those of its modules, imported when first asked for."""
from __future__ import annotations

_WHERE = {
    "COMPENSATED_SUM": "vocabulary", "CONDITION_KINDS": "vocabulary", "Condition": "vocabulary",
    "FunctionSource": "vocabulary", "Iterator": "vocabulary", "RangeSource": "vocabulary",
    "ScalarSource": "vocabulary", "SetOpSource": "vocabulary", "SettingDecl": "vocabulary",
    "Source": "vocabulary", "ValuesSource": "vocabulary", "compiling": "vocabulary",
    "condition": "vocabulary", "device": "vocabulary", "difference": "vocabulary",
    "intersection": "vocabulary", "iterator": "vocabulary", "max": "vocabulary",
    "min": "vocabulary", "range": "vocabulary", "select": "vocabulary",
    "set_operation": "vocabulary", "setting": "vocabulary", "sum": "vocabulary",
    "union": "vocabulary",
}

# the vocabulary (``from beast.lang import *``), as beast/lang/vocabulary.py lists it
__all__ = ["range", "iterator", "condition", "select", "union", "intersection", "difference",
           "setting", "device", "min", "max", "sum", "Iterator", "Condition"]


def __getattr__(name):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'beast.lang' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
