"""The result board and the statistics follow the table: two table extensions.

:class:`ResultBoard` keeps the board's :class:`~firmware_host.face.state.BoardState`
through every round (betting open, closed, settled, voided, a new shoe), publishes it
on the retained ``board`` topic and sends it to every configured board device; after a
restart it rebuilds the state (number history, roads of the current shoe) from the
journal. :class:`TableStatistics` keeps the statistics of the last rounds on the
retained ``stats`` topic.

A board never holds up play. The hooks run inside the round engine's calls, right
after its commit: they only record the wanted state and wake a :class:`BoardWriter`,
one task per device, which sends what changed whenever it gets to it. A board that is
offline or slow to acknowledge delays nothing but its own writer; its driver keeps
every layer it was given and sends them all again when the board answers (the
driver's resynchronisation), so the board comes back showing the current state. Its
health (offline, lamp failure) is the device's own, on ``devices/<name>`` and in the
event log, like every device's.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from tablecommon.settings import FieldSpec, register_section, validate_fields

from ..journal import RoundRecord
from ..jsonio import JSON
from ..table.extension import RoundHistory, TableExtension, TableExtensions
from ..table.phase import Phase
from . import state as st
from . import stats

log = logging.getLogger(__name__)

#: Rounds read back at a restart to rebuild a board: more than a shoe of baccarat coups
#: (an 8-deck shoe deals about 80) and the number history.
REBUILD_ROUNDS = 150

STATISTICS_SPECS: dict[str, FieldSpec] = {
    "window": FieldSpec(
        "int", 100, doc="settled rounds the statistics count (the last N)", range=(10, 1000)
    ),
    "last": FieldSpec("int", 20, doc="last results listed", range=(1, 100)),
}


def _validate(data: Any, path: str, errors: list[str]) -> dict[str, Any]:
    return validate_fields(STATISTICS_SPECS, data, path, errors)


register_section("statistics", _validate)


@dataclass(frozen=True)
class StatisticsSettings:
    """``[statistics]`` as the daemon reads it."""

    window: int = 100
    last: int = 20

    @staticmethod
    def from_section(section: Mapping[str, Any] | None) -> StatisticsSettings:
        if section is None:
            return StatisticsSettings()
        return StatisticsSettings(window=section["window"], last=section["last"])


@runtime_checkable
class BoardDevice(Protocol):
    """A result board as the extension drives it (``drivers.board.driver``): told the
    game's areas (its default lamp order) once, then what to show."""

    name: str
    layout: str

    def use_areas(self, areas: Sequence[str]) -> None: ...

    async def show_areas(self, areas: Iterable[str], *, blink: bool = False) -> bool: ...

    async def show_number(self, number: int, history: Sequence[int] | None = None) -> bool: ...

    async def show_road(self, entries: Iterable[Any]) -> bool: ...

    async def show_message(self, kind: str, text: str = "") -> bool: ...


def board_problems(game_id: str, devices: Iterable[tuple[str, str, Any]]) -> list[str]:
    """Configuration problems of the result boards of a ``game_id`` table: ``devices``
    are ``(name, kind, settings)``; a board must have the layout of the game's board,
    and its lamp map (``lamps``) name areas of that board only."""
    board = st.board_of(game_id)
    want = None if board is None else board.layout
    out = []
    for name, kind, settings in devices:
        layout = settings.get("layout") if isinstance(settings, Mapping) else None
        if kind != "board" or layout is None:
            continue
        if layout != want:
            out.append(
                f"devices.{name}.layout: a {layout!r} board cannot show a {game_id} table's "
                "results"
                + (f" (layout = {want!r})" if want else " (no result board layout for this game)")
            )
            continue
        assert board is not None
        unknown = sorted(set(settings.get("lamps") or {}) - set(board.area_names()))
        if unknown:
            out.append(
                f"devices.{name}.lamps: {layout}: unknown areas in the lamp map: "
                f"{', '.join(unknown)}"
            )
    return out


class ShoeLog(Protocol):
    """Where the last new shoe is recorded (the journal's event log)."""

    def events(self, limit: int = 50, *, after_id: int = 0, kind: str | None = None) -> Any: ...


def _payloads(history: RoundHistory, n: int) -> list[Mapping[str, Any]]:
    """The finished rounds' payloads, oldest first."""
    out = []
    for r in reversed(history.recall(n)):
        if isinstance(r.settlement, Mapping):
            out.append(r.settlement)
    return out


class BoardWriter:
    """Sends one board device the latest wanted state, layer by layer, on its own task:
    the round engine never waits for it."""

    def __init__(self, device: BoardDevice) -> None:
        self.device = device
        self.wanted: st.BoardState | None = None
        self.sent: st.BoardState | None = None
        self._wake = asyncio.Event()
        self._unsupported: set[str] = set()
        #: Display commands carried out (kept or sent by the driver).
        self.writes = 0

    def want(self, s: st.BoardState) -> None:
        self.wanted = s
        self._wake.set()

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            s = self.wanted
            if s is None or s == self.sent:
                continue
            try:
                await self._apply(s)
            except Exception as exc:  # a display must never stop the table
                log.error("board %s: display update failed: %s", self.device.name, exc)
            self.sent = s

    async def idle(self) -> None:
        """Wait until the writer has sent the latest wanted state (tests)."""
        while self.wanted is not None and self.sent != self.wanted:
            await asyncio.sleep(0.01)

    async def _call(self, layer: str, fn: Callable[[], Any]) -> None:
        if layer in self._unsupported:
            return
        try:
            await fn()
        except Exception as exc:
            if getattr(exc, "code", None) == "UNSUPPORTED":
                self._unsupported.add(layer)  # an LED board has no road: asked once
                return
            raise
        self.writes += 1

    async def _apply(self, s: st.BoardState) -> None:
        d, old = self.device, self.sent
        if old is None or (old.message, old.void_reason) != (s.message, s.void_reason):
            text = (s.void_reason or "") if s.message == st.VOID else ""
            await self._call("message", lambda: d.show_message(s.message, text))
        if old is None or old.lit != s.lit:
            await self._call("lamps", lambda: d.show_areas(s.lit))
        if (
            s.shows_number
            and s.number is not None
            and (old is None or (old.number, old.history) != (s.number, s.history))
        ):
            number = s.number
            await self._call("number", lambda: d.show_number(number, history=s.history))
        if s.shows_roads and (old is None or old.coups != s.coups):
            await self._call("road", lambda: d.show_road([str(c) for c in s.coups]))


class ResultBoard(TableExtension):
    """The result board follows the rounds; ``publish`` takes the ``board`` topic's
    body; ``boards`` are the table's board devices (none: the topic alone); ``rules``
    the table's rules, by which a result's areas are lit (the game's defaults if not
    given)."""

    name = "result-board"

    def __init__(
        self,
        extensions: TableExtensions,
        *,
        game_id: str,
        publish: Callable[[Mapping[str, JSON]], None],
        boards: Sequence[BoardDevice] = (),
        shoe_log: ShoeLog | None = None,
        rules: Any = None,
        dealer: Callable[[], str | None] | None = None,
    ) -> None:
        """``dealer``: the dealer on duty (the table's roster), shown on the board;
        :meth:`refresh` after it changed."""
        self.game_id = game_id
        self.publish = publish
        self.rules = rules
        self.dealer = dealer
        self.state = st.BoardState(game_id, st.layout_of(game_id))
        board = st.board_of(game_id)
        for b in boards:  # each board numbers its lamps in the game's order, unless mapped
            b.use_areas(board.area_names() if board is not None else ())
        self.writers = [BoardWriter(b) for b in boards]
        self.shoe_log = shoe_log
        extensions.add(self)

    @staticmethod
    def applies(game_id: str) -> bool:
        """Whether a ``game_id`` table has a ``board`` topic: every table has one (its
        phase, last result and history for a screen facing the players, issue 33); a
        lit board device only where the game has a result layout (``layout_of``)."""
        return True

    def refresh(self) -> None:
        """Publish the board again (the dealer on duty changed)."""
        self._show(self.state)

    def _show(self, s: st.BoardState) -> None:
        if self.dealer is not None:
            s = replace(s, dealer=self.dealer())
        self.state = s
        try:
            self.publish(s.to_json())
        except Exception:
            log.exception("board: publishing the board topic failed")
        for w in self.writers:
            w.want(s)

    async def run(self) -> None:
        """Every board's writer, until cancelled."""
        if self.writers:
            await asyncio.gather(*(w.run() for w in self.writers))

    # -- hooks ---------------------------------------------------------------------------
    def phase_changed(self, phase: Phase, rnd: RoundRecord | None) -> None:
        if phase is Phase.OPEN and rnd is not None:
            self._show(st.opened(self.state, rnd.round_id, rnd.seq))
        elif phase is Phase.CLOSED:
            self._show(st.closed(self.state))
        elif phase is Phase.IDLE and self.state.phase != "idle":
            self._show(st.idle(self.state))

    def round_settled(self, payload: Mapping[str, JSON]) -> None:
        self._show(st.settled(self.state, payload, self.rules))

    def round_voided(self, payload: Mapping[str, JSON]) -> None:
        self._show(st.voided(self.state, payload))

    def new_shoe(self, data: Mapping[str, JSON]) -> None:
        after = data.get("after_seq")
        self._show(st.new_shoe(self.state, after if isinstance(after, int) else None))

    def resumed(self, resolved: Sequence[Mapping[str, JSON]], history: RoundHistory) -> None:
        after = None
        if self.shoe_log is not None:
            last = self.shoe_log.events(1, kind="new_shoe")
            if last:
                value = last[-1].data.get("after_seq")
                after = value if isinstance(value, int) else None
        self._show(
            st.rebuilt(
                self.game_id,
                self.state.layout,
                _payloads(history, REBUILD_ROUNDS),
                shoe_after_seq=after,
                rules=self.rules,
            )
        )


class TableStatistics(TableExtension):
    """The retained ``stats`` topic: the statistics of the last ``window`` settled
    rounds, for a game that has statistics (``Game.display.statistics``: roulette,
    fantan, sic bo, fish-prawn-crab)."""

    name = "statistics"

    def __init__(
        self,
        extensions: TableExtensions,
        *,
        game_id: str,
        publish: Callable[[Mapping[str, JSON]], None],
        settings: StatisticsSettings | None = None,
    ) -> None:
        self.game_id = game_id
        self.publish = publish
        self.settings = settings or StatisticsSettings()
        self.outcomes: deque[Mapping[str, Any]] = deque(maxlen=self.settings.window)
        extensions.add(self)

    @staticmethod
    def applies(game_id: str) -> bool:
        return stats.applies(game_id)

    def payload(self) -> dict[str, JSON]:
        newest_first = list(reversed(self.outcomes))
        figures = stats.statistics(self.game_id, newest_first, last=self.settings.last) or {}
        return {
            "game": self.game_id,
            "window": self.settings.window,
            "rounds": len(newest_first),
            **figures,
        }

    def _publish(self) -> None:
        try:
            self.publish(self.payload())
        except Exception:
            log.exception("statistics: publishing failed")

    def round_settled(self, payload: Mapping[str, JSON]) -> None:
        outcome = payload.get("outcome")
        if isinstance(outcome, Mapping):
            self.outcomes.append(outcome)
            self._publish()

    def resumed(self, resolved: Sequence[Mapping[str, JSON]], history: RoundHistory) -> None:
        self.outcomes.clear()
        for p in _payloads(history, self.settings.window + 50):
            if p.get("status") == "settled" and isinstance(p.get("outcome"), Mapping):
                self.outcomes.append(p["outcome"])
        self._publish()
