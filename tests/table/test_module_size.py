"""No module outside the rules core over about 800 lines (issue 13): a module that grows
past it is doing two jobs; split it by concern. ``firmware_host/games/`` is exempt (a
game's rules follow its regulation's articles and stay in one place)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("firmware_host", "drivers", "tablesim", "tableview")
EXEMPT = ROOT / "firmware_host" / "games"
LIMIT = 820  # "about 800"


def test_no_module_outside_the_games_is_over_about_800_lines() -> None:
    sizes = {
        path: len(path.read_text(encoding="utf-8").splitlines())
        for pkg in PACKAGES
        for path in (ROOT / pkg).rglob("*.py")
        if not path.is_relative_to(EXEMPT)
    }
    assert len(sizes) > 50  # the tree was really read
    big = sorted(f"{p.relative_to(ROOT)}: {n} lines" for p, n in sizes.items() if n > LIMIT)
    assert not big, "split these by concern:\n" + "\n".join(big)
