"""Rewrite what the commands' specs decide (``firmware_host/commands.py``): the command
table of ``docs/mqtt.md`` and the command rules of
``firmware_host/schemas/command_request.json``. Run after adding or changing a command:

    .venv/bin/python tests/regen_commands.py

``tests/test_command_specs.py`` fails while either is out of date.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from firmware_host.commands import CATALOGUE, Catalogue, with_docs_table, with_schema_rules

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "firmware_host" / "schemas" / "command_request.json"
DOC = ROOT / "docs" / "mqtt.md"


def generated(specs: Catalogue = CATALOGUE) -> dict[Path, str]:
    """Each generated file's text as ``specs`` make it."""
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    return {
        SCHEMA: json.dumps(with_schema_rules(schema, specs), indent=2) + "\n",
        DOC: with_docs_table(DOC.read_text(encoding="utf-8"), specs),
    }


def main() -> int:
    for path, text in generated().items():
        if path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"rewrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
