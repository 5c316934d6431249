"""Reading and checking a line-protocol file: :func:`load_protocol` -> :class:`Protocol`
(every problem at once, :class:`ProtocolInvalid`)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from .commands import read_commands
from .flags import read_flags
from .kinds import KINDS
from .rules import check_examples, read_rules
from .spec import (
    FORMAT,
    SECTIONS,
    Locator,
    Problems,
    Protocol,
    ProtocolInvalid,
    read_framing,
    read_results,
    read_section,
)

__all__ = ["load_protocol", "read_protocol"]


def read_protocol(text: str, source: str = "<protocol>") -> Protocol:
    """Check a file's text; raise :class:`ProtocolInvalid` listing every problem."""
    p = Problems(source, Locator(text))
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProtocolInvalid(source, [f"{source}: not valid TOML: {exc}"]) from None
    except RecursionError:
        raise ProtocolInvalid(source, [f"{source}: arrays or tables nested too deeply"]) from None
    for key in doc:
        if key not in SECTIONS:
            line = p.where.table(key) or p.where.table(key, 0) or _top_key_line(p.where, key)
            p.add(line, f"{key}: unknown section; known: {', '.join(SECTIONS)}")
    head = read_section(
        doc,
        "protocol",
        p,
        {"name": str, "kind": str, "format": int, "description": str, "garbage": list},
    )
    line = p.where.table("protocol")
    if "protocol" not in doc:
        p.add(0, "[protocol]: required (name, kind, format)")
    for key in ("name", "kind", "format"):
        if "protocol" in doc and key not in head:
            p.add(line, f"[protocol] {key}: required")
    kind = head.get("kind")
    if kind is not None and kind not in KINDS:
        p.add(
            p.where.key("protocol", "kind"),
            f"[protocol] kind: {kind!r} is none of {', '.join(KINDS)}",
        )
        kind = None
    if "format" in head and head["format"] != FORMAT:
        p.add(
            p.where.key("protocol", "format"),
            f"[protocol] format: {head['format']} is not {FORMAT}, the format this software reads",
        )
    garbage = head.get("garbage", [])
    if not all(isinstance(g, str) for g in garbage):
        p.add(
            p.where.key("protocol", "garbage"),
            "[protocol] garbage: expected a list of lines (text)",
        )
        garbage = []
    framing = read_framing(doc, p)
    results = read_results(doc, p)
    if kind is None:
        raise ProtocolInvalid(source, p.found)
    rules = read_rules(doc.get("rule"), kind, framing, p)
    commands = read_commands(doc.get("command"), rules, p)
    flags = read_flags(doc, kind, rules, p)
    protocol = Protocol(
        source, str(head.get("name", "")), kind, str(head.get("description", "")),
        framing, results, tuple(rules), commands, flags, tuple(garbage),
    )  # fmt: skip
    if not p.found:
        check_examples(protocol, p)
    if p.found:
        raise ProtocolInvalid(source, p.found)
    return protocol


def _top_key_line(where: Locator, key: str) -> int:
    pattern = re.compile(rf"^\s*\"?{re.escape(key)}\"?\s*[=.]")
    return next((no for no, line in enumerate(where.lines, 1) if pattern.match(line)), 0)


def load_protocol(path: str | Path) -> Protocol:
    """Read and check the file at ``path`` (:class:`ProtocolInvalid` if it cannot be)."""
    where = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ProtocolInvalid(where, [f"{where}: cannot read it: {exc.strerror or exc}"]) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolInvalid(where, [f"{where}: not UTF-8 text (offset {exc.start})"]) from None
    return read_protocol(text, where)
