"""A line-protocol file's model: :class:`Protocol` and its sections; where things are in
the file (:class:`Locator`) and the problems found (:class:`Problems`). Reading and
checking a file: :mod:`.load`.

The file is TOML (``docs/protocols/line-protocol.md`` is its reference):

- ``[protocol]``: ``name``, ``kind`` (``wheel``, ``shoe``, ``shaker``), ``format = 1``,
  ``description``, ``garbage`` (lines that must match no rule);
- ``[framing]``: how lines end and are written, their encoding and longest length,
  the silence that means a lost link, how often the device sends its state;
- ``[results]``: how many agreeing lines make a result (``lines``), where the game's
  number wraps (``wrap``);
- ``[[rule]]``: a pattern, the event its lines are, its fields, its part in a result,
  and example lines (:mod:`.rules`);
- ``[[command]]``: what the host sends (:mod:`.commands`);
- ``[flags]`` and ``[[flag]]`` (a wheel): what the warning bits of its state lines
  mean and do (:mod:`.flags`).

Every problem is one line naming the file, the line of the table or key at fault and
the problem (``ss2.toml:31: rule 'status': field 'spin': ...``); all are reported at
once (:class:`ProtocolInvalid`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .patterns import MAX_LINE_LIMIT

__all__ = [
    "FORMAT",
    "Framing",
    "Locator",
    "Problems",
    "Protocol",
    "ProtocolInvalid",
    "Results",
    "read_framing",
    "read_results",
    "read_section",
]

#: The file format this software reads (``[protocol] format``).
FORMAT = 1

ENDS: dict[str, bytes | None] = {"CR or LF": None, "CR LF": b"\r\n", "LF": b"\n", "CR": b"\r"}
SEND_ENDS: dict[str, bytes] = {"CR LF": b"\r\n", "LF": b"\n", "CR": b"\r", "": b""}
ENCODINGS = ("ascii", "latin-1", "utf-8")
SECTIONS = ("protocol", "framing", "results", "rule", "command", "flags", "flag")


class ProtocolInvalid(ValueError):
    """A line-protocol file that cannot be used: every problem, one line each."""

    code = "PROTOCOL_INVALID"

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(f"{source}: {len(problems)} problem(s)\n" + "\n".join(problems))


class Locator:
    """Where a table, an array's element or a key is in the file's text (tomllib
    gives no positions): the line of its header, or of ``key =`` under it."""

    _HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\"-]+)\s*\]\]?")

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.headers: list[tuple[int, str, bool]] = []  # (line, name, is array element)
        for no, line in enumerate(self.lines, 1):
            m = self._HEADER.match(line)
            if m:
                self.headers.append((no, m.group(2).replace('"', ""), m.group(1) == "[["))

    def table(self, name: str, index: int | None = None) -> int:
        """The line of ``[name]`` or of the ``index``-th ``[[name]]`` (0 if absent)."""
        seen = 0
        for no, header, array in self.headers:
            if header != name:
                continue
            if index is None and not array:
                return no
            if index is not None and array:
                if seen == index:
                    return no
                seen += 1
        return 0

    def key(self, name: str, key: str, index: int | None = None) -> int:
        """The line of ``key = `` (or ``key.x = ``) in that table, else (a dotted key,
        ``fields.state``) the line of its first part, else the table's line."""
        start = self.table(name, index)
        if not start:
            return 0
        while True:
            pattern = re.compile(rf"^\s*\"?{re.escape(key)}\"?\s*[=.]")
            for no in range(start + 1, len(self.lines) + 1):
                if self._HEADER.match(self.lines[no - 1]):
                    break
                if pattern.match(self.lines[no - 1]):
                    return no
            if "." not in key:
                return start
            key = key.rsplit(".", 1)[0]


@dataclass
class Problems:
    """The problems found so far, each placed in the file."""

    source: str
    where: Locator
    found: list[str] = field(default_factory=list)

    def add(self, line: int, text: str) -> None:
        self.found.append(f"{self.source}:{line}: {text}" if line else f"{self.source}: {text}")


@dataclass(frozen=True)
class Framing:
    """How the device's lines are cut, read and written."""

    end: bytes | None = None  # None: CR or LF, each ends a line
    send_end: bytes = b"\r\n"
    encoding: str = "ascii"
    max_line: int = 300
    printable: bool = True  # a line with a control character is garbled
    silence: float | None = None  # no byte this long: the link is lost (s)
    status_every: float = 0.5  # the device's state lines this often (a raw capture's clock)


@dataclass(frozen=True)
class Results:
    """How a result is confirmed: ``lines`` lines carrying it, none another."""

    lines: int = 1
    wrap: int | None = None  # the game number after ``wrap`` is 1


@dataclass(frozen=True)
class Protocol:
    """A checked line-protocol file."""

    source: str
    name: str
    kind: str
    description: str
    framing: Framing
    results: Results
    rules: tuple[Any, ...]  # rules.Rule
    commands: Mapping[str, Any]  # commands.Command by name
    flags: Any = None  # flags.FlagTable, a wheel's warning bits
    garbage: tuple[str, ...] = ()

    def rule(self, name: str) -> Any:
        return next(r for r in self.rules if r.name == name)


def read_section(
    doc: Mapping[str, Any], name: str, p: Problems, keys: dict[str, type | tuple[type, ...]]
) -> dict[str, Any]:
    value = doc.get(name, {})
    line = p.where.table(name)
    if not isinstance(value, Mapping):
        p.add(line, f"[{name}]: expected a table")
        return {}
    out: dict[str, Any] = {}
    for key, v in value.items():
        want = keys.get(key)
        if want is None:
            p.add(p.where.key(name, key), f"[{name}] {key}: unknown key; known: {', '.join(keys)}")
        elif (
            isinstance(v, bool) and bool not in (want if isinstance(want, tuple) else (want,))
        ) or not isinstance(v, want):
            p.add(p.where.key(name, key), f"[{name}] {key}: expected {_kind(want)}, got {v!r}")
        else:
            out[key] = v
    return out


def _kind(want: type | tuple[type, ...]) -> str:
    names = {str: "text", int: "a whole number", bool: "true or false", list: "a list"}
    items = want if isinstance(want, tuple) else (want,)
    return " or ".join(names.get(t, t.__name__) for t in items)


def _range(p: Problems, name: str, key: str, value: int, lo: int, hi: int) -> bool:
    if lo <= value <= hi:
        return True
    p.add(p.where.key(name, key), f"[{name}] {key}: {value} is outside {lo}..{hi}")
    return False


def read_framing(doc: Mapping[str, Any], p: Problems) -> Framing:
    s = read_section(doc, "framing", p, {
        "end": str, "send_end": str, "encoding": str, "max_line": int, "printable": bool,
        "silence_ms": int, "status_every_ms": int,
    })  # fmt: skip
    f = Framing()
    end, send_end, encoding = f.end, f.send_end, f.encoding
    if "end" in s:
        if s["end"] in ENDS:
            end = ENDS[s["end"]]
        else:
            p.add(
                p.where.key("framing", "end"),
                f"[framing] end: {s['end']!r} is none of {', '.join(map(repr, ENDS))}",
            )
    if "send_end" in s:
        if s["send_end"] in SEND_ENDS:
            send_end = SEND_ENDS[s["send_end"]]
        else:
            p.add(
                p.where.key("framing", "send_end"),
                f"[framing] send_end: {s['send_end']!r} is none of {', '.join(map(repr, SEND_ENDS))}",
            )
    if "encoding" in s:
        if s["encoding"] in ENCODINGS:
            encoding = s["encoding"]
        else:
            p.add(
                p.where.key("framing", "encoding"),
                f"[framing] encoding: {s['encoding']!r} is none of {', '.join(ENCODINGS)}",
            )
    max_line = s.get("max_line", f.max_line)
    if not _range(p, "framing", "max_line", max_line, 1, MAX_LINE_LIMIT):
        max_line = f.max_line
    silence = s.get("silence_ms", 0)
    if not _range(p, "framing", "silence_ms", silence, 0, 600_000):
        silence = 0
    every = s.get("status_every_ms", 500)
    if not _range(p, "framing", "status_every_ms", every, 1, 600_000):
        every = 500
    return Framing(
        end, send_end, encoding, max_line, s.get("printable", True),
        silence / 1000 if silence else None, every / 1000,
    )  # fmt: skip


def read_results(doc: Mapping[str, Any], p: Problems) -> Results:
    s = read_section(doc, "results", p, {"lines": int, "wrap": int})
    lines = s.get("lines", 1)
    if not _range(p, "results", "lines", lines, 1, 10):
        lines = 1
    wrap = s.get("wrap")
    if wrap is not None and not _range(p, "results", "wrap", wrap, 1, 10**9):
        wrap = None
    return Results(lines, wrap)
