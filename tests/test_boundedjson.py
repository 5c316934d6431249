"""The bounded request decoder (issue 14 item 6: "requests bounded before they are
parsed (size and nesting depth; a parser with a depth limit)").

Checked against independent computations: the nesting depth of a value is computed
here by recursion over the Python value, and what is accepted must parse to exactly
what ``json.loads`` gives.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_host import boundedjson as bj
from firmware_host.games.money import parse_json_int

scalars = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=12)
# Strings full of the characters that matter: brackets, quotes, backslashes.
nasty_text = st.text(alphabet='[]{}"\\ab:,', max_size=20)
values = st.recursive(
    scalars | nasty_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(nasty_text, inner, max_size=4),
    max_leaves=40,
)


def depth(v: Any) -> int:
    """Nesting of arrays and objects, computed on the value (independently of the text)."""
    if isinstance(v, list):
        return 1 + max((depth(x) for x in v), default=0)
    if isinstance(v, dict):
        return 1 + max((depth(x) for x in v.values()), default=0)
    return 0


def containers(v: Any) -> int:
    if isinstance(v, list):
        return 1 + sum(containers(x) for x in v)
    if isinstance(v, dict):
        return 1 + sum(containers(x) for x in v.values())
    return 0


def nest(n: int, inner: Any = 1) -> Any:
    for i in range(n):
        inner = [inner] if i % 2 else {"k": inner}
    return inner


@settings(max_examples=400, deadline=None)
@given(values)
def test_the_depth_is_the_values_depth_whatever_its_strings_hold(v: Any) -> None:
    for text in (json.dumps(v), json.dumps(v, indent=1), json.dumps(v, ensure_ascii=False)):
        assert bj.nesting(text.encode()) == depth(v)


@settings(max_examples=400, deadline=None)
@given(values)
def test_what_is_accepted_parses_exactly_as_json_does(v: Any) -> None:
    raw = json.dumps(v).encode()
    if depth(v) <= bj.MAX_DEPTH and containers(v) <= bj.MAX_CONTAINERS:
        assert bj.loads(raw) == json.loads(raw)
    else:
        with pytest.raises(bj.RequestShapeError):
            bj.loads(raw)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600))
def test_arbitrary_bytes_are_refused_with_a_code_or_parsed_never_anything_else(raw: bytes) -> None:
    try:
        bj.loads(raw, parse_int=parse_json_int)
    except bj.RequestShapeError as exc:
        assert exc.code in (
            "MALFORMED_JSON",
            "REQUEST_TOO_DEEP",
            "REQUEST_TOO_COMPLEX",
            "DUPLICATE_MEMBER",
        )
        assert "\n" not in exc.message
    assert bj.peek_request_id(raw) is None or isinstance(bj.peek_request_id(raw), str)


def test_the_limits() -> None:
    assert bj.loads(json.dumps(nest(bj.MAX_DEPTH)).encode()) == nest(bj.MAX_DEPTH)
    with pytest.raises(bj.RequestShapeError) as exc:
        bj.loads(json.dumps(nest(bj.MAX_DEPTH + 1)).encode())
    assert exc.value.code == "REQUEST_TOO_DEEP" and str(bj.MAX_DEPTH + 1) in exc.value.message
    flat = [[1]] * bj.MAX_CONTAINERS  # one more than the limit with the outer list
    with pytest.raises(bj.RequestShapeError) as exc:
        bj.loads(json.dumps(flat).encode())
    assert exc.value.code == "REQUEST_TOO_COMPLEX"
    big = json.dumps({"request_id": "r", "pad": "x" * bj.MAX_REQUEST_BYTES}).encode()
    with pytest.raises(bj.RequestShapeError) as exc:
        bj.loads(big)
    assert exc.value.code == "REQUEST_TOO_LARGE"


def test_the_attack_of_the_issue_is_refused_without_recursing() -> None:
    """Deeply nested JSON used to recurse in ``json.loads`` to RecursionError (a
    traceback per request); it is now refused on its shape before parsing."""
    for raw in (b"[" * 15000, b'{"a":' * 3000, b"[" * 5000 + b"]" * 5000):
        with pytest.raises(bj.RequestShapeError) as exc:
            bj.loads(raw)
        assert exc.value.code in ("REQUEST_TOO_DEEP", "REQUEST_TOO_COMPLEX")


def test_brackets_and_escaped_quotes_inside_strings_do_not_count() -> None:
    v = {"request_id": "r", "reason": '[[[[{{{{ "quoted [" \\ ]]]]' * 40, "k": ["\\", '"[']}
    raw = json.dumps(v).encode()
    assert raw.count(b"[") > bj.MAX_DEPTH
    assert bj.nesting(raw) == 2
    assert bj.loads(raw) == v


def test_the_request_id_is_echoed_only_from_a_request_that_parses() -> None:
    assert bj.peek_request_id(b'{"request_id": "pos-1", "bet": {}}') == "pos-1"
    assert bj.peek_request_id(b'{"request_id": "x", "action": place}') is None
    assert bj.peek_request_id(b"[" * 20000) is None
    assert bj.peek_request_id(b'{"request_id": "' + b"r" * 200 + b'"}') is None


# -- issue 29: one reading of a request ------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b'{"request_id": "r1", "bet": {"stake": 10000, "stake": 90000}}',  # the issue's
        b'{"request_id": "r1", "request_id": "r2"}',
        b'{"a": [1, {"b": {"c": 1, "c": 1}}]}',  # any depth, even the same value
        b'{"stake": 1, "st\\u0061ke": 2}',  # the same name once its escapes are read
        b'[{"x": 1}, {"y": 1, "y": 2}]',
    ],
)
def test_a_member_named_twice_is_refused_at_any_depth(raw: bytes) -> None:
    with pytest.raises(bj.RequestShapeError) as exc:
        bj.loads(raw, parse_int=parse_json_int)
    assert exc.value.code == "DUPLICATE_MEMBER"
    assert b"90000" not in exc.value.message.encode() and "stake" not in exc.value.message
    assert bj.peek_request_id(raw) is None  # no request id read from it either


def test_the_same_name_in_two_objects_is_not_a_duplicate() -> None:
    raw = b'{"bet": {"stake": 1}, "other": {"stake": 2}, "list": [{"k": 1}, {"k": 2}]}'
    assert bj.loads(raw) == json.loads(raw)
