"""The view's device list shows a witness's health (``docs/witness.md``): the page's own
``witnessText`` (``tableview/static/table.js``) run by Node on a ``devices/<name>``
payload of a witness, and on a device that is not one. Skipped without Node."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

VIEW = Path(__file__).resolve().parents[1] / "tableview" / "static" / "table.js"
NODE = shutil.which("node")


def witness_text(witness: object) -> str:
    source = VIEW.read_text(encoding="utf-8")
    match = re.search(r"^function witnessText\(w\) \{.*?^\}", source, re.S | re.M)
    assert match, "table.js has no witnessText"
    script = f"{match.group(0)}\nprocess.stdout.write(witnessText({json.dumps(witness)}));"
    done = subprocess.run(
        [NODE or "node", "-e", script], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(NODE is None, reason="Node is not installed")
def test_the_device_list_shows_the_witness_s_disagreement_rate_and_lag() -> None:
    shown = witness_text(
        {
            "source": "mqtt",
            "readings": 412,
            "agreed": 409,
            "disagreed": 1,
            "timeouts": 2,
            "resolved": 3,
            "disagreement_rate": 0.0024,
            "lag_ms": 184,
            "mean_lag_ms": 231,
            "last_reading_at": None,
        }
    )
    assert shown == " – disagreements 0.2 %, timeouts 2, lag 184 ms"
    before = {"source": "mqtt", "readings": 0, "agreed": 0, "disagreed": 0, "timeouts": 0,
              "resolved": 0, "disagreement_rate": None, "lag_ms": None}  # fmt: skip
    assert witness_text(before) == " – disagreements –, timeouts 0, lag –"
    assert witness_text(None) == ""  # a device that is not a witness shows nothing more
