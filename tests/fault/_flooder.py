"""The flood of ``test_request_flood.py``, as its own process (another system on the
floor network, not sharing the table's CPU time slice or event loop).

``python tests/fault/_flooder.py --host H --port P --root casino/tables/T --seed S
--count N --window W --out FILE``: sends malformed requests (``_flood_requests``) with
at most W awaiting their answer (a client that pipelines requests and reads the
answers, like any floor system; an answer with ``request_id: null`` answers the
oldest unreadable request sent on that topic that its code can answer). After N requests it prints
``reached`` and goes on until its standard input is closed, then waits for the last
answers (``--timeout`` seconds at most) and writes every request with its answers to
FILE as JSON. It fails (exit status 1, the reason on stderr) if no request was answered
for ``--timeout`` seconds while W awaited their answer, instead of waiting for ever.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import socket
import sys
import threading
import time
from asyncio import FIRST_COMPLETED
from collections import Counter, deque
from pathlib import Path
from typing import Any

import aiomqtt

sys.path.insert(0, str(Path(__file__).resolve().parent))
import contextlib

from _flood_requests import Malformed, make_flood


async def _acquire(
    window: asyncio.Semaphore,
    rx: asyncio.Task[None],
    timeout: float,
    sent: list[Malformed],
    answers: dict[int, list[Any]],
) -> None:
    """A place in the window; an error, not a wait for ever, when the receiver stopped
    or no request was answered for ``timeout`` seconds with the window full."""
    slot = asyncio.ensure_future(window.acquire())
    done, _ = await asyncio.wait({slot, rx}, timeout=timeout, return_when=FIRST_COMPLETED)
    if slot in done:
        return
    slot.cancel()
    if rx in done:
        rx.result()  # its exception
        raise RuntimeError("the flooder's receiver stopped")
    waiting = Counter(sent[i].category for i in range(len(sent)) if i not in answers)
    raise RuntimeError(
        f"no answer for {timeout:g} s with {sum(waiting.values())} requests awaiting one: "
        + ", ".join(f"{k} {v}" for k, v in waiting.most_common())
    )


async def flood(args: argparse.Namespace) -> dict[str, Any]:
    gen = make_flood(random.Random(args.seed))
    sent: list[Malformed] = []
    answers: dict[int, list[Any]] = {}  # index in sent -> answers
    by_id: dict[str, int] = {}
    anonymous: dict[str, deque[int]] = {"bets": deque(), "commands": deque()}
    unmatched: list[Any] = []
    window = asyncio.Semaphore(args.window)
    last_answer = 0.0
    async with aiomqtt.Client(
        args.host,
        args.port,
        identifier=f"fault-flooder-{args.seed}",
        keepalive=30,
        socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
        max_queued_incoming_messages=0,
    ) as c:
        c.pending_calls_threshold = args.window + 16
        await c.subscribe(f"{args.root}/bets/response", qos=1)
        await c.subscribe(f"{args.root}/commands/response", qos=1)

        async def receive() -> None:
            nonlocal last_answer
            async for msg in c.messages:
                raw = msg.payload
                body = json.loads(bytes(raw) if isinstance(raw, bytes | bytearray) else str(raw))
                kind = msg.topic.value.rsplit("/", 2)[-2]
                rid = body.get("request_id")
                if rid is None and anonymous[kind]:
                    # The oldest unreadable request this code can answer (a request too
                    # large is answered at once by the link, before older ones queued).
                    code = body.get("code")
                    i = next((j for j in anonymous[kind] if code in sent[j].codes), None)
                    if i is None:
                        i = anonymous[kind][0]
                    anonymous[kind].remove(i)
                elif isinstance(rid, str) and rid in by_id:
                    i = by_id[rid]
                else:
                    i = None
                if i is None:
                    if rid is None or str(rid).startswith("flood-"):
                        unmatched.append(body)
                    continue  # someone else's answer (the dealer's)
                first = i not in answers
                answers.setdefault(i, []).append(body)
                if first:
                    last_answer = time.perf_counter()
                    window.release()

        async def all_answered() -> None:
            while len(answers) < len(sent):
                await asyncio.sleep(0.01)

        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        def watch_stdin() -> None:
            sys.stdin.read()  # EOF
            loop.call_soon_threadsafe(stop.set)

        # A daemon thread: one blocked on stdin must not keep a failed flooder alive
        # (an executor's thread is joined at exit, and the test closes stdin only
        # after "reached": the test then played rounds until its own timeout).
        threading.Thread(target=watch_stdin, name="stdin", daemon=True).start()
        rx = asyncio.create_task(receive())
        t0 = time.perf_counter()
        while not (stop.is_set() and len(sent) >= args.count):
            if len(sent) == args.count:
                print("reached", flush=True)
            await _acquire(window, rx, args.timeout, sent, answers)
            m = next(gen)
            i = len(sent)
            sent.append(m)
            if m.request_id is None:
                anonymous[m.kind].append(i)
            else:
                by_id[m.request_id] = i
            await c.publish(f"{args.root}/{m.kind}/request", m.payload, qos=1)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(all_answered(), args.timeout)
        await asyncio.sleep(0.5)  # a duplicate answer, if any
        rx.cancel()
    return {
        "count": len(sent),
        "seconds": max(last_answer - t0, 1e-9),  # first request sent -> last answer
        "requests": [
            {
                "kind": m.kind,
                "category": m.category,
                "request_id": m.request_id,
                "codes": sorted(m.codes),
                "answers": answers.get(i, []),
            }
            for i, m in enumerate(sent)
        ],
        "unmatched": unmatched,
    }


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--root", required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--count", type=int, default=5000)
    p.add_argument("--window", type=int, default=200)
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    result = asyncio.run(flood(args))
    Path(args.out).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
