"""Exact byte deltas between two versions of one component file.

A delta is a sequence of operations that rebuild the target from the base:

* ``COPY length offset``: the next ``length`` bytes are ``base[offset : offset + length]``;
* ``INSERT length bytes``: the next ``length`` bytes are literal.

Each operation starts with one unsigned LEB128 varint ``length << 1 | kind`` (kind 0 = insert,
1 = copy); a copy is followed by the offset as a varint, an insert by its bytes. The encoder
strips the common prefix and suffix, then matches whole lines of the middle with difflib, which
is what edits to Markdown and JSON look like (a sentence changed, a parameter added). Decoding
is a loop over the operations, so a round trip is exact by construction; the store still checks
the sha256 of every decoded blob.
"""

from __future__ import annotations

import difflib

_INSERT = 0
_COPY = 1
# Below this many bytes a matched run is cheaper to insert than to copy (tag + offset varints).
_MIN_COPY = 8
# Line matching is quadratic in the worst case; past this many lines we keep prefix/suffix only.
_MAX_LINES = 4000
# Middles shorter than this are inserted whole: matching lines inside them cannot pay off.
_MIN_MATCH_MIDDLE = 48


class DeltaError(ValueError):
    """A delta that does not apply to the given base (corrupt data)."""


def _varint(value: int, out: bytearray) -> None:
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while True:
        if pos >= len(data):
            raise DeltaError("truncated delta")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise DeltaError("varint too long")


def _common_prefix(a: bytes, b: bytes, limit: int) -> int:
    """Length of the longest common prefix of a and b, at most `limit` (binary search, memcmp)."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: bytes, b: bytes, limit: int) -> int:
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class _Ops:
    """Collects operations, merging neighbours (adjacent inserts; contiguous copies)."""

    def __init__(self, target: bytes) -> None:
        self.target = target
        self.ops: list[tuple[int, int, int]] = []  # (kind, start, length); start in base/target

    def insert(self, start: int, length: int) -> None:
        if length <= 0:
            return
        if self.ops and self.ops[-1][0] == _INSERT:
            kind, first, size = self.ops[-1]
            self.ops[-1] = (kind, first, size + length)
        else:
            self.ops.append((_INSERT, start, length))

    def copy(self, offset: int, length: int, target_start: int) -> None:
        if length <= 0:
            return
        if length < _MIN_COPY:
            self.insert(target_start, length)
            return
        if self.ops and self.ops[-1][0] == _COPY:
            kind, first, size = self.ops[-1]
            if first + size == offset:
                self.ops[-1] = (kind, first, size + length)
                return
        self.ops.append((_COPY, offset, length))

    def encode(self) -> bytes:
        out = bytearray()
        for kind, start, length in self.ops:
            _varint(length << 1 | kind, out)
            if kind == _COPY:
                _varint(start, out)
            else:
                out += self.target[start : start + length]
        return bytes(out)


def _offsets(lines: list[bytes], start: int) -> list[int]:
    offsets = [start]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    return offsets


def encode(base: bytes, target: bytes) -> bytes:
    """A delta that turns `base` into `target` (may be longer than `target` for unrelated data)."""
    n, m = len(base), len(target)
    prefix = _common_prefix(base, target, min(n, m))
    suffix = _common_suffix(base, target, min(n, m) - prefix)
    ops = _Ops(target)
    ops.copy(0, prefix, 0)
    a_mid = base[prefix : n - suffix]
    b_mid = target[prefix : m - suffix]
    a_lines = a_mid.splitlines(keepends=True)
    b_lines = b_mid.splitlines(keepends=True)
    if (
        not a_mid
        or len(b_mid) < _MIN_MATCH_MIDDLE
        or len(a_lines) > _MAX_LINES
        or len(b_lines) > _MAX_LINES
    ):
        ops.insert(prefix, len(b_mid))
    else:
        a_off = _offsets(a_lines, prefix)
        b_off = _offsets(b_lines, prefix)
        matcher = difflib.SequenceMatcher(None, a_lines, b_lines, autojunk=False)
        j_done = 0
        for i, j, size in matcher.get_matching_blocks():
            ops.insert(b_off[j_done], b_off[j] - b_off[j_done])
            ops.copy(a_off[i], a_off[i + size] - a_off[i], b_off[j])
            j_done = j + size
        ops.insert(b_off[j_done], b_off[-1] - b_off[j_done])
    ops.copy(n - suffix, suffix, m - suffix)
    return ops.encode()


def decode(base: bytes, delta: bytes) -> bytes:
    """Apply `delta` to `base`; raise DeltaError when the delta does not fit the base."""
    out = bytearray()
    pos = 0
    end = len(delta)
    while pos < end:
        tag, pos = _read_varint(delta, pos)
        length = tag >> 1
        if tag & 1 == _COPY:
            offset, pos = _read_varint(delta, pos)
            if offset + length > len(base):
                raise DeltaError("copy past the end of the base")
            out += base[offset : offset + length]
        else:
            if pos + length > end:
                raise DeltaError("insert past the end of the delta")
            out += delta[pos : pos + length]
            pos += length
    return bytes(out)
