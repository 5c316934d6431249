"""What the host sends: a file's ``[[command]]`` tables.

::

    [[command]]
    name = "start_game"                  # the driver's start_game() sends it
    send = "*u {direction}"              # the line, {field} replaced (the end is framing.send_end)
    fields.direction = { map = { clockwise = "1", anticlockwise = "3" }, default = "clockwise" }
    reply = "reply"                      # the rule whose line answers it (optional)
    answer = { letter = "u" }            # ... the fields that make a line of it this answer
    ok = { text = ["OK"] }               # an answer with other values: refused

A field is given as ``values`` (the text must be one of them), ``map`` (the value
given is looked up) or ``pattern`` (the text must match it), with an optional
``default``. Whatever is given, the line sent never holds a control character (a
line end inside a value cannot inject a second command). ``every_ms`` sends the
command periodically while the link is up (a poll).

The driver of a kind sends these by name: a wheel's ``start_game`` (field
``direction``) and ``restart`` (after a void that needs it), a shaker's ``shake`` and
``read_dice``; any command with :meth:`LineDriver.command`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .rules import Line, Rule
from .spec import Problems

__all__ = ["Command", "CommandError", "CommandField", "read_commands"]

_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
_SLOT = re.compile(r"\{([^{}]*)\}")
_KEYS = ("name", "send", "fields", "reply", "answer", "ok", "every_ms")


class CommandError(ValueError):
    """A command that cannot be sent as asked (an unknown name, a value refused)."""


@dataclass(frozen=True)
class CommandField:
    name: str
    values: tuple[str, ...] | None = None
    mapping: Mapping[str, str] | None = None
    pattern: re.Pattern[str] | None = None
    default: str | None = None

    def text(self, value: Any) -> str:
        if value is None:
            if self.default is None:
                raise CommandError(f"field {self.name!r} is required")
            value = self.default
        given = ("true" if value else "false") if isinstance(value, bool) else str(value)
        if self.mapping is not None:
            if given not in self.mapping:
                raise CommandError(
                    f"field {self.name!r}: {given!r} is none of {', '.join(self.mapping)}"
                )
            return self.mapping[given]
        if self.values is not None and given not in self.values:
            raise CommandError(
                f"field {self.name!r}: {given!r} is none of {', '.join(self.values)}"
            )
        if self.pattern is not None and not self.pattern.fullmatch(given):
            raise CommandError(
                f"field {self.name!r}: {given!r} does not match {self.pattern.pattern!r}"
            )
        return given


@dataclass(frozen=True)
class Command:
    name: str
    send: str
    fields: Mapping[str, CommandField]
    reply: str | None = None  # the rule whose lines answer it
    answer: Mapping[str, str] | None = None  # fields a line of that rule must carry
    ok: Mapping[str, tuple[str, ...]] | None = None  # fields of a successful answer
    every: float | None = None  # sent this often (s) while the link is up
    line: int = 0

    def render(self, values: Mapping[str, Any], encoding: str, end: bytes) -> bytes:
        """The line to send (with its end); :class:`CommandError` if a value is refused."""
        unknown = sorted(set(values) - set(self.fields))
        if unknown:
            raise CommandError(f"command {self.name!r} has no field {', '.join(unknown)}")
        text = _SLOT.sub(lambda m: self.fields[m.group(1)].text(values.get(m.group(1))), self.send)
        if any(c < " " or c == "\x7f" for c in text):
            raise CommandError(f"command {self.name!r}: a control character in {text!r}")
        try:
            return text.encode(encoding) + end
        except UnicodeEncodeError:
            raise CommandError(f"command {self.name!r}: {text!r} is not {encoding} text") from None

    def answers(self, line: Line) -> bool:
        """Whether ``line`` is this command's answer."""
        if self.reply is None or line.rule.name != self.reply:
            return False
        return all(str(line.fields.get(k, "")) == v for k, v in (self.answer or {}).items())

    def accepted(self, line: Line) -> bool:
        """Whether the answer says the command was done."""
        return all(str(line.fields.get(k, "")) in vs for k, vs in (self.ok or {}).items())


def read_commands(value: Any, rules: list[Rule], p: Problems) -> dict[str, Command]:
    if value is None:
        return {}
    if not isinstance(value, list):
        p.add(p.where.table("command"), "command: expected [[command]] tables")
        return {}
    out: dict[str, Command] = {}
    for i, item in enumerate(value):
        cmd = _read(i, item, {r.name: r for r in rules}, p)
        if cmd is not None:
            if cmd.name in out:
                p.add(cmd.line, f"command {cmd.name!r}: a second command of this name")
            out[cmd.name] = cmd
    return out


def _read(i: int, item: Any, rules: Mapping[str, Rule], p: Problems) -> Command | None:
    line = p.where.table("command", i)
    if not isinstance(item, Mapping):
        p.add(line, f"command {i + 1}: expected a table")
        return None
    name = item.get("name")
    label = f"command {name!r}" if isinstance(name, str) else f"command {i + 1}"
    before = len(p.found)

    def bad(key: str, text: str) -> None:
        p.add(p.where.key("command", key, i), f"{label}: {text}")

    for key in item:
        if key not in _KEYS:
            bad(key, f"unknown key {key!r}; known: {', '.join(_KEYS)}")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        bad("name", "'name' must be 1-40 lower-case letters, digits or '_', starting with a letter")
    send = item.get("send")
    if not isinstance(send, str) or not send:
        bad("send", "'send' (the line to send) is required")
        send = ""
    elif any(c < " " or c == "\x7f" for c in send):
        bad("send", "a control character in 'send' (the line's end is framing.send_end)")
    fields = _fields(item.get("fields", {}), bad)
    for slot in _SLOT.findall(send):
        if slot not in fields:
            bad("send", f"{{{slot}}} has no fields.{slot}")
    rest = _SLOT.sub("", send)
    if "{" in rest or "}" in rest:
        bad("send", "braces are only for {field} slots")
    for f in fields:
        if "{" + f + "}" not in send:
            bad("fields", f"field {f!r} is not in 'send'")
    reply = item.get("reply")
    if reply is not None and reply not in rules:
        bad("reply", f"reply {reply!r} is not a rule of the file")
        reply = None
    answer = _texts(item.get("answer"), "answer", bad, single=True)
    ok = _texts(item.get("ok"), "ok", bad, single=False)
    if reply is None and (answer or ok):
        bad("reply", "'answer' and 'ok' need 'reply' (the rule whose lines answer it)")
    if reply is not None:
        groups = set(rules[reply].pattern.groupindex)
        for key in [*(answer or {}), *(ok or {})]:
            if key not in groups:
                bad("answer", f"rule {reply!r} has no field {key!r}")
    every = item.get("every_ms")
    if every is not None and (
        isinstance(every, bool) or not isinstance(every, int) or not 100 <= every <= 600_000
    ):
        bad("every_ms", "'every_ms' is a period of 100..600000 ms")
        every = None
    if len(p.found) != before:
        return None
    assert isinstance(name, str)
    return Command(
        name, send, fields, reply, answer, ok, every / 1000 if every else None, line
    )  # fmt: skip


def _fields(value: Any, bad: Any) -> dict[str, CommandField]:
    if not isinstance(value, Mapping):
        bad("fields", "'fields' must be a table")
        return {}
    out = {}
    for name, spec in value.items():
        if not isinstance(spec, Mapping) or len({"values", "map", "pattern"} & set(spec)) != 1:
            bad("fields", f"field {name!r}: one of values = [...], map = {{...}}, pattern = '...'")
            continue
        extra = set(spec) - {"values", "map", "pattern", "default"}
        if extra:
            bad("fields", f"field {name!r}: unknown key(s) {', '.join(sorted(extra))}")
            continue
        values = mapping = pattern = None
        if "values" in spec:
            values = spec["values"]
            if (
                not isinstance(values, list)
                or not values
                or not all(isinstance(v, str) for v in values)
            ):
                bad("fields", f"field {name!r}: 'values' is a list of texts")
                continue
            values = tuple(values)
        elif "map" in spec:
            mapping = spec["map"]
            if (
                not isinstance(mapping, Mapping)
                or not mapping
                or not all(isinstance(v, str) for v in mapping.values())
            ):
                bad("fields", f"field {name!r}: 'map' is a table of value = text")
                continue
            mapping = dict(mapping)
        else:
            try:
                pattern = re.compile(str(spec["pattern"]))
            except re.error as exc:
                bad("fields", f"field {name!r}: pattern does not compile: {exc.msg}")
                continue
        default = spec.get("default")
        if default is not None and not isinstance(default, str):
            bad("fields", f"field {name!r}: 'default' is a text")
            continue
        cf = CommandField(str(name), values, mapping, pattern, default)
        if default is not None:
            try:
                cf.text(None)
            except CommandError as exc:
                bad("fields", f"field {name!r}: default {default!r}: {exc}")
                continue
        out[str(name)] = cf
    return out


def _texts(value: Any, key: str, bad: Any, *, single: bool) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        bad(key, f"'{key}' must be a table of field = text")
        return None
    out: dict[str, Any] = {}
    for k, v in value.items():
        if single and isinstance(v, str):
            out[str(k)] = v
        elif not single and isinstance(v, list) and all(isinstance(x, str) for x in v):
            out[str(k)] = tuple(v)
        else:
            want = "a text" if single else "a list of texts"
            bad(key, f"'{key}.{k}' must be {want}")
    return out
