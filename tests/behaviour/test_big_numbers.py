"""Big numbers are user errors at the user's line, never internal ones: a range past the
floats, a -D setting past the floats or past Python's int-to-str digit limit, a huge constant in a
condition; the messages abbreviate the number; ``stats`` refuses what ``count`` refuses, at once."""
from __future__ import annotations

import time

import pytest

from beast import load
from beast.cli import main
from beast.errors import BeastError, short_int

RANGE = """
from beast import *
b = range(0, 10**309)
"""

DERIVED = """
from beast import *
r = setting("r", 2)
a = range(4)
d = a * r
condition(d > 1)
"""

CONDITION = """
from beast import *
R = 10**5000
a = range(4)
condition(a < R)
"""

SETTING = """
from beast import *
N = setting("N", 3)
a = range(4)
condition(a < N)
"""

WIDE = """
from beast import *
a = range(2**40)
b = range(2**40)
"""

TOO_WIDE = "does not fit in 64 bits"


def cli(capsys, *args):
    """``beast ARGS`` in this process: (exit status, stdout, stderr)."""
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def check_refused(rc, err, shown, line):
    assert rc == 2
    assert "Traceback" not in err and "internal error" not in err
    assert f"the integer {shown} {TOO_WIDE}" in err
    assert line in err
    assert len(err) < 600                      # the number is never printed in full


def test_short_int():
    assert short_int(12345) == "12345"
    assert short_int(-2**63) == str(-2**63)
    assert short_int(10**309) == "10**309"
    assert short_int(-10**5000) == "-10**5000"
    assert short_int(2**200) == "2**200"
    assert short_int(10**308 + 7) == "(10**308 + 7)"
    assert short_int(3**4000) == "a 1909-digit integer"
    assert short_int(-(3**9000)) == "a 4295-digit negative integer"


def test_range_past_the_floats_under_auto(space_file, capsys):
    path = space_file(RANGE)
    rc, _, err = cli(capsys, "count", path, "--backend", "auto")
    check_refused(rc, err, "10**309", ":2:14:")
    assert "^^^^^^^" in err                    # the caret under 10**309
    with pytest.raises(BeastError, match=r"the integer 10\*\*309 does not fit"):
        load(path).count(backend="auto")


def test_derived_value_past_the_floats(space_file, capsys):
    path = space_file(DERIVED)
    for r in ("10**308", "10**309"):
        rc, _, err = cli(capsys, "count", path, "-D", f"r={r}")
        check_refused(rc, err, r, ":4:")
    with pytest.raises(BeastError, match=r"the integer 10\*\*309 does not fit"):
        load(path, settings={"r": 10**309}).count()


def test_huge_constant_in_a_condition(space_file, capsys):
    path = space_file(CONDITION)
    rc, _, err = cli(capsys, "count", path)
    check_refused(rc, err, "10**5000", ":2:5:")
    with pytest.raises(BeastError, match=r"the integer 10\*\*5000 does not fit"):
        load(path).count()


@pytest.mark.parametrize("digits", [4300, 4301, 6000])
def test_setting_past_the_digit_limit(space_file, capsys, digits):
    """A -D integer of 4,300 digits and more (Python's int-to-str limit) is an integer."""
    path = space_file(SETTING)
    rc, _, err = cli(capsys, "count", path, "-D", "N=1" + "0" * (digits - 1))
    check_refused(rc, err, f"10**{digits - 1}", ":4:")
    assert "expected an integer" not in err
    with pytest.raises(BeastError, match=rf"the integer 10\*\*{digits - 1} does not fit"):
        load(path, settings={"N": 10 ** (digits - 1)}).count()


def test_setting_past_the_digit_limit_subprocess(space_file):
    from conftest import run_beast
    path = space_file(SETTING)
    done = run_beast("count", path, "-D", "N=-1" + "0" * 5000)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"the integer -10**5000 {TOO_WIDE}" in done.stderr


@pytest.mark.parametrize("backend", ["python", "c"])
def test_stats_refuses_what_count_refuses(space_file, capsys, backend):
    from conftest import have_cc
    if backend == "c" and not have_cc():
        pytest.skip("no C compiler")
    path = space_file(WIDE)
    rc, _, count_err = cli(capsys, "count", path, "--backend", backend)
    assert rc == 2 and "number of configurations does not fit in 64 bits" in count_err
    start = time.perf_counter()
    rc, out, err = cli(capsys, "stats", path, "--backend", backend)
    assert time.perf_counter() - start < 10
    assert rc == 2 and out == "" and err == count_err
    with pytest.raises(BeastError, match="number of configurations does not fit in 64 bits"):
        load(path).stats(backend=backend)


def test_huge_value_without_a_short_form(space_file, capsys):
    """A value no power names (10**5000 // 3) is shown by its digit count; a float operation on a
    huge integer is a user error at its caret."""
    path = space_file(CONDITION.replace("condition(a < R)", "x = R // 3\ncondition(a < x)"))
    rc, _, err = cli(capsys, "count", path)
    assert rc == 2 and "Traceback" not in err and "internal error" not in err
    assert "a 5000-digit integer does not fit in 64 bits" in err and len(err) < 600
    path = space_file(CONDITION.replace("condition(a < R)", "condition(a < R / 2)"), "div.py")
    rc, _, err = cli(capsys, "count", path, "--backend", "python")
    assert rc == 2 and "internal error" not in err and "Traceback" not in err
    assert "div.py:4:15: error:" in err and "too large for a float" in err


def test_a_setting_past_the_digit_limit_given_to_load_is_an_integer(tmp_path):
    """``load(settings={"n": "1" * 5000})`` parses the text as the integer it is (the digit limit
    never shows through), so the refusal is the 64-bit one at the user's line; a choice list
    names the huge value by its size."""
    import beast
    f = tmp_path / "s.py"
    f.write_text("from beast import *\nn = setting('n', 3)\na = iterator(range(0, 4))\nc = condition(a < n)\n")
    with pytest.raises(beast.BeastError, match="5000-digit integer does not fit in 64 bits"):
        beast.load(str(f), settings={"n": "1" * 5000}).count()
    g = tmp_path / "c.py"
    g.write_text("from beast import *\nn = setting('n', 3, choices=[3, 4])\na = iterator(range(0, n))\n")
    with pytest.raises(beast.BeastError, match=r"= 10\*\*5000 is not one of its choices: 3, 4"):
        beast.load(str(g), settings={"n": 10 ** 5000})
    with pytest.raises(beast.BeastError, match="5000-digit integer is not one of its choices"):
        beast.load(str(g), settings={"n": "7" * 5000})
