"""``record``: a cheap drop-in for the subset of ``@dataclass`` the IR's record classes use.

Why it exists: ``dataclasses`` builds ``__init__``/``__repr__``/``__eq__`` by generating source and
``exec``-ing it, which for the IR's dozens of record classes is a large share of a cold first run
(``python -X importtime``). ``record`` precomputes the field tuple and installs generic methods
shared by every class, without ``exec``; a plain record's
``__init__`` is a renamed copy of a template (:mod:`beast.ir.record_inits`), as fast as a written one.

Supported, with dataclass semantics: fields from annotations in MRO order (a subclass's fields
follow its bases'; non-annotated class attributes are not fields), defaults,
``field(default_factory=...)``, ``field(init=False, repr=False, compare=False)``,
``__post_init__``, ``frozen=True`` (assignment raises ``FrozenInstanceError``; the hash is over the
compared fields), ``__eq__`` over the compared fields of the same class (non-frozen records are
unhashable, as with dataclasses), ``__repr__`` as ``Name(a=1, b=2)``. ``replace(obj, **changes)``
replaces ``dataclasses.replace``. Not supported: ``dataclasses.fields``/``asdict``/``is_dataclass``
(use ``record_fields``), ordering, slots, keyword-only fields, ``ClassVar``/``InitVar``.
"""

import reprlib
from operator import attrgetter
from types import FunctionType

from .record_inits import TEMPLATES

__all__ = ["record", "field", "replace", "record_fields", "FrozenInstanceError"]

_MISSING = object()


class FrozenInstanceError(AttributeError):
    """Assigning to a field of a frozen record (``dataclasses.FrozenInstanceError``'s role; not
    imported from there, so the cold path need not import ``dataclasses`` at all)."""


class Field:
    """One field's options (what ``field(...)`` returns, and then what the class records)."""

    __slots__ = ("name", "default", "default_factory", "init", "repr", "compare")

    def __init__(self, default=_MISSING, default_factory=_MISSING, init=True, repr=True, compare=True):
        if default is not _MISSING and default_factory is not _MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = None
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.compare = compare

    def __repr__(self):
        return f"Field(name={self.name!r})"


def field(*, default=_MISSING, default_factory=_MISSING, init=True, repr=True, compare=True):
    """Field options, as ``dataclasses.field`` (the subset ``record`` supports)."""
    return Field(default, default_factory, init, repr, compare)


def record_fields(obj_or_cls) -> tuple:
    """The ``Field``s of a record class or instance, in order."""
    return obj_or_cls.__record_fields__


def _init(self, *args, **kwargs):
    # Sets each field with object.__setattr__ (also how a frozen record sets them), in field order,
    # and never touches ``self.__dict__``: reading it makes CPython (3.11+) give up the instance's
    # inline attribute values, and every later attribute read of the record gets about twice as
    # slow (the IR's records are read all through planning and printing).
    cls = self.__class__
    names = cls.__record_init__
    n = len(args)
    if n > len(names):
        raise TypeError(f"{cls.__qualname__}() takes {len(names)} positional arguments but {n} were given")
    for name, value in zip(names, args):
        _set(self, name, value)
    if kwargs:
        if not cls.__record_init_set__.issuperset(kwargs):
            bad = next(k for k in kwargs if k not in cls.__record_init_set__)
            raise TypeError(f"{cls.__qualname__}() got an unexpected keyword argument '{bad}'")
        if n and not kwargs.keys().isdisjoint(names[:n]):
            bad = next(k for k in names[:n] if k in kwargs)
            raise TypeError(f"{cls.__qualname__}() got multiple values for argument '{bad}'")
    get = kwargs.get
    for name, default, factory in cls.__record_tails__[n]:
        value = get(name, default)
        if value is _MISSING:
            if factory is _MISSING:
                raise TypeError(f"{cls.__qualname__}() missing required argument: '{name}'")
            value = factory()
        _set(self, name, value)
    post = cls.__record_post_init__
    if post is not None:
        post(self)


_set = object.__setattr__


@reprlib.recursive_repr()
def _repr(self):
    parts = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__class__.__record_repr__)
    return f"{self.__class__.__qualname__}({parts})"


def _eq_tuple(self, other):
    if other.__class__ is not self.__class__:
        return NotImplemented
    key = self.__class__.__record_key__
    return key(self) == key(other)


def _hash(self):
    return hash(self.__class__.__record_key__(self))


def _key_of(names):
    """A function: a record -> the tuple of its fields ``names`` (what __eq__ and __hash__ compare)."""
    if len(names) >= 2:
        return attrgetter(*names)         # a tuple already
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _fast_init(cls, init):
    """An ``__init__`` with the fields of ``init`` as its parameters (their defaults as its own),
    copied from a template of :mod:`beast.ir.record_inits`; None where the generic :func:`_init`
    is needed: a frozen record, a ``__post_init__``, a factory default, a field set without an
    argument, a custom ``__setattr__``, more fields than a template has."""
    names = tuple(f.name for f in init)
    template = TEMPLATES.get(len(names))
    if template is None or cls.__record_frozen__ or cls.__record_post_init__ is not None \
            or len(init) != len(cls.__record_fields__) or "self" in names \
            or any(f.default_factory is not _MISSING for f in init) or cls.__setattr__ is not object.__setattr__:
        return None
    code = template.__code__
    placeholders = tuple(f"f{i}" for i in range(len(names)))
    if code.co_names != placeholders or code.co_varnames != ("self",) + placeholders:
        return None             # (not the bytecode layout the templates were written for)
    qualname = f"{cls.__qualname__}.__init__"
    renamed = {"co_qualname": qualname} if hasattr(code, "co_qualname") else {}
    code = code.replace(co_names=names, co_varnames=("self",) + names, co_name="__init__", **renamed)
    defaults = tuple(f.default for f in init if f.default is not _MISSING)
    fn = FunctionType(code, template.__globals__, "__init__", defaults or None)
    fn.__qualname__ = qualname
    return fn


def _frozen_setattr(self, name, value):
    raise FrozenInstanceError(f"cannot assign to field '{name}'")


def _frozen_delattr(self, name):
    raise FrozenInstanceError(f"cannot delete field '{name}'")


def _build(cls, frozen):
    fields = {}
    for base in reversed(cls.__mro__[1:]):
        for f in base.__dict__.get("__record_fields__", ()):
            fields[f.name] = f
    for name in cls.__dict__.get("__annotations__", {}):
        value = cls.__dict__.get(name, _MISSING)
        if isinstance(value, Field):
            f = value
            if f.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        else:
            f = Field(default=value)
        if isinstance(f.default, (list, dict, set)):
            raise ValueError(f"mutable default {type(f.default)} for field {name}: use default_factory")
        f.name = name
        fields.pop(name, None)
        fields[name] = f
    ordered = tuple(fields.values())
    init = tuple(f for f in ordered if f.init)
    seen_default = False
    for f in init:
        has_default = f.default is not _MISSING or f.default_factory is not _MISSING
        if seen_default and not has_default:
            raise TypeError(f"non-default argument '{f.name}' follows default argument")
        seen_default = seen_default or has_default
    cls.__record_fields__ = ordered
    cls.__record_init__ = tuple(f.name for f in init)
    cls.__record_init_set__ = frozenset(cls.__record_init__)
    # (name, default, factory) of every field __init__ sets when no argument gives it, plus the
    # init=False fields that have a default or a factory (dataclasses sets those too).
    cls.__record_defaults__ = tuple((f.name, f.default, f.default_factory) for f in init) + tuple(
        (f.name, f.default, f.default_factory) for f in ordered
        if not f.init and (f.default is not _MISSING or f.default_factory is not _MISSING))
    # __record_tails__[n]: the entries __init__ must check after n positional arguments.
    cls.__record_tails__ = tuple(cls.__record_defaults__[n:] for n in range(len(init) + 1))
    cls.__record_repr__ = tuple(f.name for f in ordered if f.repr)
    cls.__record_key__ = staticmethod(_key_of(tuple(f.name for f in ordered if f.compare)))
    cls.__record_post_init__ = getattr(cls, "__post_init__", None)
    cls.__record_frozen__ = frozen
    for base in cls.__mro__[1:]:
        if "__record_frozen__" in base.__dict__ and base.__record_frozen__ != frozen:
            raise TypeError("cannot inherit frozen record from non-frozen one, or the reverse")
    cls.__init__ = _fast_init(cls, init) or _init
    if "__repr__" not in cls.__dict__:
        cls.__repr__ = _repr
    if "__eq__" not in cls.__dict__:
        cls.__eq__ = _eq_tuple
    if frozen:
        cls.__setattr__ = _frozen_setattr
        cls.__delattr__ = _frozen_delattr
        if "__hash__" not in cls.__dict__ or cls.__dict__["__hash__"] is None:
            cls.__hash__ = _hash
    elif "__hash__" not in cls.__dict__:
        cls.__hash__ = None
    return cls


def record(cls=None, *, frozen=False):
    """Class decorator: make ``cls`` a record (see the module docstring). ``@record`` or
    ``@record(frozen=True)``."""
    if cls is None:
        return lambda c: _build(c, frozen)
    return _build(cls, frozen)


def replace(obj, **changes):
    """A copy of record ``obj`` with some init fields changed (``dataclasses.replace``)."""
    cls = obj.__class__
    init_names = cls.__record_init_set__
    for name in changes:
        if name not in init_names:
            if any(f.name == name for f in cls.__record_fields__):
                raise ValueError(f"field {name} is declared with init=False, it cannot be specified with replace()")
            raise TypeError(f"{cls.__qualname__}.__init__() got an unexpected keyword argument '{name}'")
    kwargs = {name: getattr(obj, name) for name in cls.__record_init__ if name not in changes}
    kwargs.update(changes)
    return cls(**kwargs)
