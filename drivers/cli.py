"""``tablectl sim`` and ``tablectl decode``: the technician's tools for devices.

Both serve what the drivers declare (:mod:`drivers.declaration`): the devices of
``tablectl sim`` are the declared drivers with a simulator, the protocols of
``tablectl decode`` those with a decoder, each named by its driver name (the ``driver
=`` of ``[devices.<name>]``); a flag a device's entry does not read is refused.
``tablectl sim`` is :func:`drivers.simulators.run_simulator`, the one runner of every
simulator.

- ``tablectl sim DEVICE [--faults SPEC] [--tcp PORT] [--seed N] [--interval S]
  [--speed X] [--option KEY=VALUE ...]`` serves the simulator on a pseudo-terminal
  (or a TCP port), prints where to connect (``port = "..."``), and runs until
  Ctrl-C. ``--faults`` uses :func:`drivers.testing.parse_faults`
  (``chunk=1,garbage=0.01,drop=0.05,delay=0.002,silent=1,seed=3``).
- ``tablectl decode PROTOCOL [FILE]`` reads a capture (raw bytes, or the
  ``time<TAB>RX|TX<TAB>line`` frame log) from FILE or standard input and prints
  the driver's events as JSON lines. ``tablectl decode --protocol FILE CAPTURE``
  reads it through a line-protocol file (``drivers/lineproto``): the driver is then
  ``line-<kind>`` of the file's kind, and may be left out.
- A line-protocol device's simulator replays a capture: ``tablectl sim line-wheel
  --protocol FILE --capture CAPTURE``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import enum
import json
import signal
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tablecommon.cliargs import (
    BadValue,
    CliError,
    existing_file,
    number,
    plain_words,
    tcp_port,
)

from . import registry
from .declaration import DecoderEntry
from .simulators import run_simulator, simulated
from .testing import Faults, parse_faults

__all__ = ["decoders", "register"]


class _OrCapture(list[str]):
    """The protocols (what ``--help`` and the completion list); with ``--protocol`` the
    one positional may be the capture instead, so every word passes here and
    :func:`cmd_decode` checks it."""

    def __contains__(self, item: object) -> bool:
        return True


def decoders() -> dict[str, DecoderEntry]:
    """Driver name -> its capture decoder, for every declared driver that has one."""
    return {n: d.decoder for n, d in registry.declarations().items() if d.decoder}


# --------------------------------------------------------------------------- commands


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sims, decs = simulated(), decoders()
    p = sub.add_parser(
        "sim",
        help="run a device simulator on a pseudo-terminal or TCP port",
        description="Serve a simulated device speaking its wire protocol; print where to "
        "connect (the [devices.<name>] port); run until Ctrl-C. Devices: "
        + ", ".join(f"{k} ({v.description})" for k, v in sims.items()),
    )
    p.add_argument("device", choices=sorted(sims), metavar="DEVICE")
    p.add_argument(
        "--faults",
        default="",
        type=_faults,
        help="e.g. chunk=1,garbage=0.01,drop=0.05,delay=0.002",
    )
    p.add_argument(
        "--tcp", type=tcp_port, metavar="PORT", help="serve on this TCP port (0: any free)"
    )
    p.add_argument(
        "--seed", type=number(integer=True), help="seed of the simulated device's randomness"
    )
    p.add_argument(
        "--interval", type=number(above=0), metavar="S", help="play the device every S seconds"
    )
    p.add_argument(
        "--speed",
        type=number(above=0, maximum=1000),
        help="time scale of the simulated device (cammegh-ss2 only)",
    )
    p.add_argument(
        "--option", "-o", action="append", default=[], metavar="KEY=VALUE", type=_key_value,
        help="device option (decks=6, dice=4, addresses=1,2, mode=1159, power=on...)",
    )  # fmt: skip
    p.add_argument(
        "--protocol", type=existing_file, metavar="FILE",
        help="the line-protocol file of a line-* device (default: the kind's example file)",
    )  # fmt: skip
    p.add_argument(
        "--capture", type=existing_file, metavar="FILE",
        help="a capture a line-* device replays (default: the file's example lines)",
    )  # fmt: skip
    p.set_defaults(func=cmd_sim)

    p = sub.add_parser(
        "decode",
        help="decode a raw capture into the driver's events (JSON lines)",
        description="Read a capture (raw bytes, or time<TAB>RX|TX<TAB>line frame logs) from "
        "FILE or standard input; print one JSON object per event. Protocols: "
        + ", ".join(f"{k} ({v.description})" for k, v in decs.items()),
    )
    p.add_argument(
        "protocol", nargs="?", choices=_OrCapture(sorted(decs)), metavar="PROTOCOL",
        help="the driver whose decoder reads it (with --protocol: line-<kind>, may be left out)",
    )  # fmt: skip
    p.add_argument(
        "file", nargs="?", type=existing_file, help="capture file (default: standard input)"
    )
    p.add_argument(
        "--protocol", dest="protocol_file", type=existing_file, metavar="FILE",
        help="a line-protocol file (docs/protocols/line-protocol.md) to read the capture with",
    )  # fmt: skip
    p.add_argument("--tx", action="store_true", help="also print the host's TX lines (cammegh-ss2)")
    p.add_argument(
        "--garbled",
        action="store_true",
        help="also print lines that did not decode (cammegh-ss2)",
    )
    p.add_argument(
        "--pockets",
        type=int,
        choices=(37, 38),
        help="wheel pockets, 37 or 38 (cammegh-ss2; default 37)",
    )
    p.set_defaults(func=cmd_decode)


def _json_default(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


#: The options of ``tablectl decode`` a decoder may read (``DecoderEntry.options``).
DECODE_OPTIONS = ("tx", "garbled", "pockets", "protocol")


def _decoder_of(args: argparse.Namespace, entries: Mapping[str, DecoderEntry]) -> str:
    """The decoder named (or, with ``--protocol FILE`` alone, the file's kind's); the
    positional may then be the capture."""
    name, capture = args.protocol, args.file
    if args.protocol_file is not None and capture is None and name not in entries:
        name, capture = None, name
    if name is None and args.protocol_file is not None:
        name = f"line-{_protocol_kind(args.protocol_file)}"
    if name is None:
        raise CliError(
            f"PROTOCOL is required: one of {', '.join(sorted(entries))} (or --protocol FILE)",
            code="INVALID_VALUE",
        )
    if name not in entries:
        raise CliError(
            f"{name!r} is not a protocol tablectl decodes; known: {', '.join(sorted(entries))}",
            code="INVALID_VALUE",
        )
    if capture is not None and capture is not args.file:
        try:
            args.file = existing_file(capture)
        except BadValue as exc:
            raise CliError(exc.why, code=exc.code) from None
    return str(name)


def _protocol_kind(path: str) -> str:
    from .lineproto.load import load_protocol
    from .lineproto.spec import ProtocolInvalid

    try:
        return load_protocol(path).kind
    except ProtocolInvalid as exc:
        raise _invalid(exc) from None


def _invalid(exc: Any) -> CliError:
    problems = list(getattr(exc, "problems", [])) or [str(exc)]
    more = (
        f" (and {len(problems) - 1} more: tablectl check-config of a table naming it lists them)"
        if len(problems) > 1
        else ""
    )
    return CliError(f"{problems[0]}{more}", code="PROTOCOL_INVALID")


def _only_for(flag: str, entries: Mapping[str, Any], reads: Callable[[Any], frozenset[str]]) -> str:
    """The devices whose entries read ``flag`` (what an error about it names)."""
    return ", ".join(n for n, e in entries.items() if flag in reads(e))


def cmd_decode(args: argparse.Namespace) -> int:
    entries = decoders()
    args.protocol = _decoder_of(args, entries)
    entry = entries[args.protocol]
    given = {n: getattr(args, "protocol_file" if n == "protocol" else n) for n in DECODE_OPTIONS}
    for name in DECODE_OPTIONS:
        if given[name] not in (None, False) and name not in entry.options:
            only = _only_for(name, entries, lambda e: e.options)
            raise CliError(
                f"--{name} does not apply to {args.protocol} (only to {only})",
                code="OPTION_NOT_APPLICABLE",
            )
    if args.file in (None, "-"):
        data = sys.stdin.buffer.read()
    else:
        try:
            data = Path(args.file).read_bytes()
        except OSError as exc:
            raise CliError(
                f"{args.file}: cannot read it: {exc.strerror or exc}", code="FILE_UNREADABLE"
            ) from None
    out = sys.stdout
    options = {n: given[n] for n in DECODE_OPTIONS if n in entry.options}
    try:
        records = entry.decode(data, options)
        for record in records:
            out.write(json.dumps(record, default=_json_default, sort_keys=False) + "\n")
    except ValueError as exc:  # a line-protocol file that cannot be used (ProtocolInvalid)
        raise _invalid(exc) from None
    out.flush()
    return 0


def _key_value(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise BadValue(f"{item!r} is not KEY=VALUE")
    return key.strip(), value.strip()


def _faults(spec: str) -> Faults:
    try:
        return parse_faults(spec)
    except ValueError as exc:
        raise BadValue(f"{spec!r}: {plain_words(str(exc))}") from None


def cmd_sim(args: argparse.Namespace) -> int:
    faults = args.faults if isinstance(args.faults, Faults) else parse_faults(args.faults)
    options: dict[str, Any] = dict(args.option)
    sims = simulated()
    for flag in ("speed", "protocol", "capture"):
        value = getattr(args, flag)
        if value is None:
            continue
        if flag not in sims[args.device].flags:
            only = _only_for(flag, sims, lambda e: e.flags)
            raise CliError(
                f"--{flag} does not apply to {args.device} (only to {only})",
                code="OPTION_NOT_APPLICABLE",
            )
        options[flag] = value
    asyncio.run(_check_options(args.device, args.seed, options))

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        await run_simulator(
            args.device,
            faults=faults,
            tcp=args.tcp,
            seed=args.seed,
            interval=args.interval,
            options=options,
            out=lambda line: print(line, flush=True),
            stop=stop,
        )

    asyncio.run(main())
    return 0


async def _check_options(device: str, seed: int | None, options: dict[str, Any]) -> None:
    """The simulator built once with ``options`` (not served), before any work: an
    option it cannot take is refused in one line naming it."""
    try:
        sim = simulated()[device].build(seed, dict(options))
    except ValueError as exc:
        if getattr(exc, "problems", None):  # a line-protocol file that cannot be used
            raise _invalid(exc) from None
        given = " ".join(f"{k}={v}" for k, v in options.items())
        raise CliError(
            f"--option {given}: the {device} simulator refuses it: {plain_words(str(exc))}",
            code="INVALID_VALUE",
        ) from None
    except (TypeError, KeyError) as exc:
        given = " ".join(f"{k}={v}" for k, v in options.items())
        raise CliError(
            f"--option {given}: the {device} simulator refuses it: {plain_words(str(exc))}",
            code="INVALID_VALUE",
        ) from None
    await sim.close()
