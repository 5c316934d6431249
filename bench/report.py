"""``python -m bench.report FILE.json``: the figures of a bench run as a Markdown table.

docs/performance.md pastes its tables from this output, so the published numbers are
the ones the run wrote.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from .common import fmt_num


def _spread(f: dict[str, Any]) -> str:
    st = f.get("stats", {})
    if "skipped" in f:
        return f"skipped: {f['skipped']}"
    if "p50" in st and "p99" in st and st.get("p50") is not None:
        return f"p50 {fmt_num(st['p50'])} / p99 {fmt_num(st['p99'])} / max {fmt_num(st['max'])} (n={st['n']})"
    if "median" in st:
        return (
            f"min {fmt_num(st['min'])}, IQR {fmt_num(st['q1'])}–{fmt_num(st['q3'])}, "
            f"max {fmt_num(st['max'])} (n={st['n']})"
        )
    return ""


def markdown(doc: dict[str, Any]) -> str:
    lines = [
        f"`{doc['command']}` — {doc['mode']} run of {doc['started_at']}, {doc['duration_s']:.0f} s",
        "",
        "| section | figure | value | spread | goal |",
        "| --- | --- | --- | --- | --- |",
    ]
    for f in doc["figures"]:
        goal = ""
        if "goal" in f:
            goal = f"{f['goal']}: **{'met' if f['goal_met'] else 'MISSED'}**"
        value = "–" if f.get("value") is None else fmt_num(f["value"], f["unit"])
        lines.append(f"| {f['section']} | {f['name']} | {value} | {_spread(f)} | {goal} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m bench.report RESULTS.json", file=sys.stderr)
        return 2
    with open(args[0], encoding="utf-8") as f:
        print(markdown(json.load(f)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
