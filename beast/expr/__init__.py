"""The expression language: what module-level arithmetic on iterators builds, and the IR's
expressions (:mod:`.nodes`, with spelling for messages), the sequences iterators run over
(:mod:`.sequences`), and the user's frame for errors and warnings (:mod:`.callsite`).

The names are those of its modules, imported when first asked for."""
from __future__ import annotations

_WHERE = {
    "BINOPS": "nodes", "BITWISE": "nodes", "BUILTIN_CALLS": "nodes", "BinOp": "nodes",
    "BoolOp": "nodes", "COMPARES": "nodes", "Call": "nodes", "CallSeq": "sequences",
    "Compare": "nodes", "Const": "nodes", "DivisorSeq": "sequences", "Expr": "nodes",
    "FuncCall": "nodes", "IteratorTruthError": "nodes", "NUMERIC_TYPES": "nodes", "Not": "nodes",
    "RangeSeq": "sequences", "ScalarSeq": "sequences", "Select": "nodes", "Seq": "sequences",
    "SetOpSeq": "sequences", "SolveSeq": "sequences", "UnOp": "nodes", "ValuesSeq": "sequences",
    "Var": "nodes", "binop_type": "nodes", "evaluate": "nodes", "failing_operation": "nodes",
    "fold_binop": "nodes", "free_vars": "sequences", "python_types": "nodes",
    "range_length": "sequences", "spell": "nodes", "static_type": "nodes", "user_names": "nodes",
    "walk": "nodes", "wrap": "nodes",
}


def __getattr__(name):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'beast.expr' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
