"""A dealer signs in at the table's keypad: ``sign_in``, the dealer number,
``confirm``, the PIN, ``confirm`` (the driver's ``KeypadSignIn``, ``drivers/keypad``).

The PIN is checked as the console's operators' are: against the salted PBKDF2 hash
configured for that number (``[console.dealers."<number>"]``), in constant time, an
unknown number against a decoy hash (the answer takes as long: no timing tells which
numbers exist), in a worker thread (about 0.2 s of hashing never holds up the loop).
Wrong PINs count towards a lockout of the keypad (``[console] max_tries``,
``lockout_seconds``), journaled, and restored after a restart like the console's.
Every attempt is an event of the audit log (``keypad_sign_in_failed``,
``keypad_lockout``, ``keypad_sign_in_refused``; a success is the roster's
``dealer_signed_in`` with ``via`` ``keypad``). The PIN itself is never journaled,
logged or shown.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from tablecommon.events.keypad import KeypadSignIn

from ..journal import AuditLog
from ..jsonio import JSON
from .lockout import Lockout, restore_lockout
from .settings import check_pin, decoy_hash

log = logging.getLogger(__name__)

#: The audit log's kinds of the keypad's lockout (for :func:`restore_lockout`).
KINDS = ("dealer_signed_in", "keypad_lockout", "keypad_sign_in_failed")


class KeypadSignInDesk:
    """Checks a keypad sign-in and signs the dealer in on the roster."""

    def __init__(
        self,
        roster: Any,
        dealers: Mapping[str, tuple[str, str]],
        lockout: Lockout,
        chain: AuditLog,
    ) -> None:
        self.roster = roster
        self.dealers = dict(dealers)
        self.lockout = lockout
        self.chain = chain
        self.decoy = decoy_hash({n: h for n, (_, h) in self.dealers.items()})
        self._tasks: set[asyncio.Task[str]] = set()
        self._busy = asyncio.Lock()
        if left := restore_lockout(lockout, chain, kinds=KINDS):
            log.warning("keypad sign-in locked for %d s more (from before the restart)", left)

    async def on_device_event(self, device: str, event: object) -> None:
        """Every device event (the daemon's pump): a sign-in is checked in its own task,
        so the device's other events are not held up by the hashing."""
        if isinstance(event, KeypadSignIn):
            task = asyncio.create_task(self.sign_in(device, event), name="keypad-sign-in")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def sign_in(self, device: str, event: KeypadSignIn) -> str:
        """One attempt; returns what happened: ``signed_in``, ``wrong``, ``locked``,
        ``refused`` (the roster refused the name)."""
        async with self._busy:  # one attempt at a time: the lockout counts each
            number = event.dealer_number
            where: dict[str, JSON] = {"device": device, "dealer_number": number}
            left = self.lockout.locked()
            if left:
                self.chain.append_event(
                    "keypad_sign_in_refused", {**where, "locked_for_s": round(left)}
                )
                log.warning("keypad sign-in of dealer %s refused: locked for %d s", number, left)
                return "locked"
            known = self.dealers.get(number)
            stored = known[1] if known is not None else self.decoy
            good = await asyncio.to_thread(check_pin, event.pin, stored)
            if not good or known is None:
                self.chain.append_event("keypad_sign_in_failed", where)
                if self.lockout.fail():
                    self.chain.append_event(
                        "keypad_lockout",
                        {**where, "seconds": self.lockout.seconds,
                         "until_epoch": self.lockout.until_wall},
                    )  # fmt: skip
                    log.warning("keypad sign-in locked for %d s", self.lockout.seconds)
                return "wrong"
            self.lockout.success()
            try:
                self.roster.sign_in(known[0], via="keypad", by=f"keypad:{device}:{number}")
            except Exception as exc:  # a storage refusal: nobody signed in; said once
                log.error("keypad sign-in of dealer %s not recorded: %s", number, exc)
                return "refused"
            log.info("dealer %s (%s) signed in at the keypad", known[0], number)
            return "signed_in"

    async def idle(self) -> None:
        """Wait for the attempts under way (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
