"""The shoe checked by its own count (issue 37).

Counting the cards dealt finds a missing card only when the cut leaves fewer cards
behind than the check tolerates, and a duplicated card only when every copy comes out
before the cut. A shoe or shuffler that reads every card of its set counts it whole:
the reference protocol's deck check (``CHECK_DECK``, answered by ``DECK_CHECK``:
``docs/protocols/shoe.md``). :class:`ShoeDeckCheck` asks for it and follows each
request until it is answered:

- it is asked **at every new shoe** (the shoe's ``SHUFFLE_FINISHED``) and **at the end
  of each shoe** (the ``new_shoe`` command, or the shoe's next ``SHUFFLE_STARTED``,
  whichever comes first; a shoe that dealt nothing has no end to check);
- a shoe that answers ``REFUSED`` 1 (unknown request) or 5 (unsupported) **offers no
  deck check**: nothing more is asked of it, the answer is journaled once, and the
  composition statistics (``shoe.py``) remain the check;
- refused as busy or in fault (3, 4: shuffling, door open, jam), or not acknowledged
  (the shoe offline), the request is sent again every ``retry_s``;
- an answer is the oldest request's (the shoe answers in order); one nobody asked for
  (the shoe's own button) is journaled as the device's;
- a request not answered within ``timeout_s`` of the first asking is given up:
  ``SHOE_DECK_UNCHECKED``, so that a check that cannot be made is never a silent pass.

The monitor (``monitor.py``) journals each answer (the ``deck_check`` event) and raises
``SHOE_CARDS_MISSING`` / ``SHOE_CARD_EXCESS`` from it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from drivers.reflink.messages import RefusedReason

log = logging.getLogger(__name__)

#: REFUSED reasons that say the shoe has no deck check at all.
NOT_OFFERED = frozenset({int(RefusedReason.UNKNOWN_REQUEST), int(RefusedReason.UNSUPPORTED)})


@dataclass
class Ask:
    """One deck check asked for: why (``new_shoe``, ``end_of_shoe``), for which shoe
    (its shuffle number), when first asked and when to try again (monotonic)."""

    purpose: str
    shoe: int
    asked: float
    next_try: float
    tries: int = 0
    acknowledged: bool = False
    in_flight: bool = False
    error: str = ""


class ShoeDeckCheck:
    """The deck checks asked of one shoe (``request``: the driver's
    ``request_deck_check``; None: the shoe offers none)."""

    def __init__(
        self,
        shoe: str,
        request: Callable[[], Awaitable[None]] | None,
        *,
        timeout_s: float = 120.0,
        retry_s: float = 5.0,
        monotonic: Callable[[], float] = time.monotonic,
        unavailable: Callable[[str], None] | None = None,
    ) -> None:
        self.shoe = shoe
        self.request = request
        self.timeout_s = timeout_s
        self.retry_s = retry_s
        self.monotonic = monotonic
        #: True: the shoe answered a deck check; False: it offers none; None: not known.
        self.offered: bool | None = None if request is not None else False
        self.pending: list[Ask] = []
        self._unavailable = unavailable
        self._tasks: set[asyncio.Task[None]] = set()

    def ask(self, purpose: str, shoe: int) -> Ask | None:
        """Ask for a deck check (once per purpose and shoe)."""
        if self.request is None or self.offered is False:
            return None
        for a in self.pending:
            if a.purpose == purpose and a.shoe == shoe:
                return a
        now = self.monotonic()
        a = Ask(purpose, shoe, now, now)
        self.pending.append(a)
        self._send(a)
        return a

    def _send(self, a: Ask) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a tool): tried again at the next tick
            a.error, a.next_try = "no event loop", self.monotonic() + self.retry_s
            return
        a.in_flight = True
        a.tries += 1
        task = loop.create_task(self._request(a), name=f"deck-check-{self.shoe}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _request(self, a: Ask) -> None:
        assert self.request is not None
        try:
            await self.request()
        except Exception as exc:  # refused, not acknowledged, link down
            reason = getattr(exc, "reason", None)
            if reason in NOT_OFFERED:
                self._not_offered(str(exc))
                return
            a.error, a.next_try = str(exc) or type(exc).__name__, self.monotonic() + self.retry_s
            log.info("%s: deck check (%s) not sent: %s; again in %g s", self.shoe, a.purpose,
                     a.error, self.retry_s)  # fmt: skip
        else:
            a.acknowledged = True
        finally:
            a.in_flight = False

    def _not_offered(self, why: str) -> None:
        self.offered = False
        self.pending.clear()
        log.info("%s offers no deck check (%s): the composition statistics remain", self.shoe, why)
        if self._unavailable is not None:
            self._unavailable(why)

    def answered(self) -> Ask | None:
        """A deck check's answer arrived: the oldest request's (None: nobody asked)."""
        self.offered = True
        return self.pending.pop(0) if self.pending else None

    def tick(self) -> list[Ask]:
        """Send again what is due; return the requests given up (not answered in time)."""
        now = self.monotonic()
        expired = [a for a in self.pending if now - a.asked >= self.timeout_s]
        for a in expired:
            self.pending.remove(a)
        for a in self.pending:
            if not a.acknowledged and not a.in_flight and now >= a.next_try:
                self._send(a)
        return expired
