"""A file's ``[[rule]]`` tables: each maps the lines its pattern matches to one event of
the device kind, and :class:`Matcher` reads a line with them.

A rule::

    [[rule]]
    name = "status"
    event = "game_state"                 # an event of the kind (kinds.EVENTS), or "none"
    pattern = '\\*X;(?P<state>[1-7]);(?P<spin>\\d{3})'   # named groups are fields
    fields.state = "int"                 # conversions (fields.py); a group not listed is text
    result = "repeats"                   # its part in a result (below), if any
    examples = ["*X;2;002"]              # lines it must read, and no other rule may

A named group whose name starts with ``_`` is no field (a separator a back-reference
repeats: ``(?P<_sep>[;:])...(?P=_sep)``). Every other group must be a field of the
event. ``result`` (the confirmation, ``[results] lines``):

- ``"shows"`` (a result event's default): the line shows the game's result; it starts a
  result and counts as one of its lines;
- ``"precedes"`` (a wheel's ``winning_number``): the line comes just before the line
  that starts the result, counts for it if it shows the same number (and disputes it
  if not), never starts one itself (a torn line such as the SS2's ``1`` looks alike);
- ``"repeats"`` (a wheel's ``game_state`` with a ``number``): its ``number`` repeats the
  last result until the next one: in state 5 it shows the game's result, in the
  game's states 5, 6 and 1 after it and in the next game's first line it counts for
  it (or disputes it).

**Ambiguity** is checked on the examples, not on the patterns: whether two Python
regular expressions (with look-arounds and back-references) can match one line is
undecidable in general, so every rule must give example lines, and each example must
be read by its own rule and by no other; ``[protocol] garbage`` lines must be read by
none. At run time a line matched by two rules is garbled, never an event.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .fields import FieldConv, FieldError, parse_field
from .kinds import EVENTS, RESULT_EVENTS, check_value
from .patterns import compile_pattern
from .spec import Framing, Problems, Protocol

__all__ = ["Line", "Matcher", "Rule", "Unmatched", "check_examples", "read_rules"]

_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")
_RULE_KEYS = ("name", "event", "pattern", "fields", "result", "examples")


@dataclass(frozen=True)
class Rule:
    """One checked ``[[rule]]``."""

    name: str
    event: str
    pattern: re.Pattern[str]
    fields: tuple[FieldConv, ...]
    result: str  # "", "shows", "precedes", "repeats"
    examples: tuple[str, ...]
    line: int  # the line of its [[rule]] header


@dataclass(frozen=True)
class Line:
    """A line read by one rule, with its fields converted."""

    rule: Rule
    fields: Mapping[str, Any]
    raw: bytes

    @property
    def event(self) -> str:
        return self.rule.event


@dataclass(frozen=True)
class Unmatched:
    """A line that is no event: why, and its bytes."""

    reason: str
    raw: bytes


def _roles(kind: str, event: str) -> tuple[str, ...]:
    """The ``result`` values a rule of ``event`` may take (its default first)."""
    if kind == "wheel" and event == "game_state":
        return ("", "repeats")
    if kind == "wheel" and event == "winning_number":
        return ("shows", "precedes")
    if RESULT_EVENTS[kind][0] == event:
        return ("shows",)
    return ("",)


def read_rules(value: Any, kind: str, framing: Framing, p: Problems) -> list[Rule]:
    """The file's rules (problems added to ``p``)."""
    if value is None:
        p.add(0, "[[rule]]: a protocol needs rules")
        return []
    if not isinstance(value, list):
        p.add(p.where.table("rule"), "rule: expected [[rule]] tables")
        return []
    rules: list[Rule] = []
    before = len(p.found)
    for i, item in enumerate(value):
        rule = _read_rule(i, item, kind, p)
        if rule is not None:
            if any(r.name == rule.name for r in rules):
                p.add(rule.line, f"rule {rule.name!r}: a second rule of this name")
            rules.append(rule)
    if len(p.found) != before:
        return rules  # what the whole file needs is checked once every rule reads
    events = {r.event for r in rules}
    if kind == "wheel" and "game_state" not in events:
        p.add(0, "a wheel's file needs a game_state rule: betting opens at state 2 and closes at 4")
    result_event = RESULT_EVENTS[kind][0]
    if not any(r.result in ("shows", "repeats") for r in rules):
        p.add(
            0,
            f'no rule shows a result: a {result_event} rule, or (a wheel) a game_state rule with result = "repeats"',
        )
    return rules


def _read_rule(i: int, item: Any, kind: str, p: Problems) -> Rule | None:
    line = p.where.table("rule", i)
    if not isinstance(item, Mapping):
        p.add(line, f"rule {i + 1}: expected a table")
        return None
    name = item.get("name")
    label = f"rule {name!r}" if isinstance(name, str) else f"rule {i + 1}"
    before = len(p.found)

    def bad(key: str | None, text: str) -> None:
        p.add(p.where.key("rule", key, i) if key else line, f"{label}: {text}")

    for key in item:
        if key not in _RULE_KEYS:
            bad(key, f"unknown key {key!r}; known: {', '.join(_RULE_KEYS)}")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        bad(
            "name",
            "'name' must be 1-40 lower-case letters, digits, '_' or '-', starting with a letter",
        )
    event = item.get("event")
    events = EVENTS[kind]
    if event not in events:
        bad("event", f"event {event!r} is not one of a {kind}'s: {', '.join(events)}")
        return None
    text = item.get("pattern")
    pattern = None
    if not isinstance(text, str) or not text:
        bad("pattern", "'pattern' (a regular expression) is required")
    else:
        pattern, why = compile_pattern(text)
        if why:
            bad("pattern", why)
    convs = _fields(item.get("fields", {}), bad)
    roles = _roles(kind, event)
    result = item.get("result", roles[0])
    if result not in roles:
        allowed = " or ".join(repr(r) for r in roles if r) or "nothing"
        bad("result", f"result {result!r}: a {event} rule's lines may be {allowed}")
    examples = item.get("examples")
    if (
        not isinstance(examples, list)
        or not examples
        or not all(isinstance(e, str) for e in examples)
    ):
        bad(
            "examples",
            "'examples' (a list of lines it reads) is required: each must be read by this rule alone",
        )
        examples = []
    if pattern is None:
        return None
    convs = _check_groups(pattern, convs, kind, event, bad)
    if result == "repeats" and not any(c.name == "number" for c in convs):
        bad(
            "result",
            "result = \"repeats\" needs a 'number' field (the last result the line repeats)",
        )
    if len(p.found) != before:
        return None
    assert isinstance(name, str)
    return Rule(name, event, pattern, tuple(convs), result, tuple(examples), line)


def _fields(value: Any, bad: Any) -> list[FieldConv]:
    if not isinstance(value, Mapping):
        bad("fields", "'fields' must be a table: field = conversion")
        return []
    out = []
    for name, spec in value.items():
        conv, why = parse_field(str(name), spec)
        if why:
            bad(f"fields.{name}", why)
        elif conv is not None:
            out.append(conv)
    return out


def _check_groups(
    pattern: re.Pattern[str], convs: list[FieldConv], kind: str, event: str, bad: Any
) -> list[FieldConv]:
    """The rule's fields: those listed, and a text field for each other named group."""
    groups = set(pattern.groupindex)
    fields = EVENTS[kind][event]
    sources = {c.source for c in convs}
    for c in convs:
        if c.source not in groups:
            bad(
                "fields",
                f"field {c.name!r} reads group {c.source!r}, which the pattern does not have (its groups: {', '.join(sorted(groups)) or 'none'})",
            )
        if event != "none" and c.name not in fields:
            bad(
                "fields",
                f"field {c.name!r} is not a field of {event} (its fields: {', '.join(fields)})",
            )
    out = list(convs)
    for g in sorted(groups - sources):
        if g.startswith("_") or any(c.name == g for c in convs):
            continue
        if event != "none" and g not in fields:
            bad(
                "pattern",
                f"group {g!r} is not a field of {event} (its fields: {', '.join(fields)}); name it _{g} to use it only in the pattern",
            )
            continue
        out.append(FieldConv(g, g, "text"))
    names = {c.name for c in out}
    for f in fields.values():
        if f.required and f.name not in names:
            bad(
                "pattern",
                f"{event} needs the field {f.name!r} ({f.doc}): a group (?P<{f.name}>...) or fields.{f.name}",
            )
    return out


class Matcher:
    """Reads one line (without its end) with a protocol's rules."""

    def __init__(self, protocol: Protocol) -> None:
        self.kind = protocol.kind
        self.rules: tuple[Rule, ...] = protocol.rules
        self.framing = protocol.framing

    def match(self, raw: bytes) -> Line | Unmatched:
        """The rule that reads ``raw`` with its fields, or why none does."""
        f = self.framing
        if len(raw) > f.max_line:
            return Unmatched(f"line of {len(raw)} bytes is longer than {f.max_line}", raw)
        try:
            text = raw.decode(f.encoding)
        except UnicodeDecodeError:
            return Unmatched(f"not {f.encoding} text", raw)
        if f.printable and any(c < " " or c == "\x7f" for c in text):
            return Unmatched("control character in the line", raw)
        found: list[tuple[Rule, re.Match[str]]] = []
        for rule in self.rules:
            m = rule.pattern.fullmatch(text)
            if m is not None:
                found.append((rule, m))
        if not found:
            return Unmatched("no rule reads it", raw)
        if len(found) > 1:
            names = " and ".join(repr(r.name) for r, _ in found)
            return Unmatched(f"ambiguous: rules {names} both read it", raw)
        rule, m = found[0]
        values: dict[str, Any] = {}
        for conv in rule.fields:
            try:
                value = conv.convert(m.group(conv.source))
            except FieldError as exc:
                return Unmatched(f"rule {rule.name!r}: field {conv.name!r}: {exc}", raw)
            why = check_value(self.kind, rule.event, conv.name, value)
            if why is not None:
                return Unmatched(f"rule {rule.name!r}: field {conv.name!r}: {why}", raw)
            if value is not None:
                values[conv.name] = value
        for spec in EVENTS[self.kind][rule.event].values():
            if spec.required and spec.name not in values:
                return Unmatched(f"rule {rule.name!r}: no {spec.name!r} in the line", raw)
        return Line(rule, values, raw)


def check_examples(protocol: Protocol, p: Problems) -> None:
    """Every example read by its own rule alone; every garbage line by none."""
    matcher = Matcher(protocol)
    encoding = protocol.framing.encoding
    for i, rule in enumerate(protocol.rules):
        for example in rule.examples:
            where = p.where.key("rule", "examples", i)
            try:
                raw = example.encode(encoding)
            except UnicodeEncodeError:
                p.add(where, f"rule {rule.name!r}: example {example!r} is not {encoding} text")
                continue
            got = matcher.match(raw)
            if isinstance(got, Unmatched):
                p.add(where, f"rule {rule.name!r}: example {example!r}: {got.reason}")
            elif got.rule is not rule:
                p.add(
                    where,
                    f"rule {rule.name!r}: example {example!r} is read by rule {got.rule.name!r}",
                )
    for line in protocol.garbage:
        try:
            raw = line.encode(encoding)
        except UnicodeEncodeError:
            continue
        got = matcher.match(raw)
        if isinstance(got, Line):
            p.add(
                p.where.key("protocol", "garbage"),
                f"[protocol] garbage: {line!r} is read by rule {got.rule.name!r}",
            )
