"""Sign docs/mqtt.md's example payloads as a table would, with the documented example key.

Every ```json schema=<name>``` block of a payload the table publishes carries the
current ``schema_version`` and a ``signature`` made with RFC 8032's first test key
(public, so that a reader can verify any example with any Ed25519 library; the key of
``docs/security.md``'s test vector). ``tests/daemon/test_schemas.py`` verifies them;
after editing an example, run ``python tests/daemon/resign_docs.py`` (from the repository,
inside .venv) to sign it again.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "mqtt.md"
FENCE = re.compile(r"^```json schema=(?P<name>\w+)[^\n]*\n(?P<body>.*?)^```\s*$", re.S | re.M)

#: RFC 8032 section 7.1, TEST 1 (the docs' example key; anyone can check with it).
EXAMPLE_SECRET = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"

#: Schema -> topic below the table's root (``device`` adds the payload's device name).
TOPICS = {
    "round": "rounds",
    "state": "state",
    "anchor": "anchor",
    "device": "devices/",
    "jackpot": "jackpot",
    "event": "events",
    "board": "board",
    "stats": "stats",
    "alerts": "alerts",
    "limits": "limits",
    "bet_response": "bets/response",
    "command_response": "commands/response",
}


def example_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(bytes.fromhex(EXAMPLE_SECRET))


def topic_of(name: str, doc: dict[str, Any]) -> str:
    topic = TOPICS[name]
    return topic + str(doc.get("device")) if topic.endswith("/") else topic


def resign(text: str) -> str:
    from firmware_host.auth.evidence import seal
    from firmware_host.schemas import PAYLOAD_SCHEMA_VERSION

    key = example_key()

    def one(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in TOPICS:
            return m.group(0)
        # Edited as text (the examples keep their layout): the version, and the
        # signature as the last member.
        body = re.sub(
            r'"schema_version": \d+', f'"schema_version": {PAYLOAD_SCHEMA_VERSION}', m.group("body")
        )
        body = re.sub(r',\n  "signature": "[^"]*"\n}\s*$', "\n}\n", body)
        doc = json.loads(body)
        signed = json.loads(seal(key, topic_of(name, doc), doc))
        body = body.rstrip()[:-1].rstrip() + f',\n  "signature": "{signed["signature"]}"\n}}\n'
        return m.group(0).replace(m.group("body"), body, 1)

    return FENCE.sub(one, text)


def main() -> int:
    text = DOC.read_text(encoding="utf-8")
    new = resign(text)
    if new != text:
        DOC.write_text(new, encoding="utf-8")
        print(f"{DOC}: examples signed again")
    else:
        print(f"{DOC}: every example already signed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
