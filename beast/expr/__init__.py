"""The expression language: what module-level arithmetic on iterators builds, and the IR's
expressions (:mod:`.nodes`, with spelling for messages), the sequences iterators run over
(:mod:`.sequences`), and the user's frame for errors and warnings (:mod:`.callsite`)."""
from .nodes import (BINOPS, COMPARES, BITWISE, BUILTIN_CALLS, fold_binop, IteratorTruthError, Expr,
    wrap, Const, Var, BinOp, UnOp, Compare, BoolOp, Not, Call, Select, FuncCall, walk, evaluate,
    failing_operation, python_types, NUMERIC_TYPES, binop_type, static_type, user_names, spell)
from .sequences import (Seq, RangeSeq, range_length, ValuesSeq, ScalarSeq, CallSeq, SetOpSeq,
    free_vars, SolveSeq, DivisorSeq)
