"""What a space file sees: beast's vocabulary (:mod:`.vocabulary`: ``range``, ``iterator``,
``condition``, ``setting``, ``device`` ...) and the device profiles it prunes for
(:mod:`.devices`, imported only when a space asks for its device)."""
from .vocabulary import (COMPENSATED_SUM, CONDITION_KINDS, SettingDecl, compiling, Source,
    RangeSource, ValuesSource, ScalarSource, SetOpSource, FunctionSource, set_operation, Iterator,
    range, iterator, union, intersection, difference, Condition, condition, select, min, max, sum,
    setting, device)
from .vocabulary import __all__  # noqa: F401 - what ``from beast import *`` gives
