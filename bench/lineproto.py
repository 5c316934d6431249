"""``python -m bench.lineproto [--replays N] [--seed S] [--repeats R]``: the Cammegh SS2
written as a line-protocol file (``drivers/lineproto/protocols/cammegh-ss2.toml``)
against the native driver (``drivers/cammegh``); writes ``bench/results-lineproto.json``
and ``.txt`` (``docs/protocols/line-protocol.md`` quotes them).

- ``capture``: the real capture (``tests/fixtures/cammegh-ss2/real-session.log``)
  decoded by both (``tablectl decode``'s reading): the results, the events, whether
  they are equal event for event, and the time each takes, the file's as a ratio to
  the native decoder's measured in the same run (median of ``--repeats``).
- ``fuzz``: ``--replays`` (10,000) seeded replays of garbage through the file, as
  ``tablectl decode --protocol`` reads a raw capture: random bytes, lines of bytes
  near the protocol's alphabet, lines shaped like status lines with a field wrong,
  and the real capture's lines each corrupted (a byte substituted, inserted or
  deleted, the line cut). Garbage is what holds no line the protocol reference's
  grammar accepts (``REF_STATUS``, ``REF_FAULT`` below, written from [ref §4.1] and
  [ref §4.4], not from the file): such a replay must give **no event at all**. A fifth
  of the replays are real games (written by hand, :func:`game_lines`) with garbage
  lines inserted between their lines: every result must be one the wheel sent, once.

``tests/drivers/test_lineproto_fuzz.py`` runs :func:`fuzz` (a few hundred replays by
default, the 10,000 under ``-m slow``).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CAPTURE = REPO / "tests" / "fixtures" / "cammegh-ss2" / "real-session.log"
SS2_FILE = REPO / "drivers" / "lineproto" / "protocols" / "cammegh-ss2.toml"

# [ref §4.1] ^\*X;([1-7]);(\d{3});( \d|\d{2}|0{3,4}|  );([0-9A-F]);(\d{3});([01])$,
# narrowed to real pockets (0-36, 00, 000, 0000) and spins 0..256, with ':' allowed;
# [ref §4.4] *F <code>.
REF_STATUS = re.compile(
    rb"\*X([;:])[1-7]\1(\d{3})\1( \d|[12]\d|3[0-6]|00|000|0000|  )\1[0-9A-F]\1\d{3}\1[01]"
)
REF_FAULT = re.compile(rb"\*F \d{1,3}")
NEAR = b"*X;:0123456789ABCDEF \r\nPOKNFuSR"


def is_valid(line: bytes) -> bool:
    """A line the protocol reference's grammar accepts as a status or fault line."""
    m = REF_STATUS.fullmatch(line)
    return bool(m and int(m.group(2)) <= 256) or bool(REF_FAULT.fullmatch(line))


def rx_lines() -> list[bytes]:
    out = []
    for line in CAPTURE.read_bytes().splitlines():
        parts = line.split(b"\t", 2)
        if len(parts) == 3 and parts[1] == b"RX":
            out.append(parts[2])
    return out


def game_lines(spin: int, previous: int | None, number: int) -> list[bytes]:
    """One game as the real wheel sends it [ref §11], written out by hand."""
    prev = "  " if previous is None else f"{previous:>2}"
    win = f"{number:>2}"
    lines = [f"*X;2;{spin:03d};{prev};0;150;1"] * 3
    lines += [f"*X;3;{spin:03d};{prev};0;170;0"] * 3
    lines += [f"*X;4;{spin:03d};{prev};0;168;0"] * 4
    lines += [win.strip()]  # the bare line, host-stripped as in the capture
    lines += [f"*X;5;{spin:03d};{win};0;165;0"] * 4
    return [line.encode() for line in lines]


# ------------------------------------------------------------------ garbage
def _random_bytes(rng: random.Random) -> bytes:
    return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))


def _near_lines(rng: random.Random) -> list[bytes]:
    return [
        bytes(rng.choice(NEAR) for _ in range(rng.randrange(0, 30)))
        for _ in range(rng.randrange(1, 40))
    ]


def _almost_status(rng: random.Random) -> bytes:
    """A status line with one field outside the grammar (or a separator mixed)."""
    sep = rng.choice((";", ":"))
    fields = [
        str(rng.randint(1, 7)), f"{rng.randint(1, 256):03d}", rng.choice(("17", " 7", "00", "  ")),
        rng.choice("0123456789ABCDEF"), f"{rng.randint(0, 999):03d}", rng.choice("01"),
    ]  # fmt: skip
    i = rng.randrange(6)
    fields[i] = rng.choice([
        ["0", "8", "9", "a", "", "11"], ["257", "999", "12", "0001", "1a2"],
        ["37", "05", "99", "-1", "1", "000000"], ["a", "G", "10", ""], ["12", "1234", "x12"],
        ["2", "", "01", "a"],
    ][i])  # fmt: skip
    line = "*X" + sep + sep.join(fields)
    if rng.random() < 0.2:
        pos = rng.randrange(3, len(line))
        line = line[:pos] + (":" if sep == ";" else ";") + line[pos + 1 :]
    return line.encode()


def _corrupt(rng: random.Random, line: bytes) -> bytes:
    b = bytearray(line)
    pos = rng.randrange(len(b) + 1)
    byte = rng.choice(NEAR) if rng.random() < 0.8 else rng.randrange(256)
    op = rng.randrange(4)
    if op == 0 and b:
        b[min(pos, len(b) - 1)] = byte
    elif op == 1:
        b.insert(pos, byte)
    elif op == 2 and b:
        del b[min(pos, len(b) - 1)]
    else:
        b = b[:pos]
    return bytes(b)


def garbage_lines(rng: random.Random, real: list[bytes]) -> list[bytes]:
    """A replay's worth of lines none of which the reference grammar accepts."""
    kind = rng.randrange(4)
    if kind == 0:
        lines = _random_bytes(rng).splitlines()
    elif kind == 1:
        lines = _near_lines(rng)
    elif kind == 2:
        lines = [_almost_status(rng) for _ in range(rng.randrange(1, 30))]
    else:
        start = rng.randrange(len(real) - 60)
        lines = [_corrupt(rng, line) for line in real[start : start + rng.randrange(1, 60)]]
    # CR and LF each end a line ([ref §2]): a generated line holding one is two lines
    pieces = [piece for line in lines for piece in re.split(rb"[\r\n]", line)]
    return [piece for piece in pieces if not is_valid(piece)]


# ------------------------------------------------------------------ the run
@dataclass
class FuzzResult:
    replays: int = 0
    garbage_replays: int = 0
    game_replays: int = 0
    lines: int = 0
    events_from_garbage: int = 0
    results_sent: int = 0
    results_read: int = 0
    wrong_or_second_results: int = 0
    seconds: float = 0.0
    examples: list[str] = field(default_factory=list)  # the first few failures

    def as_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


def fuzz(replays: int, seed: int = 2026) -> FuzzResult:
    """``replays`` seeded replays through the SS2 file (see the module's docstring)."""
    from drivers.lineproto.decode import decode_capture
    from drivers.lineproto.load import load_protocol

    protocol = load_protocol(SS2_FILE)
    real = rx_lines()
    rng = random.Random(seed)
    out = FuzzResult()
    t0 = time.perf_counter()
    for i in range(replays):
        out.replays += 1
        if i % 5 == 4:
            out.game_replays += 1
            sent, lines = _games(rng, real)
            events = list(decode_capture(b"\r\n".join(lines) + b"\r\n", protocol, device="wheel"))
            got = [(e["spin"], e["number"]) for e in events if e["kind"] == "WinningNumber"]
            out.results_sent += len(sent)
            out.results_read += len(got)
            bad = [r for r in got if r not in sent] + [r for r in set(got) if got.count(r) > 1]
            out.wrong_or_second_results += len(bad)
            if bad and len(out.examples) < 5:
                out.examples.append(f"replay {i}: sent {sent}, read {got}")
        else:
            out.garbage_replays += 1
            lines = garbage_lines(rng, real)
            data = rng.choice((b"\r\n", b"\n", b"\r")).join(lines) + b"\r\n"
            events = list(decode_capture(data, protocol, device="wheel"))
            out.events_from_garbage += len(events)
            if events and len(out.examples) < 5:
                out.examples.append(f"replay {i}: {data!r} -> {events[:2]}")
        out.lines += len(lines)
    out.seconds = time.perf_counter() - t0
    return out


def _games(rng: random.Random, real: list[bytes]) -> tuple[list[tuple[int, int]], list[bytes]]:
    """1-4 games from a random spin, garbage lines inserted between their lines."""
    spin, prev = rng.randint(1, 256), None
    sent: list[tuple[int, int]] = []
    lines: list[bytes] = []
    for _ in range(rng.randint(1, 4)):
        number = rng.randint(0, 36)
        lines += game_lines(spin, prev, number)
        sent.append((spin, number))
        prev, spin = number, spin % 256 + 1
    junk = garbage_lines(rng, real)
    for line in junk[: rng.randrange(0, 12)]:
        lines.insert(rng.randrange(len(lines) + 1), line)
    return sent, lines


def capture(repeats: int) -> dict[str, Any]:
    """The real capture through both decoders: results, events, equality, time."""
    from drivers.cammegh.decode import decode_capture as native_decode
    from drivers.lineproto.decode import decode_capture
    from drivers.lineproto.load import load_protocol

    data = CAPTURE.read_bytes()
    protocol = load_protocol(SS2_FILE)
    native_t, file_t = [], []
    native: list[dict[str, Any]] = []
    mine: list[dict[str, Any]] = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        native = list(native_decode(data, device="wheel"))
        t1 = time.perf_counter()
        mine = list(decode_capture(data, protocol, device="wheel"))
        t2 = time.perf_counter()
        native_t.append(t1 - t0)
        file_t.append(t2 - t1)
    n, f = statistics.median(native_t), statistics.median(file_t)
    return {
        "lines": len(data.splitlines()),
        "results_native": sum(e["kind"] == "WinningNumber" for e in native),
        "results_file": sum(e["kind"] == "WinningNumber" for e in mine),
        "events_native": len(native),
        "events_file": len(mine),
        "equal_event_for_event": native == mine,
        "native_ms": round(n * 1000, 1),
        "file_ms": round(f * 1000, 1),
        "file_to_native_ratio": round(f / n, 2),
        "repeats": repeats,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.lineproto", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--replays", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(REPO / "bench" / "results-lineproto"))
    args = ap.parse_args(argv)
    cap = capture(args.repeats)
    fz = fuzz(args.replays, args.seed)
    report = {"capture": cap, "fuzz": {**fz.as_json(), "seed": args.seed}}
    text = "\n".join([
        "The Cammegh SS2 as a line-protocol file, against the native driver",
        f"real capture: {cap['results_file']} of {cap['results_native']} results, "
        f"{cap['events_file']} of {cap['events_native']} events, equal event for event: "
        f"{cap['equal_event_for_event']}",
        f"decode time: file {cap['file_ms']} ms, native {cap['native_ms']} ms, "
        f"ratio {cap['file_to_native_ratio']} (median of {cap['repeats']})",
        f"fuzz (seed {args.seed}): {fz.replays} replays, {fz.lines} lines, "
        f"{fz.seconds:.1f} s",
        f"  garbage replays: {fz.garbage_replays}, events from garbage: {fz.events_from_garbage}",
        f"  game replays with garbage inserted: {fz.game_replays}, results sent "
        f"{fz.results_sent}, read {fz.results_read}, wrong or second: "
        f"{fz.wrong_or_second_results}",
        *fz.examples,
    ])  # fmt: skip
    print(text)
    Path(args.out + ".json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    Path(args.out + ".txt").write_text(text + "\n", encoding="utf-8")
    ok = cap["equal_event_for_event"] and not fz.events_from_garbage
    return 0 if ok and not fz.wrong_or_second_results else 1


if __name__ == "__main__":
    sys.exit(main())
