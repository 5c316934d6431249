"""The flood's expected answers on a signed table, checked against the table's own
request handler in process (no broker, no daemon: a second or two in the ordinary
suite), for every kind of ``_flood_requests``.

Regression: after the link and request branches were merged, the flood's
classification parsed each junk request with ``json.loads``, which crashed on the
"deeply nested" kind (RecursionError; the flooder process then hung and the fault test
timed out after 300 s) and expected ``UNSIGNED`` for two kinds the table refuses while
reading them, before any signature is looked at (``REQUEST_TOO_DEEP``,
``REQUEST_TOO_COMPLEX``: docs/mqtt.md, "Requests: bounds and order")."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

from _flood_requests import make_flood

from ..table.floor_support import make_table

TOPIC = {"bets": "bets/request", "commands": "commands/request"}


def test_every_flood_request_is_answered_by_the_signed_table_with_a_code_the_flood_expects(
    tmp_path: Path,
) -> None:
    table = make_table(tmp_path, game="fantan")
    assert table.floor.auth.signatures
    gen = make_flood(random.Random(20260508))
    wrong: list[str] = []
    kinds: Counter[str] = Counter()
    for _ in range(1500):  # every kind in turn first, then at random
        m = next(gen)
        kinds[m.category] += 1
        a = table.floor.answer(TOPIC[m.kind], m.payload)
        if a.get("status") not in ("rejected", "error") or a.get("code") not in m.codes:
            wrong.append(f"{m.category}: {a.get('code')} not in {sorted(m.codes)}")
        if a.get("request_id") != m.request_id:  # the id when readable (issue 29), else null
            wrong.append(
                f"{m.category}: request_id {a.get('request_id')!r}, expected {m.request_id!r}"
            )
    assert not wrong, wrong[:10]
    # every kind was sent, the bounded ones several times (their size is random)
    assert len(kinds) == 36 and min(kinds.values()) >= 10, kinds
