"""``python -m bench.flooder --host H --port P --root casino/tables/T --rate 100``: a
floor client that sends malformed requests at a fixed rate (the flood of the ``flood``
section, as another machine on the floor network, in its own process).

It reads its standard input: ``on`` starts the flood, ``off`` pauses it, end of file
stops it; it then prints one JSON line: requests sent, answers received (by the
``request_id`` it set, or ``null`` for a request the table could not read), and sent
per kind. The kinds are the costly ones (issue 14: "junk or deeply nested JSON"):
arrays nested to the size limit, a 16 KiB run of ``{"a":`` (many short strings among
brackets: the most work for the shape check), random bytes, a payload over the size
limit, invalid JSON, a bet with a fractional stake, an unknown command, an impossible
result. They alternate between ``bets/request`` and ``commands/request``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import socket
import sys
import time
from collections import Counter
from collections.abc import Callable

import aiomqtt

LIMIT = 16 * 1024  # firmware_host.boundedjson.MAX_REQUEST_BYTES


def kinds(rng: random.Random) -> list[tuple[str, Callable[[str], bytes]]]:
    def bet(rid: str) -> bytes:
        stake = rng.choice([1000.5, -5, "1000", 10**30])
        body = {"request_id": rid, "action": "place",
                "bet": {"bet_id": rid, "seat": 1, "bet_type": "fan", "selection": 2, "stake": stake}}  # fmt: skip
        return json.dumps(body).encode()

    return [
        ("nested to the size limit", lambda rid: b"[" * (LIMIT - 1)),
        ("16 KiB of short strings and brackets", lambda rid: (b'{"a":' * (LIMIT // 5))[: LIMIT - 1]),
        ("random bytes", lambda rid: rng.randbytes(4096)),
        ("over the size limit", lambda rid: json.dumps({"request_id": rid, "pad": "x" * LIMIT}).encode()),
        ("invalid JSON", lambda rid: b'{"request_id": "' + rid.encode() + b'", "action": place}'),
        ("fractional stake", bet),
        ("unknown command", lambda rid: json.dumps({"request_id": rid, "command": "reboot"}).encode()),
        ("impossible result", lambda rid: json.dumps(
            {"request_id": rid, "command": "result", "args": {"outcome": {"number": 9}}}).encode()),
    ]  # fmt: skip


async def flood(args: argparse.Namespace) -> dict[str, object]:
    rng = random.Random(args.seed)
    makers = kinds(rng)
    on = asyncio.Event()
    done = asyncio.Event()
    sent: Counter[str] = Counter()
    answered = {"with_id": 0, "null_id": 0}
    async with aiomqtt.Client(
        args.host, args.port, identifier=f"bench-flooder-{args.seed}",
        socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
    ) as c:  # fmt: skip
        c.pending_calls_threshold = 100_000
        await c.subscribe(f"{args.root}/+/response", qos=1)

        async def receive() -> None:
            async for m in c.messages:
                with contextlib.suppress(ValueError, TypeError):
                    rid = json.loads(bytes(m.payload))["request_id"]  # type: ignore[arg-type]
                    if rid is None:
                        answered["null_id"] += 1
                    elif str(rid).startswith("flood-"):
                        answered["with_id"] += 1

        async def control() -> None:
            loop = asyncio.get_running_loop()
            while True:
                line = await loop.run_in_executor(None, sys.stdin.readline)
                if not line:
                    done.set()
                    on.set()
                    return
                if line.strip() == "on":
                    on.set()
                elif line.strip() == "off":
                    on.clear()

        rx = asyncio.create_task(receive())
        ctl = asyncio.create_task(control())
        n = 0
        period = 1.0 / args.rate
        pending: set[asyncio.Task[None]] = set()
        t_next = time.perf_counter()
        while not done.is_set():
            if not on.is_set():
                await on.wait()
                t_next = time.perf_counter()
            if done.is_set():
                break
            n += 1
            name, make = makers[n % len(makers)]
            topic = f"{args.root}/{'bets' if n % 2 else 'commands'}/request"
            task = asyncio.create_task(c.publish(topic, make(f"flood-{n}"), qos=1))
            pending.add(task)
            task.add_done_callback(pending.discard)
            sent[name] += 1
            t_next += period  # a steady rate: late sends are caught up, not skipped
            await asyncio.sleep(max(0.0, t_next - time.perf_counter()))
        await asyncio.sleep(1.0)  # the last answers
        for t in (rx, ctl, *pending):
            t.cancel()
    return {"sent": sum(sent.values()), "answered": answered, "per_kind": dict(sent)}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--root", required=True)
    p.add_argument("--rate", type=float, default=100.0)
    p.add_argument("--seed", type=int, default=14)
    args = p.parse_args()
    print(json.dumps(asyncio.run(flood(args))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
