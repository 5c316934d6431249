"""``[witness]``: a second, independent reading of every result (``docs/witness.md``).

A table that names a witness settles a round only when the reading of its result device
(the *primary*) and the witness's agree. The witness is one of:

- ``mqtt``: a recognition service on the network (a camera over the wheel, the dice
  or the shoe's output) that signs its reading like any principal and sends it as the
  command ``witness_result`` on ``commands/request`` (``principal``: the only principal
  whose readings count; empty: any holding ``witness_result``);
- ``device``: a second device of the result's kind (``device``: its
  ``[devices.<name>]``), whose own result events are the witness's;
- ``keypad``: the dealer's keypad entry (``device``: the keypad), its confirmed number
  the witness's reading (a game whose outcome is one number: roulette, fantan).

A leaf of ``tablecommon`` only: the configuration loads it by name (``SECTION_MODULES``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tablecommon.settings import FieldSpec, register_section, validate_fields

SOURCES = ("mqtt", "device", "keypad")

WITNESS_SPECS: dict[str, FieldSpec] = {
    "source": FieldSpec(
        "str", "mqtt", choices=SOURCES,
        doc="where the witness's reading comes from: `mqtt` (a recognition service's signed "
        "`witness_result` command), `device` (a second device of the result's kind), "
        "`keypad` (the dealer's keypad entry)",
    ),
    "name": FieldSpec(
        "str", "witness",
        doc="the witness's name: its health on the retained `devices/<name>` (not a "
        "configured device's name)",
    ),
    "principal": FieldSpec(
        "str", "",
        doc="`mqtt`: the one principal whose readings count (empty: any principal holding "
        "`witness_result`, the built-in role `witness`)",
    ),
    "device": FieldSpec(
        "str", "", doc="`device`, `keypad`: the `[devices.<name>]` whose reading is the witness's"
    ),
    "timeout_s": FieldSpec(
        "int", 10, range=(1, 3600),
        doc="seconds after the primary reading within which the witness must read; after, "
        "the round is held (`RESULT_DISPUTED`)",
    ),
}  # fmt: skip


@dataclass(frozen=True)
class WitnessSettings:
    """The validated ``[witness]`` section."""

    source: str = "mqtt"
    name: str = "witness"
    principal: str = ""
    device: str = ""
    timeout_s: int = 10

    @staticmethod
    def from_section(section: Mapping[str, Any] | None) -> WitnessSettings | None:
        """The settings, or None: the table names no witness."""
        if section is None:
            return None
        return WitnessSettings(**{k: section[k] for k in WITNESS_SPECS if k in section})


def _validate(data: Any, path: str, errors: list[str]) -> dict[str, Any] | None:
    if data is None:
        return None  # the table names no witness
    out = validate_fields(WITNESS_SPECS, data, path, errors)
    for key, spec in WITNESS_SPECS.items():
        out.setdefault(key, spec.default)
    source, device = out.get("source"), out.get("device")
    if source in ("device", "keypad") and not device:
        errors.append(f"{path}.device: a {source} witness names its [devices.<name>]")
    if source == "mqtt" and device:
        errors.append(f"{path}.device: an mqtt witness names no device (its principal signs)")
    if source != "mqtt" and out.get("principal"):
        errors.append(f"{path}.principal: only an mqtt witness signs as a principal")
    name = out.get("name")
    if isinstance(name, str) and (not name or "/" in name or "+" in name or "#" in name):
        errors.append(f"{path}.name: a single topic level (devices/<name>), got {name!r}")
    return out


def witness_problems(
    settings: WitnessSettings | None,
    devices: Any,
    *,
    result_kind: str | None,
    result_source: str,
) -> list[str]:
    """What keeps this table's witness from working: a table whose results are entered
    by command has no primary reading to witness; the witness's device must be an
    enabled device of the result's kind (``device``) or a keypad (``keypad``), and never
    the result device itself; its name must not be a configured device's."""
    if settings is None:
        return []
    out = []
    if result_source == "manual" or result_kind is None:
        out.append(
            "witness: a table whose results are entered by command has no device reading to "
            "witness (docs/witness.md)"
        )
    enabled = {d.name: d for d in devices if d.enabled}
    if settings.name in {d.name for d in devices}:
        out.append(f"witness.name: {settings.name!r} is a configured device's name")
    if settings.source in ("device", "keypad"):
        d = enabled.get(settings.device)
        want = "keypad" if settings.source == "keypad" else result_kind
        if d is None:
            out.append(f"witness.device: no enabled [devices.{settings.device}]")
        elif d.kind != want:
            out.append(
                f"witness.device: devices.{d.name} is a {d.kind}; a {settings.source} witness "
                f"of this table is a {want}"
            )
        elif d.name == next((x.name for x in enabled.values() if x.kind == result_kind), None):
            out.append(
                f"witness.device: devices.{d.name} is the table's result device; the witness "
                "is a second, independent one (list it after the result device)"
            )
    return out


register_section("witness", _validate)
