"""``canonical_json_nofloat`` (orjson) writes exactly what ``canonical_json`` (the
standard library, the definition the audit chain's digests are computed on) writes,
for every value without a float: a round payload's digest does not depend on which
of the two computed it (issue 20)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_host.jsonio import canonical_json, canonical_json_nofloat

# Every character, lone surrogates included (orjson refuses those: the fallback decides).
text = st.text(st.characters(blacklist_categories=()), max_size=12)
scalars = (
    st.none()
    | st.booleans()
    | st.integers()  # unbounded: beyond 64 bits orjson refuses, the fallback writes them
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | text
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(text, inner, max_size=5)
        | st.tuples(inner, inner)
    ),
    max_leaves=40,
)


def _outcome(fn: object, value: object) -> tuple[str, object]:
    try:
        return "ok", fn(value)  # type: ignore[operator]
    except (TypeError, ValueError) as exc:
        return "error", type(exc).__name__


@settings(max_examples=3000, deadline=None)
@given(values)
def test_the_same_text_as_the_standard_library_for_every_float_free_value(value: object) -> None:
    assert _outcome(canonical_json_nofloat, value) == _outcome(canonical_json, value)


def test_a_real_round_payload_gives_the_same_text(tmp_path: object) -> None:
    bets = [
        {
            "bet_id": f"p{i}",
            "bet_type": "street",
            "breakage": "1/3",
            "commission": 0,
            "net": -27800 + i,
            "payout": 0,
            "result": "lose",
            "seat": i % 8 + 1,
            "selection": [13, 14, 15],
            "stake": 27800,
            "note": '\u00e9\u4e2d\n\t"\\\x00\x1f\u2028',
        }
        for i in range(100)
    ]
    payload = {"round_id": "r1", "bets": bets, "totals": {"stake": 10**20, "net": -(2**70)}}
    assert canonical_json_nofloat(payload) == canonical_json(payload)
    assert json.loads(canonical_json_nofloat(payload)) == json.loads(canonical_json(payload))


@pytest.mark.parametrize(
    "bad",
    [{1: "int key"}, {"k": {1, 2}}, {"k": object()}, {"a": 1, 2: "mixed keys"}],
    ids=["int key", "set", "object", "mixed keys"],
)
def test_what_the_standard_library_refuses_or_converts_is_decided_by_it(bad: object) -> None:
    assert _outcome(canonical_json_nofloat, bad) == _outcome(canonical_json, bad)
