r"""The technician console: a line-oriented command interpreter for a dumb terminal.

Reached on a configured serial port (115200 8N1 by default; minicom, screen) and on a
local Unix socket (``tablectl console``). Plain ASCII lines, CR or LF accepted, CRLF
sent, no ANSI, no line editing beyond backspace. ``help`` lists every command with
its syntax.

Privileged commands (open and close betting and enter a result on a table without
its result device, void the round, jackpot adjust/reset/parameters, clear a latched
fault) need ``login NAME`` and the operator's PIN, stored in the configuration as a
salted PBKDF2 hash (``tablectl console --hash-pin``). Jackpot meter adjustments,
resets and parameter changes need two different operators (dual control, as NJAC
13:69D-1.52 asks of a progressive controller): one asks, another approves. Five
wrong PINs lock the console for ``lockout_seconds``, and the lockout survives a
restart (it is journaled with its end); an unknown operator's PIN is checked against
a decoy hash so that it takes as long as a known one's. Every login, failure,
lockout and privileged action is written to the hash-chained event log with who and
why.

What the console prints is made for a dumb terminal and a technician: amounts in the
table's currency, times in ISO-8601 local time, and nothing that came from outside
(the floor's bet ids and reasons, operator names) reaches the terminal with a control
character (:func:`~firmware_host.textsafe.printable`).
"""

from .lockout import DualControl, Lockout, LockoutJournal, PendingRequest, restore_lockout
from .presence import OperatorPresence
from .render import Renderer, local_time
from .session import COMMANDS, Command, ConsoleBackend, ConsoleSession
from .settings import CONSOLE_SPECS, ConsoleSettings, check_pin, decoy_hash, hash_pin
from .transport import serve_socket, serve_stream

__all__ = [
    "COMMANDS",
    "CONSOLE_SPECS",
    "Command",
    "ConsoleBackend",
    "ConsoleSession",
    "ConsoleSettings",
    "DualControl",
    "Lockout",
    "LockoutJournal",
    "OperatorPresence",
    "PendingRequest",
    "Renderer",
    "check_pin",
    "decoy_hash",
    "hash_pin",
    "local_time",
    "restore_lockout",
    "serve_socket",
    "serve_stream",
]
