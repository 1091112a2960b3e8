"""Silent mistakes a user makes in a space file, and the hints that say what is wrong:
each is a warning (beast.errors.BeastWarning) or an error with a caret at the user's line."""
from __future__ import annotations

import warnings

import pytest

import beast
from beast.cli import main
from beast.errors import BeastError, BeastWarning, SettingError, SpaceError
from conftest import write_space


def _caret(text: str, line: str, under: str):
    """Assert that ``text`` (a report) shows ``line`` with a caret under exactly ``under``."""
    lines = text.splitlines()
    i = lines.index("    " + line)
    start = line.index(under)
    assert lines[i + 1] == "    " + " " * start + "^" * len(under)


def _load_warnings(path, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        space = beast.load(path, **kw)
    return space, [w.message for w in caught if isinstance(w.message, BeastWarning)]


LIST_SPACE = """
from beast import *
bx = [16, 32, 64]
by = iterator([1, 2])
"""


def test_module_level_list_warns_with_caret(tmp_path):
    path = write_space(tmp_path, LIST_SPACE)
    space, found = _load_warnings(path)
    assert space.count() == 2           # still a constant: the warning changes no result
    assert len(found) == 1
    text = str(found[0])
    assert text.startswith(f"{path}:2:6: warning: 'bx' is a list, so it is a constant, not an iterator")
    _caret(text, "bx = [16, 32, 64]", "[16, 32, 64]")
    assert "hint: to tune over these values, write bx = iterator([16, 32, 64])" in text


def test_module_level_list_warning_on_the_command_line(tmp_path, capsys):
    path = write_space(tmp_path, LIST_SPACE)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        assert main(["count", path]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "2"
    assert err.splitlines()[0] == f"{path}:2:6: warning: 'bx' is a list, so it is a constant, not an iterator"
    _caret(err, "bx = [16, 32, 64]", "[16, 32, 64]")
    assert "BeastWarning" not in err        # printed as beast's report, not as Python's warning line


@pytest.mark.parametrize("use", [
    "a = iterator(SIZES)",                          # passed to a call
    "a = range(4)\n@condition\ndef c(a):\n    return a in SIZES",     # tested with in
    "a = iterator([SIZES[0], SIZES[1]])",           # indexed
    "a = iterator([s * 2 for s in SIZES])",         # iterated
])
def test_constant_list_used_as_a_list_does_not_warn(tmp_path, use):
    path = write_space(tmp_path, "from beast import *\nSIZES = [16, 32, 64]\n" + use + "\n")
    space, found = _load_warnings(path)
    assert found == []
    assert space.count() >= 1


def test_list_read_only_where_a_number_stands_warns(tmp_path):
    path = write_space(tmp_path, """
        from beast import *
        bx = [16, 32]
        by = range(4)
        @condition
        def big(by):
            return bx == by
        """)
    space, found = _load_warnings(path)
    assert [w.lineno for w in found] == [2]


def test_string_not_among_choices_is_an_error(tmp_path):
    path = write_space(tmp_path, """
        from beast import *
        precision = setting("precision", "float", choices=["float", "double"])
        a = range(4)
        @condition
        def wide(a):
            return (precision == "doubel") & (a > 1)
        """)
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    text = str(info.value)
    assert f"{path}:6:26: error: 'doubel' is not one of the choices of setting 'precision'" in text
    _caret(text, '    return (precision == "doubel") & (a > 1)', '"doubel"')
    assert "did you mean 'double'?" in text and "'float', 'double'" in text


def test_string_among_choices_is_fine(tmp_path):
    path = write_space(tmp_path, """
        from beast import *
        precision = setting("precision", "float", choices=["float", "double"])
        a = range(4)
        @condition
        def wide(a):
            return (precision == "double") & (a > 1)
        """)
    assert beast.load(path).count() == 4
    assert beast.load(path, settings={"precision": "double"}).count() == 2


def test_setting_declared_twice_is_an_error_at_the_second(tmp_path):
    path = write_space(tmp_path, """
        from beast import *
        n = setting("x", 4)
        m = setting("x", 8)
        a = range(n + m)
        """)
    with pytest.raises(SettingError) as info:
        beast.load(path)
    text = str(info.value)
    assert text.startswith(f"{path}:3:5: error: setting 'x' is declared twice: first at line 2")
    _caret(text, 'm = setting("x", 8)', 'setting("x", 8)')


def test_setting_read_by_a_helper_twice_is_one_declaration(tmp_path):
    path = write_space(tmp_path, """
        from beast import *
        def n():
            return setting("n", 3)
        a = range(n())
        b = range(n())
        """)
    assert beast.load(path, settings={"n": "2"}).count() == 4


def test_empty_space_warns(tmp_path):
    path = write_space(tmp_path, "")
    space, found = _load_warnings(path)
    assert space.count() == 1
    assert [str(w).splitlines()[0] for w in found] == [
        f"{path}: warning: the space declares no iterators, so its one configuration is the empty one"]


def test_contains_refuses_unknown_keys(tmp_path):
    space = beast.load(write_space(tmp_path, "from beast import *\nblk_m = range(4)\nblk_n = range(2)\n"))
    assert space.contains({"blk_m": 1, "blk_n": 1})
    with pytest.raises(BeastError) as info:
        space.contains({"blk_m": 1, "blk_n": 1, "blkm": 2})
    assert "'blkm', which is not an iterator" in str(info.value)
    assert "did you mean 'blkm' -> 'blk_m'?" in str(info.value)
    with pytest.raises(BeastError, match="'z'"):
        space.contains(iter([{"blk_m": 1, "blk_n": 1}, {"blk_m": 1, "blk_n": 1, "z": 0}]))
    assert list(space.contains(iter([{"blk_m": 1, "blk_n": 1}, {"blk_m": 9, "blk_n": 1}]))) == [True, False]


@pytest.mark.parametrize("values, hint", [
    ("list(2**np.arange(5))", "numpy.int64 is not a Python int: convert the values with int()"),
    ('["float", "double"]', "for a choice among names, declare a setting with choices"),
])
def test_iterator_value_hints_say_what_is_wrong(tmp_path, values, hint):
    path = write_space(tmp_path, f"from beast import *\nimport numpy as np\na = iterator({values})\n")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    text = str(info.value)
    assert f"hint: {'an iterator' if 'float' in values else ''}" in text and hint in text
    assert "//" not in text


def test_float_setting_hint_says_give_an_integer(tmp_path):
    path = write_space(tmp_path, 'from beast import *\nN = setting("N", 4)\na = range(N)\n')
    with pytest.raises(SettingError) as info:
        beast.load(path, settings={"N": 3.0})
    text = str(info.value)
    assert "setting 'N' = 3.0 is a float, and the setting is an integer" in text
    assert "hint: give an integer: settings={'N': 3}" in text and "//" not in text
    assert beast.load(path, settings={"N": 3}).count() == 3
