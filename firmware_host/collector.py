"""Python's cyclic garbage collector, held where a pause would land on the result's path."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_held() -> Iterator[None]:
    """Python's cyclic garbage collector held through a settlement: settling, the
    commit and (in the daemon) the round's hand-over to the MQTT client, on the
    result's path, allocate enough to trigger collections (0.15 ms a young one, 1 ms
    and more an older one, measured in ``bench.stages``). Held, they run after it,
    once the round is on the wire. Reference counting still frees what is not in a
    cycle; a collector already held stays held."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
