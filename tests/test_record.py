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
