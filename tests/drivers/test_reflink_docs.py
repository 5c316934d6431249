"""The protocol pages stay true: every worked hex example in docs/protocols/ decodes
to exactly what it says, every message of every profile has an example, and the
message tables list the code's messages with their fields."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import Any

import pytest

from drivers.board.codec import PROFILE as BOARD
from drivers.reflink.frame import FrameKind, cobs_decode, decode_frame
from drivers.reflink.messages import COMMON, Profile, Sender
from drivers.shaker.codec import PROFILE as SHAKER
from drivers.shoe.codec import PROFILE as SHOE
from drivers.sign.codec import PROFILE as SIGN

DOCS = Path(__file__).resolve().parents[2] / "docs" / "protocols"
PROFILES: dict[str, Profile] = {"shoe": SHOE, "shaker": SHAKER, "board": BOARD, "sign": SIGN}
PAGES = ["reflink", "shoe", "shaker", "board", "sign"]

_BLOCK = re.compile(r"```reflink-example\n(.*?)```", re.S)
_VALUE = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|hex:[0-9A-Fa-f]*|0x[0-9A-Fa-f]+|\d+)')


def crc32_bitwise(data: bytes) -> int:
    """From the parameters in reflink.md section 3, not from the code under test."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def examples(page: str) -> list[dict[str, str]]:
    out = []
    for block in _BLOCK.findall((DOCS / f"{page}.md").read_text(encoding="utf-8")):
        fields = {}
        for line in block.strip().splitlines():
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
        out.append(fields)
    return out


def hexbytes(text: str) -> bytes:
    return bytes.fromhex(text.replace("|", " ").replace("-", " "))


def parse_value(raw: str) -> Any:
    if raw.startswith('"'):
        return json.loads(raw)
    if raw.startswith("hex:"):
        return bytes.fromhex(raw[4:])
    return int(raw, 0)


ALL = [(page, i, ex) for page in PAGES for i, ex in enumerate(examples(page))]


def test_every_page_has_examples() -> None:
    for page in PAGES:
        assert len(examples(page)) >= 4, page


@pytest.mark.parametrize(("page", "index", "ex"), ALL, ids=[f"{p}-{i}" for p, i, _ in ALL])
def test_worked_example_decodes_as_documented(page: str, index: int, ex: dict[str, str]) -> None:
    wire = hexbytes(ex["wire"])
    body = hexbytes(ex["body"])
    assert wire[0] == 0 and wire[-1] == 0 and 0 not in wire[1:-1]
    assert cobs_decode(wire[1:-1]) == body
    # header fields by hand (reflink.md section 3)
    version, control, address, session, seq, length = struct.unpack_from("<BBBHBB", body)
    assert version == 1 and length == len(body) - 11
    assert struct.unpack("<I", body[-4:])[0] == crc32_bitwise(body[:-4])

    kind, who, *rest = ex["frame"].split()
    noack = "NOACK" in rest
    params = dict(_VALUE.findall(" ".join(r for r in rest if r != "NOACK")))
    frame = decode_frame(wire)
    assert frame.kind is FrameKind[kind] and control & 0x03 == FrameKind[kind]
    assert frame.from_device is (who == "device") and bool(control & 0x80) is (who == "device")
    assert frame.noack is noack
    assert frame.address == address == int(params["addr"], 0)
    assert frame.session == session == int(params["session"], 0)
    assert frame.seq == seq == int(params["seq"], 0)

    profile = PROFILES[ex["profile"]]
    if ex["message"] == "-":
        assert frame.payload == b""
        return
    name, _, values = ex["message"].partition(" ")
    msg = profile.decode(frame.payload, Sender.DEVICE if frame.from_device else Sender.HOST)
    assert msg.name == name
    assert dict(msg.values) == {k: parse_value(v) for k, v in _VALUE.findall(values)}


@pytest.mark.parametrize("page", ["shoe", "shaker", "board", "sign"])
def test_every_message_of_a_profile_has_a_worked_example(page: str) -> None:
    profile = PROFILES[page]
    own = {m.name for m in profile.by_id.values() if m not in COMMON}
    shown = {ex["message"].split()[0] for ex in examples(page)} - {"-"}
    assert own <= shown, f"no example for {sorted(own - shown)}"


def test_the_common_messages_have_worked_examples() -> None:
    shown = {ex["message"].split()[0] for ex in examples("reflink")}
    assert {m.name for m in COMMON} <= shown


_ROW = re.compile(r"^\| (0x[0-9A-F]{2}) \| ([A-Z_]+) \| (host|device) \| ([^|]*) \|", re.M)


@pytest.mark.parametrize("page", PAGES)
def test_message_tables_match_the_code(page: str) -> None:
    text = (DOCS / f"{page}.md").read_text(encoding="utf-8")
    rows = {(int(t, 16), n, s, f.strip()) for t, n, s, f in _ROW.findall(text)}
    defs = (
        COMMON
        if page == "reflink"
        else [m for m in PROFILES[page].by_id.values() if m not in COMMON]
    )
    want = {
        (
            m.type_id,
            m.name,
            m.sender.value,
            " ".join(f"{fd.name}:{fd.kind}" for fd in m.fields) or "—",
        )
        for m in defs
    }
    assert rows == want


@pytest.mark.parametrize("page", ["shoe", "shaker", "board", "sign"])
def test_condition_tables_match_the_code(page: str) -> None:
    text = (DOCS / f"{page}.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| (\d+) \| ([A-Z_]+)", text, re.M))
    assert {int(k): v for k, v in rows.items()} == PROFILES[page].conditions


def test_crc_check_value_in_the_docs() -> None:
    text = (DOCS / "reflink.md").read_text(encoding="utf-8")
    assert "`CBF43926`" in text and crc32_bitwise(b"123456789") == 0xCBF43926


def test_every_setting_is_documented() -> None:
    from drivers.board.driver import BoardDriver, GpioBoardDriver
    from drivers.shaker.driver import ShakerDriver
    from drivers.shoe.driver import ShoeDriver, UsbShoeDriver
    from drivers.sign.driver import SignDriver

    common = (DOCS / "reflink.md").read_text(encoding="utf-8")
    pages: list[tuple[str, list[type[Any]]]] = [
        ("shoe", [ShoeDriver, UsbShoeDriver]),
        ("shaker", [ShakerDriver]),
        ("board", [BoardDriver, GpioBoardDriver]),
        ("sign", [SignDriver]),
    ]
    for page, classes in pages:
        text = common + (DOCS / f"{page}.md").read_text(encoding="utf-8")
        for cls in classes:
            for key in cls.SETTINGS:
                assert re.search(rf"`{key}`|^{key} = ", text, re.M), (
                    f"{cls.driver_name}: {key} not documented"
                )
