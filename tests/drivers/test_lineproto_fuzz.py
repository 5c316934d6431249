"""The Cammegh SS2 file fuzzed like the native codec (``test_cammegh_fuzz.py``): no event
from garbage, no result the wheel did not send.

Garbage is what holds no line the protocol reference's grammar accepts
(``bench.lineproto.REF_STATUS`` / ``REF_FAULT``, written from [ref §4.1] and §4.4, not
from the file). The seeded replays are ``bench.lineproto.fuzz`` (``python -m
bench.lineproto`` runs and reports the 10,000): 1,000 here, the 10,000 under ``-m slow``.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.lineproto import NEAR, SS2_FILE, fuzz, game_lines, is_valid
from drivers.lineproto.decode import decode_capture
from drivers.lineproto.load import load_protocol

PROTOCOL = load_protocol(SS2_FILE)
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

near = st.lists(st.sampled_from(list(NEAR)), max_size=80).map(bytes)
any_bytes = st.binary(max_size=200) | near


def events(data: bytes) -> list[dict[str, object]]:
    return list(decode_capture(data, PROTOCOL, device="wheel"))


def test_the_reference_grammar_is_what_it_says() -> None:
    """The oracle itself, on lines written out from [ref §4.1]."""
    assert is_valid(b"*X;5;099;17;0;142;0") and is_valid(b"*X:2:100: 0:8:141:1")
    assert is_valid(b"*X;1;001;  ;0;000;0") and is_valid(b"*F 100")
    for bad in (b"*X;5;257;17;0;142;0", b"*X;5;099;37;0;142;0", b"*X;5:099;17;0;142;0",
                b"*X;5;099;17;a;142;0", b"*X;8;099;17;0;142;0", b"*F", b"17"):  # fmt: skip
        assert not is_valid(bad), bad


@FUZZ
@given(st.lists(any_bytes, max_size=10))
def test_no_event_from_arbitrary_bytes_without_a_valid_line(chunks: list[bytes]) -> None:
    data = b"\r\n".join(chunks)
    if any(is_valid(line) for line in re.split(rb"[\r\n]", data)):
        return  # a real status line: not garbage (rare by chance)
    assert events(data) == []


@FUZZ
@given(
    st.lists(st.integers(0, 36), min_size=1, max_size=4),
    st.integers(1, 256),
    st.lists(st.tuples(st.integers(0, 10_000), any_bytes), max_size=12),
)
def test_garbage_between_a_games_lines_never_makes_a_wrong_or_second_result(
    numbers: list[int], first: int, inserts: list[tuple[int, bytes]]
) -> None:
    lines: list[bytes] = []
    sent, prev, spin = [], None, first
    for n in numbers:
        lines += game_lines(spin, prev, n)
        sent.append((spin, n))
        prev, spin = n, spin % 256 + 1
    clean = b"\r\n".join(lines) + b"\r\n"
    got_clean = [(e["spin"], e["number"]) for e in events(clean) if e["kind"] == "WinningNumber"]
    assert got_clean == sent  # the games as written are read whole
    for pos, junk in inserts:
        for piece in re.split(rb"[\r\n]", junk):
            if not is_valid(piece):
                lines.insert(pos % (len(lines) + 1), piece)
    data = b"\r\n".join(lines) + b"\r\n"
    got = [(e["spin"], e["number"]) for e in events(data) if e["kind"] == "WinningNumber"]
    assert set(got) <= set(sent)
    assert len(set(got)) == len(got)


def test_a_thousand_seeded_replays() -> None:
    r = fuzz(1000, seed=7)
    assert r.replays == 1000 and r.garbage_replays == 800 and r.lines > 10_000
    assert r.events_from_garbage == 0, r.examples
    assert r.wrong_or_second_results == 0, r.examples
    assert r.results_read >= 0.95 * r.results_sent  # garbage costs few results


@pytest.mark.slow
def test_ten_thousand_seeded_replays() -> None:
    """The acceptance figure: 10,000 replays, 0 events from garbage."""
    r = fuzz(10_000, seed=2026)
    assert r.replays == 10_000
    assert r.events_from_garbage == 0, r.examples
    assert r.wrong_or_second_results == 0, r.examples
