"""The one error path of ``tablectl``: every flag checked before any work starts, every
failure one line.

Every subcommand's options are checked as the command line is read (argparse ``type=``
callables from this module: numbers, ports, broker and database URLs, files and
directories that must exist) or, for what depends on several options (an option that
does not apply to a game, a file a table file names), by the command before it
starts. Every failure is raised as a :class:`CliError` (a coded error naming the flag,
file, device or broker at fault) or is an error the project already codes
(``ConfigInvalid``, ``CodedError``); ``firmware_host.cli.main`` prints it as the one
line ``tablectl COMMAND: error: CODE: message`` and exits 2 (``--debug`` adds the
traceback). argparse's own usage errors (an unknown option, a missing one, a choice
not offered) keep argparse's format, which names the option.

A check is a ``type=`` callable raising :class:`BadValue`, which argparse does not
catch (it is no ``ValueError``): :class:`Parser` turns it into a :class:`CliError`
naming the flag and the subcommand.

The codes are listed in ``README.md`` (``tests/test_cli_errors.py`` checks that every
code the subcommands give is there).
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .errors import CodedError

__all__ = [
    "BadValue",
    "CliError",
    "Parser",
    "broker_url",
    "count",
    "creatable_file",
    "db_url",
    "existing_dir",
    "existing_file",
    "flag_name",
    "listen_address",
    "name_like",
    "number",
    "one_of",
    "output_file",
    "plain_words",
    "redact_url",
    "tcp_port",
    "topic_prefix",
    "work_dir",
]


class CliError(CodedError):
    """A command line that cannot be carried out: its code and one line naming the flag,
    file, device or broker at fault. ``prog`` is the subcommand (``tablectl view``)
    when the parser raised it."""

    code = "INVALID_VALUE"

    def __init__(self, message: str, *, code: str | None = None, prog: str | None = None) -> None:
        super().__init__(message, code=code)
        self.prog = prog


class BadValue(Exception):
    """Raised by a ``type=`` check: ``why`` follows the flag's name in the message
    (``--speed`` + ``must be a number above 0, got '0'``)."""

    def __init__(self, why: str, code: str = "INVALID_VALUE") -> None:
        super().__init__(why)
        self.why = why
        self.code = code


def flag_name(action: argparse.Action) -> str:
    """The long name of an option (``--output`` of ``-o/--output``); empty for a
    positional argument (its check names the value itself: a file's path)."""
    longs = [s for s in action.option_strings if s.startswith("--")]
    if longs:
        return longs[0]
    if action.option_strings:
        return action.option_strings[0]
    return ""


class Parser(argparse.ArgumentParser):
    """argparse, with :class:`BadValue` raised by a check turned into a
    :class:`CliError` naming the flag (subparsers are of this class too)."""

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        try:
            return super()._get_value(action, arg_string)
        except BadValue as exc:
            flag = flag_name(action)
            text = f"{flag} {exc.why}" if flag else exc.why
            raise CliError(text, code=exc.code, prog=self.prog) from None


# -- numbers ------------------------------------------------------------------------------
def number(
    *,
    integer: bool = False,
    minimum: float | None = None,
    above: float | None = None,
    maximum: float | None = None,
) -> Callable[[str], Any]:
    """A check of a number: ``integer`` (else any finite number), at least ``minimum``,
    strictly above ``above``, at most ``maximum``."""
    kind = "a whole number" if integer else "a number"
    bounds = []
    if minimum is not None:
        bounds.append(f"at least {minimum:g}")
    if above is not None:
        bounds.append(f"above {above:g}")
    if maximum is not None:
        bounds.append(f"at most {maximum:g}")
    wanted = kind + (", " + " and ".join(bounds) if bounds else "")

    def check(text: str) -> Any:
        value: float | int
        try:
            value = int(text, 10) if integer else float(text)
        except ValueError:
            raise BadValue(f"must be {wanted}, got {text!r}") from None
        if not math.isfinite(value):
            raise BadValue(f"must be {wanted}, got {text!r}")
        if (
            (minimum is not None and value < minimum)
            or (above is not None and value <= above)
            or (maximum is not None and value > maximum)
        ):
            raise BadValue(f"must be {wanted}, got {text!r}")
        return value

    check.__name__ = "number"  # argparse's messages name the type by it
    return check


def count(minimum: int = 1, maximum: int | None = None) -> Callable[[str], Any]:
    """A whole number of at least ``minimum``."""
    return number(integer=True, minimum=minimum, maximum=maximum)


def tcp_port(text: str) -> int:
    """A TCP port, 0 (any free one) to 65535."""
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise BadValue(f"must be a TCP port 0-65535, got {text!r}")
    return int(text)


def listen_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8080``, ``0.0.0.0:8080``; an empty host is 127.0.0.1)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise BadValue(f"must be HOST:PORT (a port 0-65535), got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


# -- URLs -----------------------------------------------------------------------------------
def redact_url(url: str) -> str:
    """``url`` without its password (``mqtt://user:***@host``), for a message."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    cred, at, tail = rest.rpartition("@")
    if at and ":" in cred:
        cred = cred.split(":", 1)[0] + ":***"
    shown = f"{cred}@{tail}" if at else rest
    return f"{scheme}://{shown}" if sep else shown


def broker_url(*schemes: str) -> Callable[[str], str]:
    """A check of an MQTT broker URL, ``SCHEME://[user[:pass]@]host[:port]`` with one of
    ``schemes`` (a URL without one is ``mqtt://``): a host, and a port 1-65535 when
    given. Returns the URL as given."""
    allowed = schemes or ("mqtt", "mqtts", "tcp", "ssl")

    def check(text: str) -> str:
        shown = redact_url(text)
        u = urlsplit(text if "://" in text else f"mqtt://{text}")
        if u.scheme not in allowed:
            raise BadValue(
                f"{shown}: the scheme must be {' or '.join(s + '://' for s in allowed)}, "
                f"not {u.scheme}://"
            )
        try:
            port = u.port
        except ValueError:
            port_text = u.netloc.rpartition("@")[2].rpartition(":")[2]
            raise BadValue(
                f"{shown}: the port must be a number 1-65535, got {port_text!r}"
            ) from None
        if not u.hostname:
            raise BadValue(f"{shown}: no host (mqtt://HOST[:PORT])")
        if port == 0:
            raise BadValue(f"{shown}: the port must be a number 1-65535, got 0")
        if u.path not in ("", "/") or u.query or u.fragment:
            raise BadValue(f"{shown}: a broker URL has no path (mqtt://HOST[:PORT])")
        return text

    check.__name__ = "broker URL"
    return check


def db_url(*, must_exist: bool) -> Callable[[str], str]:
    """A floor database: ``postgresql://user@host[:port]/db`` (or ``postgres://``), or
    ``sqlite:///path`` or a plain path, whose directory exists (``must_exist``: the file
    too: a command that reads records never creates an empty database)."""

    def check(text: str) -> str:
        if text.startswith(("postgresql://", "postgres://")):
            u = urlsplit(text)
            try:
                u.port  # noqa: B018 (checks it)
            except ValueError:
                raise BadValue(f"{redact_url(text)}: the port must be a number 1-65535") from None
            if not u.hostname and "host=" not in u.query:
                raise BadValue(f"{redact_url(text)}: no host (postgresql://USER@HOST/DB)")
            return text
        if "://" in text and not text.startswith("sqlite://"):
            raise BadValue(
                f"{redact_url(text)}: must be postgresql://USER@HOST[:PORT]/DB, "
                "sqlite:///PATH or a path"
            )
        path = Path(text[len("sqlite://") :] if text.startswith("sqlite://") else text)
        if must_exist:
            _file(path, "no such database file (floor-ingest run creates it)")
        else:
            _parent(path)
        return text

    check.__name__ = "database"
    return check


# -- files and directories --------------------------------------------------------------------
def _file(path: Path, missing: str = "no such file") -> Path:
    if not path.exists():
        raise BadValue(f"{path}: {missing}", "FILE_NOT_FOUND")
    if path.is_dir():
        raise BadValue(f"{path}: is a directory, not a file", "NOT_A_FILE")
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise BadValue(
            f"{path}: cannot read it: {exc.strerror or exc}", "FILE_UNREADABLE"
        ) from None
    return path


def _parent(path: Path) -> None:
    parent = path.parent
    if not parent.is_dir():
        raise BadValue(f"{path}: no directory {parent} to put it in", "NOT_A_DIRECTORY")
    if path.is_dir():
        raise BadValue(f"{path}: is a directory, not a file", "NOT_A_FILE")


def existing_file(text: str) -> str:
    """A file that exists and can be read (``-`` is standard input)."""
    if text != "-":
        _file(Path(text))
    return text


def output_file(text: str) -> str:
    """A file to write: its directory exists, and it is no directory."""
    _parent(Path(text))
    return text


def creatable_file(text: str) -> str:
    """A file to write whose directory is created if missing (:func:`work_dir`): it is
    no directory."""
    p = Path(text)
    if p.is_dir():
        raise BadValue(f"{p}: is a directory, not a file", "NOT_A_FILE")
    try:
        work_dir(str(p.parent))
    except BadValue as exc:
        raise BadValue(f"{p}: {exc.why}", exc.code) from None
    return text


def existing_dir(text: str) -> str:
    """A directory that exists."""
    p = Path(text)
    if not p.exists():
        raise BadValue(f"{p}: no such directory", "FILE_NOT_FOUND")
    if not p.is_dir():
        raise BadValue(f"{p}: is not a directory", "NOT_A_DIRECTORY")
    return text


def work_dir(text: str) -> str:
    """A directory the command writes to, created (with its parents) when missing: it is
    a directory, or the nearest of its ancestors that exists is one this process may
    write to."""
    p = Path(text)
    if p.exists():
        if not p.is_dir():
            raise BadValue(f"{p}: is not a directory", "NOT_A_DIRECTORY")
        if not os.access(p, os.W_OK | os.X_OK):
            raise BadValue(f"{p}: not writable by this user", "DIRECTORY_UNUSABLE")
        return text
    ancestor = p.absolute().parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise BadValue(f"{p}: cannot be created: {ancestor} is not a directory", "NOT_A_DIRECTORY")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise BadValue(f"{p}: cannot be created in {ancestor} by this user", "DIRECTORY_UNUSABLE")
    return text


# -- names ------------------------------------------------------------------------------------
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,63}$")


def name_like(what: str) -> Callable[[str], str]:
    """A name that goes into client ids and topics: 1-64 letters, digits, ``_ . : @ -``."""

    def check(text: str) -> str:
        if not _NAME.match(text):
            raise BadValue(
                f"must be {what}: 1-64 letters, digits, '_', '.', ':', '@', '-', got {text!r}"
            )
        return text

    check.__name__ = what
    return check


def topic_prefix(text: str) -> str:
    """An MQTT topic prefix: levels without wildcards, no empty level, no leading ``$``."""
    levels = text.split("/")
    if not text or text.startswith("$") or any(not lv or "+" in lv or "#" in lv for lv in levels):
        raise BadValue(f"must be a topic prefix (casino, site/pit-2), got {text!r}")
    return text


_CONVERSION = re.compile(
    r"(?:invalid literal for int\(\) with base \d+|could not convert string to float): ('[^']*')"
)
_ERRNO = re.compile(r"\[Errno -?\d+\] ")


def plain_words(text: str) -> str:
    """Python's words said plainly: a failed number conversion (``'abc' is not a
    number``), an OS error without its ``[Errno 111]``."""
    return _ERRNO.sub("", _CONVERSION.sub(lambda m: f"{m.group(1)} is not a number", text))


def one_of(values: Iterable[str]) -> str:
    """``a, b or c``."""
    items = list(values)
    return ", ".join(items[:-1]) + (" or " if len(items) > 1 else "") + items[-1] if items else ""
