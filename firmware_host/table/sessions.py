"""Player sessions for the floor's rating system (issue 34 item 3).

The floor's rating terminal opens a player's session at a seat (``session_open``:
its ``session_id``, the ``seat``, the ``player`` as the floor's opaque id: the table
keeps nothing else of the player) and closes it (``session_close``). Each is an entry of
the audit chain; at the close the table publishes on ``sessions`` (QoS 1, not retained:
each session once, ``docs/mqtt.md``, "Player sessions") what the seat played from the
open to the close:

- ``rounds``: the settled rounds in which the seat had a bet (a void round returned
  every stake: not played);
- ``seconds``: from the open to the close (the journal's UTC times);
- ``stakes`` and ``average_stake`` (the stakes over the rounds, rounded to the minor
  unit half to even; ``average_stake_exact`` the fraction);
- ``player_net`` (what the seat's bets won, net: negative when the player lost) and
  ``house_win`` (its opposite);
- ``theo_exact`` and ``theo``: the exact sum of the seat's bets' theoretical wins
  (their ``theo_exact`` in each round's payload), rounded once (``games/edges.py``).

The rounds counted are those finished with a ``seq`` after the last round the journal
held at the open, up to the last at the close: a round in progress at the open is not
the session's. A seat holds one session at a time (``SEAT_SESSION_OPEN``); a
``session_id`` is used once (``SESSION_ID_TAKEN``); closing a session that is not open
is ``SESSION_NOT_OPEN``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction

from ..games.edges import theo_minor
from ..games.money import fraction_str
from ..journal import AuditLog, Database, OutboxMessage, RoundStore
from ..jsonio import JSON
from ..schemas import PAYLOAD_SCHEMA_VERSION
from ..timefmt import iso_utc, utc_now
from .commands import CommandCall, Commands
from .reading import RequestError, identifier

#: The topic a finished session is published on, relative to the table's root.
SESSIONS_TOPIC = "sessions"
MAX_ID = 64
MAX_SEAT = 99
#: Sessions read back from the chain at start-up (the open ones among them).
READ_BACK = 10_000


@dataclass(frozen=True)
class Session:
    session_id: str
    seat: int
    player: str
    after_seq: int
    opened_at: str


class PlayerSessions:
    """The open sessions of one table (module docstring), kept in the audit chain."""

    def __init__(
        self,
        db: Database,
        chain: AuditLog,
        rounds: RoundStore,
        *,
        table_id: str,
        currency: str,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.db = db
        self.chain = chain
        self.rounds = rounds
        self.table_id = table_id
        self.currency = currency
        self.clock = clock
        self.open: dict[str, Session] = {}
        self.used: set[str] = set()
        self._read_back()

    def _read_back(self) -> None:
        self.open.clear()
        self.used.clear()
        for ev in self.chain.events(READ_BACK, kind="session_opened"):
            d = ev.data
            assert isinstance(d, dict)
            sid = str(d["session_id"])
            self.used.add(sid)
            self.open[sid] = Session(sid, int(str(d["seat"])), str(d["player"]),
                                     int(str(d["after_seq"])), ev.at)  # fmt: skip
        for ev in self.chain.events(READ_BACK, kind="session_closed"):
            assert isinstance(ev.data, dict)
            self.open.pop(str(ev.data["session_id"]), None)

    def register_commands(self, commands: Commands) -> None:
        commands.register("session_open", self.command_open)
        commands.register("session_close", self.command_close)

    def command_open(self, call: CommandCall) -> JSON:
        sid = identifier(call.args.get("session_id"), "session_open's 'session_id'", MAX_ID)
        player = identifier(call.args.get("player"), "session_open's 'player'", MAX_ID)
        seat = call.args.get("seat")
        if isinstance(seat, bool) or not isinstance(seat, int) or not 1 <= seat <= MAX_SEAT:
            raise RequestError(
                "MALFORMED_REQUEST", f"session_open's 'seat' must be 1..{MAX_SEAT}, got {seat!r}"
            )
        if sid in self.used:
            raise RequestError("SESSION_ID_TAKEN", f"session {sid} was opened before")
        for s in self.open.values():
            if s.seat == seat:
                raise RequestError(
                    "SEAT_SESSION_OPEN", f"seat {seat} holds session {s.session_id}; close it first"
                )
        after = self.rounds.last_seq(self.table_id)
        data: dict[str, JSON] = {"session_id": sid, "seat": seat, "player": player,
                                 "after_seq": after, "by": call.source}  # fmt: skip
        ev = self.chain.append_event("session_opened", data, at=self.clock())
        self.db.on_rollback(self._read_back)
        self.open[sid] = Session(sid, seat, player, after, ev.at)
        self.used.add(sid)
        return {"session_id": sid, "seat": seat, "player": player, "opened_at": ev.at}

    def command_close(self, call: CommandCall) -> JSON:
        sid = identifier(call.args.get("session_id"), "session_close's 'session_id'", MAX_ID)
        s = self.open.get(sid)
        if s is None:
            raise RequestError("SESSION_NOT_OPEN", f"no session {sid} is open at this table")
        now = self.clock()
        report = self.report(s, self.rounds.last_seq(self.table_id), iso_utc(now))
        data: dict[str, JSON] = {"session_id": sid, "upto_seq": report["last_seq"],
                                 "by": call.source}  # fmt: skip
        self.db.on_rollback(self._read_back)
        self.chain.append_event("session_closed", data, at=now,
                                outbox=[OutboxMessage(SESSIONS_TOPIC, report)])  # fmt: skip
        del self.open[sid]
        return report

    def report(self, s: Session, upto: int, closed_at: str) -> dict[str, JSON]:
        """The session as published on ``sessions`` (module docstring)."""
        rounds = stakes = net = unavailable = 0
        theo = Fraction(0)
        for _seq, status, payload in self.rounds.finished_between(
            self.table_id, s.after_seq, upto, payloads=True
        ):
            if status != "settled":
                continue
            if not isinstance(payload, dict):
                unavailable += 1
                continue
            lines = [b for b in payload.get("bets") or () if isinstance(b, dict)
                     and b.get("seat") == s.seat]  # fmt: skip
            if not lines:
                continue
            rounds += 1
            for b in lines:
                stakes += int(str(b["stake"]))
                net += int(str(b["net"]))
                theo += Fraction(str(b.get("theo_exact", "0")))
        average = Fraction(stakes, rounds) if rounds else Fraction(0)
        seconds = (
            datetime.fromisoformat(closed_at) - datetime.fromisoformat(s.opened_at)
        ).total_seconds()
        return {
            "schema_version": PAYLOAD_SCHEMA_VERSION,
            "table_id": self.table_id,
            "session_id": s.session_id,
            "player": s.player,
            "seat": s.seat,
            "currency": self.currency,
            "opened_at": s.opened_at,
            "closed_at": closed_at,
            "seconds": max(0, round(seconds)),
            "first_seq": s.after_seq + 1,
            "last_seq": upto,
            "rounds": rounds,
            "rounds_unavailable": unavailable,
            "stakes": stakes,
            "average_stake": theo_minor(average),
            "average_stake_exact": fraction_str(average),
            "player_net": net,
            "house_win": -net,
            "theo_exact": fraction_str(theo),
            "theo": theo_minor(theo),
        }
