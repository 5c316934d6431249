"""A payload as the table publishes it: what an extension hands the floor link, signed
by the link (``sealer`` in ``firmware_host/mqtt/items.py``) with the table's identity.
Tests that catch a payload before the link validate it against its schema in this form."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from firmware_host.auth import TableIdentity

_IDENTITY = TableIdentity.generate()


def as_published(topic: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` signed for ``topic`` (below the table's root) and read back."""
    out: dict[str, Any] = json.loads(_IDENTITY.seal(topic, body))
    return out
