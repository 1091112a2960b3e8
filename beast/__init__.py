"""beast: a declarative search-space compiler for autotuners.

Space files use ``from beast import *`` (the vocabulary of :mod:`beast.lang`); programs use
``beast.load(path, device=..., settings=...)`` to get a :class:`beast.space.Space`.
"""
from ._version import __version__
from .errors import BeastError, DeviceError, EvaluationError, SettingError, SpaceError
from .lang.vocabulary import (Condition, Iterator, condition, device, difference, intersection, iterator,
                              max, min, range, select, setting, sum, union)


class _OldPaths:
    """The finder of old module paths (beast/_moved.py), last on ``sys.meta_path``: asked only
    about a name no other finder has, so the alias table is read only when an old path is used."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        if not fullname.startswith("beast."):
            return None
        from ._moved import find_spec
        return find_spec(fullname)


import sys as _sys  # noqa: E402
if not any(isinstance(f, _OldPaths) for f in _sys.meta_path):
    _sys.meta_path.append(_OldPaths())

__all__ = ["range", "iterator", "condition", "select", "union", "intersection", "difference",
           "setting", "device", "min", "max", "sum"]


def load(path, device=None, settings=None):
    """Compile the space file at ``path`` for ``device`` (profile name, JSON path, 'auto' or a
    DeviceProfile) with ``settings`` overrides; returns a :class:`beast.space.Space`."""
    from .space import load as _load
    return _load(path, device=device, settings=settings)


def from_kernel_tuner(tune_params, restrictions=None, max_threads=1024, block_size_names=None,
                      device=None):
    """A space with exactly the configurations Kernel Tuner's ``Searchspace(tune_params,
    restrictions, max_threads, block_size_names)`` keeps; see :mod:`beast.kernel_tuner`."""
    from .kernel_tuner.space import from_kernel_tuner as _from_kernel_tuner
    return _from_kernel_tuner(tune_params, restrictions, max_threads, block_size_names, device)
