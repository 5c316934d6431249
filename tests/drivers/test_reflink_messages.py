"""Reflink message tables: every message of every profile round-trips; arbitrary
payloads raise only MessageError (a CodecError); a simulated device answers any
payload without raising (REFUSED for what it cannot take)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drivers.base import CodecError
from drivers.board.codec import PROFILE as BOARD
from drivers.board.model import BoardModel
from drivers.reflink.device import DeviceModel
from drivers.reflink.messages import COMMON, Message, MessageDef, MessageError, Profile, Sender
from drivers.shaker.codec import PROFILE as SHAKER
from drivers.shaker.model import ShakerModel
from drivers.shoe.codec import PROFILE as SHOE
from drivers.shoe.model import ShoeModel
from drivers.sign.codec import PROFILE as SIGN
from drivers.sign.model import SignModel

PROFILES = [SHOE, SHAKER, BOARD, SIGN]
ALL = [(p, m) for p in PROFILES for m in p.by_id.values()]
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_KIND = {
    "u8": st.integers(0, 0xFF),
    "u16": st.integers(0, 0xFFFF),
    "u32": st.integers(0, 0xFFFFFFFF),
    "u64": st.integers(0, 2**64 - 1),
    "ascii3": st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=3, max_size=3),
    "text": st.text(max_size=40),
    "bytes": st.binary(max_size=60),
    "rest": st.binary(max_size=60),
}


def values_for(m: MessageDef) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({fd.name: _KIND[fd.kind] for fd in m.fields})


def test_profiles_share_the_common_messages_and_ids_are_in_their_ranges() -> None:
    ids = {p.profile_id for p in PROFILES}
    assert ids == {1, 2, 3, 4}
    for p in PROFILES:
        for m in COMMON:
            assert p.by_id[m.type_id] is m
        for m in p.by_id.values():
            if m not in COMMON:
                assert 0x10 <= m.type_id <= 0x7F, (p.name, m.name)
            if m.reply is not None:
                assert p.by_name[m.reply].sender is Sender.DEVICE


@pytest.mark.parametrize(("profile", "defn"), ALL, ids=[f"{p.name}-{m.name}" for p, m in ALL])
@FUZZ
@given(data=st.data())
def test_every_message_round_trips(profile: Profile, defn: MessageDef, data: st.DataObject) -> None:
    values = data.draw(values_for(defn))
    payload = profile.encode(defn.name, **values)
    assert payload[0] == defn.type_id
    msg = profile.decode(payload, defn.sender)
    assert msg == Message(defn, values)
    other = Sender.HOST if defn.sender is Sender.DEVICE else Sender.DEVICE
    with pytest.raises(MessageError):
        profile.decode(payload, other)
    with pytest.raises(MessageError):
        profile.decode(payload + b"\x00", defn.sender)  # trailing byte


@pytest.mark.parametrize("profile", PROFILES, ids=[p.name for p in PROFILES])
@FUZZ
@given(payload=st.binary(max_size=80), sender=st.sampled_from(list(Sender)))
def test_arbitrary_payloads_raise_only_message_error(
    profile: Profile, payload: bytes, sender: Sender
) -> None:
    try:
        msg = profile.decode(payload, sender)
    except CodecError as exc:
        assert isinstance(exc, MessageError)
        return
    assert profile.encode(msg.name, **msg.values) == payload


def test_encode_refuses_values_that_do_not_fit() -> None:
    with pytest.raises(ValueError):
        SHOE.encode("CARD", seq=70000, card=0x10, position=0)
    with pytest.raises(ValueError):
        SIGN.encode("AMOUNT", amount=-1, digits=2, currency="MOP", label="")
    with pytest.raises(ValueError):
        SIGN.encode("AMOUNT", amount=1, digits=2, currency="mop", label="")
    with pytest.raises(ValueError):
        SHOE.encode("CARD", seq=1, card=0x10)  # missing field


MODELS: list[type[DeviceModel]] = [ShoeModel, ShakerModel, BoardModel, SignModel]


@pytest.mark.parametrize("model_cls", MODELS, ids=[m.__name__ for m in MODELS])
@FUZZ
@given(payloads=st.lists(st.binary(max_size=60), max_size=8))
def test_simulated_devices_answer_anything(
    model_cls: type[DeviceModel], payloads: list[bytes]
) -> None:
    model = model_cls()
    for p in payloads:
        reply = model.handle(0, p)
        if reply:
            msg = model.profile.decode(reply, Sender.DEVICE)  # always a valid reply
            assert msg.name in ("IDENT", "STATUS", "REFUSED")


@pytest.mark.parametrize("model_cls", MODELS, ids=[m.__name__ for m in MODELS])
def test_unknown_request_is_refused_and_hello_identifies(model_cls: type[DeviceModel]) -> None:
    model = model_cls()
    refused = model.profile.decode(model.handle(0, b"\x7e"), Sender.DEVICE)
    assert (refused.name, refused["request"], refused["reason"]) == ("REFUSED", 0x7E, 1)
    ident = model.profile.decode(model.handle(0, b"\x01\x01"), Sender.DEVICE)
    assert ident.name == "IDENT"
    assert (ident["link_version"], ident["profile"], ident["major"]) == (
        1,
        model.profile.profile_id,
        1,
    )


@pytest.mark.parametrize("decks", [13, 0xFF])
def test_shoe_refuses_a_shuffle_of_more_decks_than_a_shoe_holds(decks: int) -> None:
    """Found by test_simulated_devices_answer_anything: the payload ``b"@\\r"`` (SHUFFLE,
    decks=13) made the shoe model raise the rules core's SHOE_INVALID instead of
    answering. A device refuses a bad argument (REFUSED 2, docs/protocols/shoe.md) and
    keeps its shuffle."""
    model = ShoeModel(decks=8, seed=1)
    model.shuffle()
    before = (model.shuffle_no, model.decks, model.remaining)
    reply = model.profile.decode(model.handle(0, bytes([0x40, decks])), Sender.DEVICE)
    assert (reply.name, reply["request"], reply["reason"]) == ("REFUSED", 0x40, 2)
    assert "1 to 12 decks" in reply["text"]
    assert (model.shuffle_no, model.decks, model.remaining) == before
    assert model.handle(0, b"@\x0c") == b""  # 12 decks: the most a shoe holds
    assert (model.decks, model.remaining) == (12, 12 * 52)
