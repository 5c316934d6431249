"""The console's configuration (``[console]``) and its operators' PINs: salted PBKDF2
hashes, checked in constant time, with a decoy for unknown names."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tablecommon.settings import FieldSpec, register_section, validate_fields

PBKDF2_ITERATIONS = 200_000
MAX_LINE = 512


# -- PINs ---------------------------------------------------------------------
def hash_pin(pin: str, *, salt: bytes | None = None, iterations: int = PBKDF2_ITERATIONS) -> str:
    """``pbkdf2_sha256$<iterations>$<salt b64>$<hash b64>``."""
    if not pin.isdigit() or not 4 <= len(pin) <= 12:
        raise ValueError("a PIN is 4 to 12 digits")
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", pin.encode(), salt, iterations)
    b64 = base64.b64encode
    return f"pbkdf2_sha256${iterations}${b64(salt).decode()}${b64(digest).decode()}"


def decoy_hash(operators: Mapping[str, str]) -> str:
    """What an unknown operator's PIN is checked against, so that the answer takes as
    long as for a known operator (no timing tells which names exist): the iterations of
    a configured operator's hash, a fixed salt, and a digest of zeros that no PIN gives
    (short of a SHA-256 preimage)."""
    iterations = PBKDF2_ITERATIONS
    for stored in operators.values():
        parts = stored.split("$")
        if len(parts) == 4 and parts[1].isdigit():
            iterations = int(parts[1])
            break
    b64 = base64.b64encode
    return (
        f"pbkdf2_sha256${iterations}${b64(b'tablectl-decoy!!').decode()}${b64(bytes(32)).decode()}"
    )


def check_pin(pin: str, stored: str) -> bool:
    try:
        algo, iters, salt, digest = stored.split("$")
        if algo != "pbkdf2_sha256":
            return False
        got = hashlib.pbkdf2_hmac("sha256", pin.encode(), base64.b64decode(salt), int(iters))
        return hmac.compare_digest(got, base64.b64decode(digest))
    except (ValueError, TypeError):
        return False


def _check_hash(value: str) -> str | None:
    parts = value.split("$")
    if len(parts) != 4 or parts[0] != "pbkdf2_sha256" or not parts[1].isdigit():
        return "must be a PIN hash from `tablectl console --hash-pin` (pbkdf2_sha256$...)"
    if int(parts[1]) < 100_000:
        return "PBKDF2 iterations must be at least 100000"
    return None


# -- configuration ------------------------------------------------------------
CONSOLE_SPECS: dict[str, FieldSpec] = {
    "serial_port": FieldSpec(
        "str", "", doc="serial port of the console ('' = none), e.g. /dev/table-console"
    ),
    "baud": FieldSpec(
        "int", 115200, doc="serial speed", choices=(9600, 19200, 38400, 57600, 115200)
    ),
    "socket": FieldSpec(
        "str", "console.sock", doc="Unix socket, relative to the runtime directory"
    ),
    "max_tries": FieldSpec("int", 5, doc="wrong PINs before the console locks", range=(1, 10)),
    "lockout_seconds": FieldSpec("int", 300, doc="how long a lockout lasts", range=(10, 86400)),
    "session_timeout": FieldSpec(
        "int", 600, doc="idle seconds before a login expires", range=(30, 86400)
    ),
    "operators": FieldSpec("table", {}, doc="[console.operators.<name>] pin_hash = ..."),
    "dealers": FieldSpec(
        "table", {},
        doc='[console.dealers."<number>"] name = ..., pin_hash = ...: dealers who sign in '
        "on the keypad with their number and PIN (docs/console.md)",
    ),
}  # fmt: skip

#: A dealer's number as entered on the keypad.
DEALER_NUMBER_DIGITS = (1, 8)


#: The example tables' operator (``config/*.toml``, ``[console.operators.demo-tech]``):
#: PIN ``2468``, published in the README. ``check-config`` and the daemon's start-up warn
#: about a table whose operator still has it.
DEMO_PIN = "2468"
DEMO_PIN_HASH = (
    "pbkdf2_sha256$200000$pY8fUwSG2Rp/2vjnDtUtEQ==$UwMeIiwP5yenrwVptA8cQqJHaSbxV1mHeH48yicCoSw="
)


@dataclass(frozen=True)
class ConsoleSettings:
    serial_port: str = ""
    baud: int = 115200
    socket: str = "console.sock"
    max_tries: int = 5
    lockout_seconds: int = 300
    session_timeout: int = 600
    operators: Mapping[str, str] = field(default_factory=dict)  # name -> pin hash
    #: Keypad sign-in: dealer number -> (dealer's name, PIN hash).
    dealers: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    def warnings(self) -> list[str]:
        """An operator left with the documented demo PIN (the example tables')."""
        return [
            f"[console.operators.{name}] has the documented demo PIN {DEMO_PIN} (the example "
            "tables' operator): give it a PIN of its own (tablectl console --hash-pin) "
            "before the table goes live"
            for name, stored in self.operators.items()
            if stored == DEMO_PIN_HASH
        ]


def _validate(data: Any, path: str, errors: list[str]) -> ConsoleSettings:
    n = len(errors)
    vals = validate_fields(CONSOLE_SPECS, data, path, errors)
    ops: dict[str, str] = {}
    for name, spec in (vals.get("operators") or {}).items():
        sub = validate_fields(
            {"pin_hash": FieldSpec("str", required=True, doc="PIN hash", check=_check_hash)},
            spec,
            f"{path}.operators.{name}",
            errors,
        )
        if sub.get("pin_hash"):
            ops[str(name)] = sub["pin_hash"]
    dealers: dict[str, tuple[str, str]] = {}
    for number, spec in (vals.get("dealers") or {}).items():
        where = f"{path}.dealers.{number}"
        lo, hi = DEALER_NUMBER_DIGITS
        if not (str(number).isascii() and str(number).isdigit() and lo <= len(str(number)) <= hi):
            errors.append(
                f"{where}: a dealer number is {lo} to {hi} digits (what the keypad enters)"
            )
            continue
        sub = validate_fields(
            {
                "name": FieldSpec(
                    "str", required=True, doc="the dealer's name", check=_check_dealer
                ),
                "pin_hash": FieldSpec("str", required=True, doc="PIN hash", check=_check_hash),
            },
            spec,
            where,
            errors,
        )
        if sub.get("name") and sub.get("pin_hash"):
            dealers[str(number)] = (sub["name"], sub["pin_hash"])
    if len(errors) > n:
        return ConsoleSettings()
    vals["operators"] = ops
    vals["dealers"] = dealers
    return ConsoleSettings(**vals)


def _check_dealer(value: str) -> str | None:
    from ..integrity.pace import DEALER_NAME

    return None if DEALER_NAME.match(value) else "a dealer's name: letters, digits, _ . @ : -"


register_section("console", _validate)
