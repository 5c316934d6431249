"""A wheel's warning bits: what each means in each game state, from the file, and the
policy that applies them (:class:`FlagPolicy`).

::

    [flags]
    lines = 2                          # a bit counts once set on this many state lines in a row

    [[flag]]
    bit = 2
    code = "MISS_SPIN"
    default = { action = "warn", text = "miss-spin flag" }           # states not listed
    states.3 = { action = "void", restart = true, source = "vendor", text = "miss-spin: void, *R" }
    states.4 = { action = "ignore", grace_ms = 5000, after_grace = "void", text = "..." }

An action is ``ignore``, ``warn``, ``void`` (the game in progress is void; ``restart``:
the wheel waits for the ``restart`` command) or ``fault`` (the device's health is
FAULT while the bit stays; ``void = true`` also voids the open game). ``grace_ms``
ignores the bit that long (from its first line, or with ``grace_from = "state"`` from
entering the state), then ``after_grace`` applies (its code gets ``_PERSISTS``). The
bits are read from the ``flags`` field of the ``game_state`` rule(s) (type ``hex``
or ``int``). This is the SS2 driver's exception table (``drivers/cammegh/policy.py``)
written as data: the SS2's file states it cell for cell.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tablecommon.events.wheel import WarningCleared, WheelEvent, WheelWarning

from .rules import Rule
from .spec import Problems

__all__ = ["ACTIONS", "Flag", "FlagPolicy", "FlagRule", "FlagTable", "read_flags"]

ACTIONS = ("ignore", "warn", "void", "fault")
_CODE = re.compile(r"[A-Z][A-Z0-9_]{0,39}")
_RULE_KEYS = (
    "action",
    "text",
    "source",
    "grace_ms",
    "grace_from",
    "after_grace",
    "restart",
    "void",
)


@dataclass(frozen=True)
class FlagRule:
    action: str
    text: str
    source: str = "file"
    grace: float | None = None  # seconds
    grace_from: str = "flag"  # "flag" | "state"
    after_grace: str | None = None
    restart: bool = False
    void: bool = False


@dataclass(frozen=True)
class Flag:
    bit: int
    code: str
    states: Mapping[int, FlagRule]
    default: FlagRule

    def rule(self, state: int) -> FlagRule:
        return self.states.get(state, self.default)


@dataclass(frozen=True)
class FlagTable:
    lines: int
    flags: tuple[Flag, ...]  # by bit, lowest first

    def names(self, bits: int) -> tuple[str, ...]:
        return tuple(f.code.lower() for f in self.flags if bits & f.bit)


def read_flags(
    doc: Mapping[str, Any], kind: str, rules: list[Rule], p: Problems
) -> FlagTable | None:
    """The file's ``[flags]`` and ``[[flag]]`` (a wheel's), or None."""
    items, head = doc.get("flag"), doc.get("flags")
    if items is None and head is None:
        return None
    line = p.where.table("flags") or p.where.table("flag", 0)
    if kind != "wheel":
        p.add(line, f"[[flag]]: warning bits are a wheel's; this file describes a {kind}")
        return None
    lines = 2
    if head is not None:
        if not isinstance(head, Mapping) or set(head) - {"lines"}:
            p.add(
                p.where.table("flags"),
                "[flags]: one key, lines (bits count once set on this many lines)",
            )
        else:
            lines = head.get("lines", 2)
            if isinstance(lines, bool) or not isinstance(lines, int) or not 1 <= lines <= 10:
                p.add(p.where.key("flags", "lines"), "[flags] lines: 1..10")
                lines = 2
    if not isinstance(items, list) or not items:
        p.add(line, "[[flag]]: at least one bit and what it means")
        return None
    has_bits = any(
        r.event == "game_state" and any(c.name == "flags" for c in r.fields) for r in rules
    )
    if not has_bits and not p.found:
        p.add(line, "[[flag]]: no game_state rule has a 'flags' field to read the bits from")
    flags: dict[int, Flag] = {}
    for i, item in enumerate(items):
        flag = _flag(i, item, p)
        if flag is not None:
            if flag.bit in flags:
                p.add(
                    p.where.table("flag", i), f"flag {flag.code}: bit {flag.bit} is described twice"
                )
            flags[flag.bit] = flag
    return FlagTable(lines, tuple(flags[b] for b in sorted(flags)))


def _flag(i: int, item: Any, p: Problems) -> Flag | None:
    line = p.where.table("flag", i)
    if not isinstance(item, Mapping):
        p.add(line, f"flag {i + 1}: expected a table")
        return None
    before = len(p.found)
    extra = set(item) - {"bit", "code", "states", "default"}
    if extra:
        p.add(
            line,
            f"flag {i + 1}: unknown key(s) {', '.join(sorted(extra))} (bit, code, states, default)",
        )
    bit, code = item.get("bit"), item.get("code")
    if (
        isinstance(bit, bool)
        or not isinstance(bit, int)
        or bit <= 0
        or bit & (bit - 1)
        or bit > 1 << 30
    ):
        p.add(
            p.where.key("flag", "bit", i), f"flag {i + 1}: 'bit' is one bit's value (1, 2, 4, 8...)"
        )
    if not isinstance(code, str) or not _CODE.fullmatch(code):
        p.add(
            p.where.key("flag", "code", i),
            f"flag {i + 1}: 'code' is upper-case letters, digits, '_'",
        )
        code = f"flag {i + 1}"
    label = f"flag {code}"
    default = _rule(
        item.get("default", {"action": "warn", "text": f"{code.lower().replace('_', ' ')} flag"}),
        f"{label} default",
        p,
        p.where.key("flag", "default", i),
    )
    states: dict[int, FlagRule] = {}
    table = item.get("states", {})
    if not isinstance(table, Mapping):
        p.add(p.where.key("flag", "states", i), f"{label}: 'states' is a table of state = rule")
        table = {}
    for key, spec in table.items():
        if not key.isdigit() or not 1 <= int(key) <= 7:
            p.add(
                p.where.key("flag", "states", i), f"{label}: state {key!r} is not a game state 1-7"
            )
            continue
        rule = _rule(spec, f"{label} state {key}", p, p.where.key("flag", "states", i))
        if rule is not None:
            states[int(key)] = rule
    if len(p.found) != before or default is None:
        return None
    assert isinstance(bit, int)
    return Flag(bit, code, states, default)


def _rule(spec: Any, label: str, p: Problems, line: int) -> FlagRule | None:
    if not isinstance(spec, Mapping):
        p.add(line, f"{label}: expected a table (action, text...)")
        return None
    extra = set(spec) - set(_RULE_KEYS)
    if extra:
        p.add(
            line,
            f"{label}: unknown key(s) {', '.join(sorted(extra))}; known: {', '.join(_RULE_KEYS)}",
        )
        return None
    action, after = spec.get("action"), spec.get("after_grace")
    grace = spec.get("grace_ms")
    problems = []
    if action not in ACTIONS:
        problems.append(f"action {action!r} is none of {', '.join(ACTIONS)}")
    if not isinstance(spec.get("text", ""), str) or not isinstance(spec.get("source", "file"), str):
        problems.append("'text' and 'source' are texts")
    if grace is not None and (
        isinstance(grace, bool) or not isinstance(grace, int) or not 0 < grace <= 600_000
    ):
        problems.append("'grace_ms' is 1..600000")
    if (grace is None) != (after is None):
        problems.append("'grace_ms' and 'after_grace' go together")
    if after is not None and after not in ACTIONS[1:]:
        problems.append(f"after_grace {after!r} is none of {', '.join(ACTIONS[1:])}")
    if action == "ignore" and grace is None:
        problems.append("'ignore' needs a grace_ms and what to do after it")
    if spec.get("grace_from", "flag") not in ("flag", "state"):
        problems.append("grace_from is 'flag' or 'state'")
    if not all(isinstance(spec.get(k, False), bool) for k in ("restart", "void")):
        problems.append("'restart' and 'void' are true or false")
    for why in problems:
        p.add(line, f"{label}: {why}")
    if problems:
        return None
    return FlagRule(
        str(action), str(spec.get("text", "")), str(spec.get("source", "file")),
        grace / 1000 if grace else None, str(spec.get("grace_from", "flag")),
        None if after is None else str(after), bool(spec.get("restart", False)),
        bool(spec.get("void", False)),
    )  # fmt: skip


@dataclass
class _Episode:
    since: float  # time of the episode's first line
    lines: int = 0  # consecutive lines with the bit set
    clear_lines: int = 0  # consecutive lines without it (while still confirmed)
    confirmed: bool = False
    done: set[tuple[int, str]] = field(default_factory=set)  # (state, action) acted on


#: (line, code, message, action, source) -> the warning event.
Warn = Callable[[Any, str, str, str, str], WheelWarning]
#: (line, reason, message, source, restart) -> the void's events.
Void = Callable[[Any, str, str, str, bool], list[WheelEvent]]


class FlagPolicy:
    """The bits of each state line, confirmed over ``lines`` lines, then their rules."""

    def __init__(self, table: FlagTable, device: str, warn: Warn, void: Void) -> None:
        self.table = table
        self.device = device
        self._warn = warn
        self._void = void
        self.episodes: dict[int, _Episode] = {}
        self.confirmed = 0
        self.fault: tuple[str, str] | None = None  # (code, text) while a rule says fault

    def reset(self) -> None:
        """A new run of the host: the bits seen start again."""
        self.episodes.clear()
        self.confirmed = 0
        self.fault = None

    def on_line(self, st: Any, now: float, state_since: float) -> list[WheelEvent]:
        """``st``: the state line (``flags``, ``state``, ``game``, ``raw``)."""
        bits = st.flags
        if not bits and not self.episodes and not self.confirmed:
            self.fault = None
            return []
        out: list[WheelEvent] = []
        for flag in self.table.flags:
            ep = self.episodes.get(flag.bit)
            if bits & flag.bit:
                if ep is None:
                    ep = self.episodes[flag.bit] = _Episode(since=now)
                ep.lines += 1
                ep.clear_lines = 0
                if ep.lines >= self.table.lines:
                    ep.confirmed = True
                if ep.confirmed:
                    out += self._apply(flag, ep, st, now, state_since)
            elif ep is not None:
                ep.lines = 0
                ep.clear_lines += 1
                if not ep.confirmed or ep.clear_lines >= self.table.lines:
                    del self.episodes[flag.bit]
        confirmed = 0
        for bit, ep in self.episodes.items():
            if ep.confirmed:
                confirmed |= bit
        if confirmed != self.confirmed:
            if confirmed & ~self.confirmed == 0:  # only bits went away
                out.append(
                    WarningCleared(
                        device=self.device, raw=st.raw, flags=confirmed,
                        previous=self.confirmed, state=st.state, spin=st.game, monotonic=now,
                    )
                )  # fmt: skip
            self.confirmed = confirmed
        if self.fault is not None and not any(
            ep.confirmed and f.rule(st.state).action == "fault"
            for f in self.table.flags
            if (ep := self.episodes.get(f.bit)) is not None
        ):
            self.fault = None
        return out

    def _apply(
        self, flag: Flag, ep: _Episode, st: Any, now: float, state_since: float
    ) -> list[WheelEvent]:
        state = st.state
        rule = flag.rule(state)
        action = rule.action
        start = state_since if rule.grace_from == "state" else ep.since
        if rule.grace is not None:
            if now - start < rule.grace:
                if (state, "grace") in ep.done:
                    return []
                ep.done.add((state, "grace"))
                return [self._warn(st, flag.code, rule.text, action, rule.source)]
            assert rule.after_grace is not None
            action, tag = rule.after_grace, "after_grace"
        else:
            tag = action
        if (state, tag) in ep.done:
            return []
        ep.done.add((state, tag))
        code, text = flag.code, rule.text
        if rule.grace is not None:
            code += "_PERSISTS"
            text += f" (lasted {now - start:.1f} s)"
        out: list[WheelEvent] = [self._warn(st, code, text, action, rule.source)]
        if action == "fault":
            self.fault = (flag.code, rule.text)
        if action == "void" or (action == "fault" and rule.void):
            out += self._void(st, flag.code, rule.text, rule.source, rule.restart)
        return out
