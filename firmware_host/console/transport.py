"""A console session over a byte stream: the serial port and the Unix socket."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from .session import ConsoleSession
from .settings import MAX_LINE


# -- transports ---------------------------------------------------------------
async def serve_stream(
    session: ConsoleSession,
    read: Callable[[], Awaitable[bytes]],
    write: Callable[[bytes], Awaitable[None]],
    *,
    echo: bool = False,
) -> None:
    """Run one session over a byte stream (serial port or socket).

    ``read`` returns the next bytes (``b""`` at end of stream); ``write`` sends.
    ``echo``: a serial terminal does not echo locally, so we echo typed characters
    and handle backspace; never a hidden line (the PIN, anything typed while the
    console is locked: :attr:`ConsoleSession.input_hidden`), nor a line that starts
    with a digit (no command does: it may be a PIN typed at the wrong moment).
    """
    try:
        await _serve(session, read, write, echo=echo)
    finally:
        session.end()  # its operator, if any, is no longer at the table


async def _serve(
    session: ConsoleSession,
    read: Callable[[], Awaitable[bytes]],
    write: Callable[[bytes], Awaitable[None]],
    *,
    echo: bool,
) -> None:
    out = bytearray()

    def send(text: str) -> None:
        out.extend(text.encode("ascii", "replace"))

    async def flush() -> None:
        if out:
            data = bytes(out)
            out.clear()
            await write(data)

    for ln in session.banner():
        send(ln + "\r\n")
    send(session.prompt())
    await flush()
    buf = bytearray()
    last_cr = False  # a LF right after a CR ends no second line (CRLF terminals)
    while not session.closed:
        chunk = await read()
        if not chunk:
            break
        for byte in chunk:
            if byte == 0x0A and last_cr:
                last_cr = False
                continue
            last_cr = byte == 0x0D
            if byte in (0x0D, 0x0A):
                if echo:
                    send("\r\n")
                line = buf.decode("ascii", "replace")
                buf.clear()
                for reply in await session.handle(line):
                    send(reply + "\r\n")
                if session.closed:
                    break
                send(session.prompt())
            elif byte in (0x08, 0x7F):
                if buf:
                    hidden = _hidden(session, buf)
                    buf.pop()
                    if echo and not hidden:
                        send("\b \b")
            elif 0x20 <= byte < 0x7F and len(buf) < MAX_LINE:
                buf.append(byte)
                if echo and not _hidden(session, buf):
                    send(chr(byte))
            # other control bytes (and ANSI escapes from fancy terminals) are ignored
        await flush()
    await flush()


def _hidden(session: ConsoleSession, line: bytearray) -> bool:
    """Whether the line being typed is kept off the screen."""
    return session.input_hidden or line.lstrip()[:1].isdigit()


async def serve_socket(
    session: ConsoleSession, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """A console session on a Unix socket connection (``tablectl console``)."""

    async def write(data: bytes) -> None:
        writer.write(data)
        await writer.drain()

    try:
        await serve_stream(session, lambda: reader.read(256), write)
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()
