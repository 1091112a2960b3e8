"""beast.ir.record: the dataclass subset the IR's record classes use, built without exec."""
import dataclasses
import pickle

import pytest

from beast.ir.record import FrozenInstanceError, field, record, record_fields, replace


@record
class Base:
    node: object


@record
class Child(Base):
    names: list
    aug: bool = False
    tags: list = field(default_factory=list)
    size: int = field(init=False, repr=False, compare=False)
    hidden: str = field(default="h", repr=False)
    single = True                      # not annotated: a class attribute, not a field

    def __post_init__(self):
        self.size = len(self.names)


@record(frozen=True)
class Point:
    x: int
    y: int = 0
    note: str = field(default="", compare=False)


def test_fields_in_mro_order_with_defaults_and_factory():
    c = Child("n", ["a", "b"])
    assert [f.name for f in record_fields(Child)] == ["node", "names", "aug", "tags", "size", "hidden"]
    assert (c.node, c.names, c.aug, c.tags, c.hidden) == ("n", ["a", "b"], False, [], "h")
    assert c.tags is not Child("n", []).tags              # a fresh list per instance
    assert Child.single is True and "single" not in vars(c)
    assert Child(node=1, names=[], aug=True).aug is True
    assert Child(1, [], True, ["t"]).tags == ["t"]


def test_init_false_field_is_set_by_post_init_only():
    c = Child("n", ["a", "b", "c"])
    assert c.size == 3
    with pytest.raises(TypeError):
        Child("n", [], size=4)


def test_init_argument_errors_like_dataclass():
    with pytest.raises(TypeError, match="missing"):
        Child("n")
    with pytest.raises(TypeError, match="unexpected"):
        Child("n", [], nope=1)
    with pytest.raises(TypeError, match="multiple"):
        Child("n", [], names=[])
    with pytest.raises(TypeError, match="positional"):
        Point(1, 2, "", 4)


def test_eq_over_compared_fields_of_the_same_class():
    assert Child("n", ["a"]) == Child("n", ["a"])
    assert Child("n", ["a"]) != Child("n", ["b"])
    assert Base("n") != Child("n", [])                    # another class: never equal
    assert Point(1, 2, "a") == Point(1, 2, "b")           # compare=False field ignored
    nan = float("nan")
    assert Point(nan) == Point(nan)                       # tuple comparison: identity first


def test_frozen_hash_and_immutability():
    p = Point(1, 2)
    assert hash(p) == hash(Point(1, 2, "other")) == hash((1, 2))
    assert len({Point(1, 2), Point(1, 2), Point(2, 1)}) == 2
    with pytest.raises(FrozenInstanceError):
        p.x = 5
    with pytest.raises(AttributeError):
        del p.y
    with pytest.raises(TypeError):                        # mutable records are unhashable
        hash(Child("n", []))


def test_repr_matches_dataclass_style():
    assert repr(Point(1, 2)) == "Point(x=1, y=2, note='')"
    assert repr(Child("n", ["a"])) == "Child(node='n', names=['a'], aug=False, tags=[])"

    @dataclasses.dataclass
    class Twin:
        a: int
        b: str = "x"

    @record
    class Twin2:
        a: int
        b: str = "x"
    assert repr(Twin2(1)).replace("Twin2", "Twin") == repr(Twin(1))     # both use __qualname__
    loop = Child("n", [])
    loop.names.append(loop)
    assert "..." in repr(loop)                            # recursion guarded


def test_replace_copies_and_reruns_post_init():
    c = Child("n", ["a"], tags=["t"])
    d = replace(c, names=["x", "y"])
    assert (d.node, d.names, d.tags, d.size) == ("n", ["x", "y"], ["t"], 2)
    assert c.names == ["a"] and c.size == 1
    p = replace(Point(1, 2, "k"), y=7)
    assert (p.x, p.y, p.note) == (1, 7, "k")
    with pytest.raises(ValueError):
        replace(c, size=3)
    with pytest.raises(TypeError):
        replace(c, nope=3)


def test_mutable_default_and_ordering_rejected():
    with pytest.raises(ValueError):
        @record
        class Bad:
            xs: list = []
    with pytest.raises(TypeError):
        @record
        class Bad2:
            a: int = 1
            b: int


def test_frozen_records_pickle():
    assert pickle.loads(pickle.dumps(Point(3, 4))) == Point(3, 4)


@record
class Plain:                           # a plain record gets a template __init__ (record_inits)
    a: int
    b: str = "b"
    c: tuple = ()


@record
class Wide:                            # more fields than any template: the generic __init__
    f00: int = 0
    f01: int = 1
    f02: int = 2
    f03: int = 3
    f04: int = 4
    f05: int = 5
    f06: int = 6
    f07: int = 7
    f08: int = 8
    f09: int = 9
    f10: int = 10
    f11: int = 11
    f12: int = 12


def test_template_init_behaves_like_the_generic_one():
    from beast.ir.record import _init
    assert Plain.__init__ is not _init and Wide.__init__ is _init and Child.__init__ is _init
    assert Plain.__init__.__qualname__ == "Plain.__init__"
    p = Plain(1)
    assert (p.a, p.b, p.c) == (1, "b", ()) and list(vars(p)) == ["a", "b", "c"]
    assert Plain(c=(1,), a=2) == Plain(2, "b", (1,)) and repr(Plain(1, "x")) == "Plain(a=1, b='x', c=())"
    assert replace(p, b="z") == Plain(1, "z")
    for args, kwargs, match in ((), {}, "missing"), ((1,), {"d": 0}, "unexpected"), \
            ((1,), {"a": 2}, "multiple"), ((1, 2, 3, 4), {}, "positional"):
        with pytest.raises(TypeError, match=match):
            Plain(*args, **kwargs)
    w = Wide(5, f12=0)
    assert (w.f00, w.f01, w.f11, w.f12) == (5, 1, 11, 0)
