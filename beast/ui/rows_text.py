"""The bytes of enumerated rows (``beast enumerate -o rows.csv|rows.jsonl|rows.npy``), a chunk at
a time, the same bytes ``np.savetxt``, ``json.dumps`` and ``np.save`` write for the whole table.

A chunk (a structured array of int64 fields) becomes its text in NumPy without a Python call per
value: each column's decimal digits go right-aligned into a byte field as wide as the column's
widest value, after the bytes that come before the value (``,`` or ``, "name": ``), and a mask
of the bytes in use keeps what ``np.savetxt(fmt="%d", delimiter=",")`` or ``json.dumps`` of
each row would write, padding left out.
"""
from __future__ import annotations

import io
import json

import numpy as np

_DIGIT0, _MINUS = ord("0"), ord("-")
_POWERS = [10 ** k for k in range(1, 20)]        # int64 magnitudes have at most 19 digits


def csv_header(names) -> bytes:
    """The CSV header line: the column names, comma-separated."""
    return (",".join(names) + "\n").encode()


def csv_block(chunk, names) -> bytes:
    """The CSV lines of ``chunk``'s rows (columns ``names``), as ``np.savetxt(fh, table,
    fmt="%d", delimiter=",")`` writes them; a row of no columns is an empty line."""
    names = list(names)
    if not names:
        return b"\n" * len(chunk)
    return _text(chunk, names, [b""] + [b","] * (len(names) - 1), b"\n")


def jsonl_block(chunk, names) -> bytes:
    """The JSON Lines of ``chunk``'s rows: ``json.dumps({name: int(value), ...})`` per row."""
    names = list(names)
    if not names:
        return b"{}\n" * len(chunk)
    keys = [json.dumps(n).encode() + b": " for n in names]
    return _text(chunk, names, [b"{" + keys[0]] + [b", " + k for k in keys[1:]], b"}\n")


def npy_header(dtype, rows: int) -> bytes:
    """The header ``np.save`` writes for a 1-D array of ``rows`` rows of ``dtype``: the rows'
    bytes (C order) follow it.  The oldest format version that holds it, as np.save picks."""
    from numpy.lib import format as npy_format
    header = {"descr": npy_format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False,
              "shape": (int(rows),)}
    for version in (npy_format.write_array_header_1_0, npy_format.write_array_header_2_0):
        out = io.BytesIO()
        try:
            version(out, header)
            return out.getvalue()
        except ValueError:                    # too long for 1.0; names beyond Latin-1 for 2.0
            pass
    # Version 3.0 (UTF-8 names) has no public writer: np.save's own choice of version.
    write = getattr(npy_format, "_write_array_header", None)
    if write is None:
        from numpy.lib import _format_impl
        write = _format_impl._write_array_header
    out = io.BytesIO()
    write(out, header, None)
    return out.getvalue()


def _text(chunk, names, before, end: bytes) -> bytes:
    """Each row: for each column, ``before[i]`` then the value in decimal; then ``end``."""
    rows = len(chunk)
    if rows == 0:
        return b""
    fields = []                  # (|value|, where negative or None, digit count, field width)
    for name in names:
        values = np.asarray(chunk[name], dtype=np.int64)
        negative = values < 0
        magnitude = values.view(np.uint64).copy()
        np.negative(magnitude, out=magnitude, where=negative)   # |INT64_MIN| too, in uint64
        top = int(magnitude.max())
        for narrow in (np.uint8, np.uint16, np.uint32):   # the smallest type is the fastest to divide
            if top <= np.iinfo(narrow).max:
                magnitude = magnitude.astype(narrow)
                break
        digits = np.ones(rows, dtype=np.int8)
        for power in _POWERS:
            if power > top:
                break
            digits += magnitude >= power
        sign = bool(negative.any())
        fields.append((magnitude, negative if sign else None, digits, len(str(top)) + sign))
    width = sum(len(b) + w for b, (_, _, _, w) in zip(before, fields)) + len(end)
    out = np.empty((rows, width), dtype=np.uint8)
    keep = np.ones((rows, width), dtype=bool)
    at = 0
    for prefix, (magnitude, negative, digits, w) in zip(before, fields):
        if prefix:
            out[:, at:at + len(prefix)] = np.frombuffer(prefix, dtype=np.uint8)
            at += len(prefix)
        field = out[:, at:at + w]
        for k in range(w - 1, -1, -1):        # digits from the right; zeros past the top one
            field[:, k] = magnitude % 10
            magnitude //= 10
        field += _DIGIT0
        used = digits if negative is None else digits + negative
        keep[:, at:at + w] = np.arange(w, dtype=np.int8) >= (w - used)[:, None]
        if negative is not None:              # the sign just before the first digit
            rows_neg = np.nonzero(negative)[0]
            field[rows_neg, w - 1 - digits[rows_neg]] = _MINUS
        at += w
    out[:, at:] = np.frombuffer(end, dtype=np.uint8)
    return out[keep].tobytes()


__all__ = ["csv_header", "csv_block", "jsonl_block", "npy_header"]
