"""``tablectl sim`` and ``tablectl decode``: the technician's tools for devices.

Both are table-driven: :data:`SIMULATORS` and :data:`DECODERS` map a driver name
(the ``driver =`` of ``[devices.<name>]``) to an entry. Add a device by adding an
entry; the reflink devices (shoe, shaker, board, sign) are taken from
``drivers.reflink.tool`` when it is present.

- ``tablectl sim DEVICE [--faults SPEC] [--tcp PORT] [--seed N] [--interval S]
  [--speed X] [--option KEY=VALUE ...]`` serves the simulator on a pseudo-terminal
  (or a TCP port), prints where to connect (``port = "..."``), and runs until
  Ctrl-C. ``--faults`` uses :func:`drivers.testing.parse_faults`
  (``chunk=1,garbage=0.01,drop=0.05,delay=0.002,silent=1,seed=3``).
- ``tablectl decode PROTOCOL [FILE]`` reads a capture (raw bytes, or the
  ``time<TAB>RX|TX<TAB>line`` frame log) from FILE or standard input and prints
  the driver's events as JSON lines.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import enum
import json
import signal
import sys
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from . import registry  # noqa: F401  (registers the [devices] config section)
from .testing import Faults, parse_faults

__all__ = ["DECODERS", "SIMULATORS", "DecoderEntry", "SimEntry", "register"]


class SimRunner(Protocol):
    def __call__(
        self,
        name: str,
        *,
        faults: Faults | None = ...,
        tcp: int | None = ...,
        seed: int | None = ...,
        interval: float | None = ...,
        options: dict[str, Any] | None = ...,
        out: Callable[[str], None] = ...,
        stop: asyncio.Event | None = ...,
    ) -> Coroutine[Any, Any, None]: ...


@dataclass(frozen=True)
class SimEntry:
    """How to run one device's simulator (``run`` serves until ``stop`` is set)."""

    description: str
    run: SimRunner


@dataclass(frozen=True)
class DecoderEntry:
    """How to decode one protocol's capture into JSON-ready records."""

    description: str
    decode: Callable[[bytes, argparse.Namespace], Iterator[dict[str, Any]]]


# --------------------------------------------------------------------------- cammegh-ss2


async def run_cammegh(
    name: str,
    *,
    faults: Faults | None = None,
    tcp: int | None = None,
    seed: int | None = None,
    interval: float | None = None,
    options: dict[str, Any] | None = None,
    out: Callable[[str], None] = print,
    stop: asyncio.Event | None = None,
) -> None:
    """The SS2 wheel: idle in state 6 until ``*P 1`` (or ``--option power=on``).

    ``interval``: press the start key every so many seconds (a game each time);
    ``options``: ``speed`` (time scale, 10 = ten times faster), ``mode`` (operating
    mode, default 1159), ``spin`` (first spin number), ``power`` (``on``).
    """
    from .cammegh.sim import CammeghSim, SimTiming

    opts = dict(options or {})
    speed = float(opts.get("speed", 1.0))
    sim = CammeghSim(
        seed=seed,
        timing=SimTiming().scaled(1 / speed),
        mode=int(opts.get("mode", 1159)),
        spin=int(opts.get("spin", 1)),
        faults=faults,
    )
    if tcp is not None:
        server: Any = await sim.serve_tcp(port=tcp)
        where = server.url
    else:
        server = await sim.serve_pty(opts.get("link"))
        where = server.path
    out(
        f'{name} simulator: connect the driver to port = "{where}" (faults: {sim.faults.describe()})'
    )
    if str(opts.get("power", "")).lower() in ("1", "on", "true") or interval:
        await sim.power_on()
    stop = stop or asyncio.Event()
    seen = 0
    try:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(interval or 0.5):
                    await stop.wait()
            if interval and not stop.is_set():
                with contextlib.suppress(RuntimeError, TimeoutError):
                    await sim.spin(timeout=interval + 120 / speed)
            for spin, number in sim.results[seen:]:
                out(f"spin {spin:03d}: {number}")
            seen = len(sim.results)
    finally:
        await sim.stop()


def decode_cammegh(data: bytes, args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    from .cammegh.decode import decode_capture

    return decode_capture(
        data,
        pockets=int(getattr(args, "pockets", 37) or 37),
        include_tx=bool(getattr(args, "tx", False)),
        include_garbled=bool(getattr(args, "garbled", False)),
    )


#: Driver name -> simulator entry. Append yours.
SIMULATORS: dict[str, SimEntry] = {
    "cammegh-ss2": SimEntry("Cammegh SS2 roulette wheel (RS-232, 9600 8N1)", run_cammegh),
}

#: Protocol (driver) name -> capture decoder. Append yours.
DECODERS: dict[str, DecoderEntry] = {
    "cammegh-ss2": DecoderEntry("Cammegh SS2 status/result lines -> wheel events", decode_cammegh),
}


def _add_reflink_devices() -> None:
    """Take the reflink devices' simulators and decoders from ``drivers.reflink.tool``."""
    try:
        from .reflink import tool
    except ImportError:
        return
    for name in getattr(tool, "SIMULATORS", {}):
        SIMULATORS.setdefault(
            name, SimEntry(f"{name} (reflink reference protocol)", tool.run_simulator)
        )
    for name, fn in getattr(tool, "DECODERS", {}).items():
        DECODERS.setdefault(name, DecoderEntry(f"{name} (reflink frames)", _bytes_only(fn)))


def _bytes_only(
    fn: Callable[[bytes], Iterator[dict[str, Any]]],
) -> Callable[[bytes, argparse.Namespace], Iterator[dict[str, Any]]]:
    def decode(data: bytes, args: argparse.Namespace) -> Iterator[dict[str, Any]]:
        return fn(data)

    return decode


_add_reflink_devices()


# --------------------------------------------------------------------------- commands


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "sim",
        help="run a device simulator on a pseudo-terminal or TCP port",
        description="Serve a simulated device speaking its wire protocol; print where to "
        "connect (the [devices.<name>] port); run until Ctrl-C. Devices: "
        + ", ".join(f"{k} ({v.description})" for k, v in SIMULATORS.items()),
    )
    p.add_argument("device", choices=sorted(SIMULATORS), metavar="DEVICE")
    p.add_argument("--faults", default="", help="e.g. chunk=1,garbage=0.01,drop=0.05,delay=0.002")
    p.add_argument("--tcp", type=int, metavar="PORT", help="serve on this TCP port (0: any free)")
    p.add_argument("--seed", type=int, help="seed of the simulated device's randomness")
    p.add_argument("--interval", type=float, metavar="S", help="play the device every S seconds")
    p.add_argument("--speed", type=float, help="time scale of the simulated device (cammegh-ss2)")
    p.add_argument(
        "--option", "-o", action="append", default=[], metavar="KEY=VALUE",
        help="device option (decks=6, dice=4, addresses=1,2, mode=1159, power=on...)",
    )  # fmt: skip
    p.set_defaults(func=cmd_sim)

    p = sub.add_parser(
        "decode",
        help="decode a raw capture into the driver's events (JSON lines)",
        description="Read a capture (raw bytes, or time<TAB>RX|TX<TAB>line frame logs) from "
        "FILE or standard input; print one JSON object per event. Protocols: "
        + ", ".join(f"{k} ({v.description})" for k, v in DECODERS.items()),
    )
    p.add_argument("protocol", choices=sorted(DECODERS), metavar="PROTOCOL")
    p.add_argument("file", nargs="?", help="capture file (default: standard input)")
    p.add_argument("--tx", action="store_true", help="also print the host's TX lines")
    p.add_argument("--garbled", action="store_true", help="also print lines that did not decode")
    p.add_argument("--pockets", type=int, default=37, help="wheel pockets (cammegh-ss2)")
    p.set_defaults(func=cmd_decode)


def _json_default(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def cmd_decode(args: argparse.Namespace) -> int:
    if args.file in (None, "-"):
        data = sys.stdin.buffer.read()
    else:
        try:
            data = Path(args.file).read_bytes()
        except OSError as exc:
            print(
                f"tablectl decode: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr
            )
            return 2
    out = sys.stdout
    for record in DECODERS[args.protocol].decode(data, args):
        out.write(json.dumps(record, default=_json_default, sort_keys=False) + "\n")
    out.flush()
    return 0


def _options(items: list[str]) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"tablectl sim: --option {item!r} is not KEY=VALUE")
        opts[key.strip()] = value.strip()
    return opts


def cmd_sim(args: argparse.Namespace) -> int:
    try:
        faults = parse_faults(args.faults)
    except ValueError as exc:
        print(f"tablectl sim: --faults: {exc}", file=sys.stderr)
        return 2
    options = _options(args.option)
    if args.speed is not None:
        options["speed"] = args.speed
    entry = SIMULATORS[args.device]

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        await entry.run(
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
