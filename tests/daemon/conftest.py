"""tests/daemon: make the support module (``_mqtt_support``) importable under
``--import-mode=importlib``, which does not put test directories on ``sys.path``; a
fresh journal (``journal``, signing with an identity of its own, as the daemon's does)
for the modules that do not define their own."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from firmware_host.auth import TableIdentity
from firmware_host.journal import Journal

_here = str(Path(__file__).resolve().parent)
if _here not in sys.path:
    sys.path.insert(0, _here)


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    j = Journal(tmp_path / "journal.sqlite3", identity=TableIdentity(Ed25519PrivateKey.generate()))
    yield j
    j.close()
