"""A space file as text: read as Python reads it (PEP 263 coding lines, a UTF-8 byte order mark),
a clear error at the line and column where Python would not read it, and columns that count
characters in the report where ast and the code's positions count UTF-8 bytes; Python's own
errors at module level under a caret."""
from __future__ import annotations

import pytest

import beast
from beast.errors import SpaceError
from conftest import run_beast, write_space
from behaviour.test_errors import check_cli

def _write_bytes(tmp_path, data: bytes, name: str) -> str:
    path = str(tmp_path / name)
    with open(path, "wb") as fh:
        fh.write(data)
    return path


def test_a_latin_1_file_with_a_coding_line_reads_as_python_reads_it(tmp_path):
    text = '# -*- coding: latin-1 -*-\nfrom beast import *\nname = "déjà"  # ça\na = range(3)\nb = range(a, 4)\n'
    path = _write_bytes(tmp_path, text.encode("latin-1"), "latin.py")
    space = beast.load(path)
    assert space.module.namespace["name"] == "déjà" and space.count(backend="python") == 9
    assert run_beast("count", path, "--backend", "python").stdout == "9\n"
    out = tmp_path / "rows.csv"
    proc = run_beast("enumerate", path, "-q", "-o", out, "--backend", "python")
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().splitlines()[:3] == ["a,b", "0,0", "0,1"]


def test_a_utf_8_file_with_a_byte_order_mark_reads_as_python_reads_it(tmp_path):
    path = _write_bytes(tmp_path, b"\xef\xbb\xbffrom beast import *\na = range(3)\nb = range(a, 4)\n", "bom.py")
    assert beast.load(path).count(backend="python") == 9
    assert run_beast("count", path, "--backend", "python").stdout == "9\n"


@pytest.mark.parametrize("line, caret", [('b = "ééé" $ a', 10), ('b = "ééé" + (a +', 12)])
def test_a_syntax_error_in_a_latin_1_file_has_its_caret_under_the_character(line, caret, tmp_path):
    """Python counts the columns in the line as UTF-8: in a latin-1 file the caret would stand
    three columns short of the error."""
    text = f"# -*- coding: latin-1 -*-\nfrom beast import *\na = range(3)\n{line}\n"
    path = _write_bytes(tmp_path, text.encode("latin-1"), "latin_syntax.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    # the column is counted in UTF-8 bytes, as ast counts it (each é two); shown in characters
    assert (info.value.lineno, info.value.col) == (4, caret + 3)
    assert str(info.value).splitlines()[1:3] == ["    " + line, "    " + " " * caret + "^"]
    check_cli(path, expect_in_stderr=f"{path}:4:{caret + 1}: error: syntax error")


def test_an_error_in_a_latin_1_file_quotes_the_line_as_decoded(tmp_path):
    text = "# -*- coding: latin-1 -*-\nfrom beast import *\na = range(3)\nb = range(a, zz)  # déjà\n"
    path = _write_bytes(tmp_path, text.encode("latin-1"), "latin_name.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    assert str(info.value).splitlines() == [f"{path}:4:14: error: undefined name 'zz'",
                                            "    b = range(a, zz)  # déjà", "                 ^^"]


def test_a_file_that_is_not_utf_8_says_where_its_first_bad_byte_is(tmp_path):
    path = _write_bytes(tmp_path, b"from beast import *\na = range(3)\n#  \xff bad\nb = range(4)\n", "bad.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    err = info.value
    assert (err.filename, err.lineno, err.col) == (path, 3, 3)
    assert err.message == "cannot read space file: byte 0xff is not UTF-8 text"
    assert "coding: latin-1" in err.hint
    assert str(err).splitlines()[1:3] == ["    #  \ufffd bad", "       ^"]
    check_cli(path, expect_in_stderr=f"{path}:3:4: error: cannot read space file: byte 0xff is not UTF-8 text")


@pytest.mark.parametrize("data, message", [
    (b"# coding: nosuchcodec\nfrom beast import *\na = range(3)\n", "unknown encoding: nosuchcodec"),
    (b"\xef\xbb\xbf# coding: latin-1\nfrom beast import *\na = range(3)\n",
     "the file starts with a UTF-8 byte order mark, but its coding line names another encoding"),
])
def test_a_coding_line_python_refuses_is_an_error_at_that_line(data, message, tmp_path):
    path = _write_bytes(tmp_path, data, "coding.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    assert (info.value.lineno, info.value.message) == (1, f"cannot read space file: {message}")
    check_cli(path, expect_in_stderr=f"{path}:1: error: cannot read space file: {message}")


@pytest.mark.parametrize("line, col, width", [('b = iterator(["ééé", a + zz])', 25, 2),
                                              ('c = "ééé" + (a +* 2)', 16, 1)])
def test_carets_count_characters_after_non_ascii_text(line, col, width, tmp_path):
    """ast counts columns in UTF-8 bytes: 'ééé' before the error put the caret and the column three
    places too far right (the report counts characters)."""
    path = write_space(tmp_path, f"from beast import *\na = range(3)\n{line}\n")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    lines = str(info.value).splitlines()
    assert lines[0].startswith(f"{path}:3:{col + 1}: error:")
    assert lines[1:3] == ["    " + line, "    " + " " * col + "^" * width]


@pytest.mark.parametrize("line, col, width", [("z = 1 / 0", 4, 5), ('raise ValueError("no")', 0, 22),
                                              ("b = a * int('x')", 8, 8)])
def test_a_python_error_at_module_level_has_a_caret_under_the_operation(line, col, width, tmp_path):
    """Python's own errors in module-level code (not beast's vocabulary) point at the operation
    that raised, from the code's positions (they had a file:line and no caret)."""
    path = write_space(tmp_path, f"from beast import *\na = range(3)\n{line}\n")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    lines = str(info.value).splitlines()
    assert lines[0].startswith(f"{path}:3:{col + 1}: error:") and lines[2] == "    " + " " * col + "^" * width
