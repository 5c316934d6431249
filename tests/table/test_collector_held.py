"""The collector held through a settlement (issue 20): released afterwards whatever
happens, and a collector someone else held stays held."""

from __future__ import annotations

import gc

import pytest

from firmware_host.collector import collector_held


def test_held_inside_and_released_after_even_when_the_settlement_raises() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_held():
        assert not gc.isenabled()
        raise RuntimeError("settlement failed")
    assert gc.isenabled()


def test_a_collector_already_held_stays_held() -> None:
    gc.disable()
    try:
        with collector_held():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
