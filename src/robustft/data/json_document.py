"""A JSON document read with the line of every value, so an error in record 3,017 says which line it is on.

`json.loads` returns values without positions; the readers need `file:line` for a bad record. This walks
the top-level object (and, on request, one array) itself and hands each value to the standard decoder,
keeping where it started. Syntax errors, bad UTF-8 and NUL bytes are reported with their line too.
"""

from __future__ import annotations

import bisect
import json
import re
from pathlib import Path

from robustft.errors import DataFormatError

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
KIND = {
    dict: "an object",
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


def kind(value) -> str:
    return KIND.get(type(value), type(value).__name__)


def read_text_strict(path: Path) -> str:
    """The whole file as UTF-8; a bad byte or a NUL byte is an error naming its line."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DataFormatError(path, line, f"not valid UTF-8 ({exc.reason})") from None
    nul = text.find("\x00")
    if nul >= 0:
        raise DataFormatError(path, text.count("\n", 0, nul) + 1, "NUL byte (binary or corrupt file)")
    return text


class JsonDocument:
    def __init__(self, path: Path):
        self.path = path
        self.text = read_text_strict(path)
        self.newlines = [m.start() for m in re.finditer("\n", self.text)]

    def line(self, pos: int) -> int:
        return bisect.bisect_left(self.newlines, pos) + 1

    def error(self, pos: int | None, problem: str) -> DataFormatError:
        return DataFormatError(self.path, None if pos is None else self.line(pos), problem)

    def _skip(self, pos: int) -> int:
        return _WHITESPACE.match(self.text, pos).end()

    def _value(self, pos: int):
        try:
            return _DECODER.raw_decode(self.text, pos)
        except json.JSONDecodeError as exc:
            raise self.error(exc.pos, f"invalid JSON: {exc.msg}") from None
        except RecursionError:
            raise self.error(pos, "invalid JSON: nested too deeply") from None

    def _expect(self, pos: int, char: str, what: str) -> int:
        pos = self._skip(pos)
        if self.text[pos : pos + 1] != char:
            if pos >= len(self.text):
                raise self.error(pos, f"invalid JSON: file ends where {what} was expected (truncated?)")
            found = self.text[pos : pos + 1]
            if char in "{[":  # a value of another type: name it
                found = kind(self._value(pos)[0])
            raise self.error(pos, f"expected {what}, found {found}")
        return pos + 1

    def _items(self, pos: int, close: str, member: bool) -> tuple[list, int]:
        """Members (key, value, start) of an object or elements (value, start) of an array opened before pos."""
        out: list = []
        pos = self._skip(pos)
        if self.text[pos : pos + 1] == close:
            return out, pos + 1
        seen: set[str] = set()
        while True:
            pos = self._skip(pos)
            if member:
                key_start = pos
                key, pos = self._value(pos)
                if not isinstance(key, str):
                    raise self.error(key_start, "invalid JSON: object key is not a string")
                if key in seen:
                    raise self.error(key_start, f"duplicate key {key!r}")
                seen.add(key)
                pos = self._skip(self._expect(pos, ":", "':'"))
            start = pos
            value, pos = self._value(pos)
            out.append((key, value, start) if member else (value, start))
            pos = self._skip(pos)
            char = self.text[pos : pos + 1]
            if char == ",":
                pos += 1
            elif char == close:
                return out, pos + 1
            else:
                hint = "" if char else " (truncated?)"
                raise self.error(pos, f"invalid JSON: expected ',' or '{close}'{hint}")

    def top_object(self, what: str) -> list[tuple[str, object, int]]:
        """The members of the document's one top-level object: (key, value, start offset)."""
        pos = self._expect(0, "{", f"a JSON object {what}")
        members, pos = self._items(pos, "}", member=True)
        pos = self._skip(pos)
        if pos != len(self.text):
            raise self.error(pos, "invalid JSON: extra data after the top-level object")
        return members

    def array_at(self, start: int, what: str) -> list[tuple[object, int]]:
        """The elements (value, start offset) of the array that begins at `start`."""
        return self._items(self._expect(start, "[", what), "]", member=False)[0]
