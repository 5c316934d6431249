"""``[switches.<name>]``: the table's doors, lids, boxes and tamper loops, one section each.

```toml
[switches.drop_box]
kind = "drop_box"        # lid, door, drop_box, cash_box, tray, logic, tilt, tamper
pin = 22                 # BCM pin of the contact
pin_b = 23               # optional: the changeover switch's other contact
open_level = "high"      # the level of `pin` when open (a switch to ground closed by the shut door)
```

The validator (registered as the ``switches`` section) names each problem with its
path: an unknown kind, a pin used twice among the switches (pins shared with a
``[devices]`` section are checked by the daemon's assembly, which sees both), a
changeover switch on one pin, a bounce not shorter than the chatter window.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tablecommon.settings import FieldSpec, register_section, validate_fields

__all__ = ["SWITCH_KINDS", "SWITCH_SETTINGS", "SwitchConfig", "validate_switches"]

#: Each kind of switch and what it watches.
SWITCH_KINDS: dict[str, str] = {
    "lid": "the table's lid (its cover over the layout or the wheel)",
    "door": "a door of the table's cabinet",
    "drop_box": "the drop box (where cash goes at the table) or its door",
    "cash_box": "the cash box or its door",
    "tray": "the dealer's chip tray (its lid or its lock)",
    "logic": "the controller's enclosure (the Pi and its wiring)",
    "tilt": "a tilt switch (the table or a device moved)",
    "tamper": "a tamper loop (a wire around what must not be opened)",
}

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")


def _kind(value: Any) -> str | None:
    if value in SWITCH_KINDS:
        return None
    return f"unknown kind {value!r}; kinds: {', '.join(SWITCH_KINDS)}"


SWITCH_SETTINGS: dict[str, FieldSpec] = {
    "kind": FieldSpec("str", required=True, check=_kind,
                      doc="what it watches: " + ", ".join(SWITCH_KINDS)),
    "pin": FieldSpec("int", required=True, range=(0, 27), doc="BCM pin of the contact"),
    "pin_b": FieldSpec("int", None, range=(0, 27),
                       doc="BCM pin of a changeover switch's other contact, which reads the "
                       "opposite of `pin` (both alike: no valid state, a fault); optional"),
    "pull": FieldSpec("str", "up", choices=("up", "down", "none"),
                      doc="up: internal pull-up (a switch to ground); down: pull-down; none: "
                      "an external resistor"),
    "open_level": FieldSpec("str", "high", choices=("high", "low"),
                            doc="the level of `pin` when open (default high: a switch to "
                            "ground closed by the shut door, so a cut wire reads open)"),
    "bounce_ms": FieldSpec("int", 20, range=(1, 1000),
                           doc="a reading counts once stable this long (contact bounce)"),
    "chatter_ms": FieldSpec("int", 1000, range=(50, 60000),
                            doc="changing this long without settling, or more than "
                            "chatter_changes changes within it, is a fault (chatter)"),
    "chatter_changes": FieldSpec("int", 6, range=(2, 100),
                                 doc="accepted changes within chatter_ms beyond which the "
                                 "switch chatters"),
    "open_in_round": FieldSpec("bool", False,
                               doc="an opening while a round is in flight is expected (the "
                               "dealer's tray); false: it raises an alert"),
    "technician": FieldSpec("bool", True,
                            doc="an opening between rounds needs a technician logged in at "
                            "the console (false: it never raises an alert between rounds)"),
    "enabled": FieldSpec("bool", True, doc="false keeps the section without reading the switch"),
}  # fmt: skip


@dataclass(frozen=True)
class SwitchConfig:
    """One validated ``[switches.<name>]`` section."""

    name: str
    kind: str
    pin: int
    pin_b: int | None = None
    pull: str = "up"
    open_level: str = "high"
    bounce_ms: int = 20
    chatter_ms: int = 1000
    chatter_changes: int = 6
    open_in_round: bool = False
    technician: bool = True
    enabled: bool = True

    def used_pins(self) -> Iterable[tuple[str, int]]:
        yield "pin", self.pin
        if self.pin_b is not None:
            yield "pin_b", self.pin_b


def validate_switch(name: str, data: Any, path: str, errors: list[str]) -> SwitchConfig | None:
    if not _NAME.match(name):
        errors.append(
            f"{path}: a switch's name is 1-32 letters, digits, '_' or '-' (it is used in "
            "MQTT topics)"
        )
        return None
    before = len(errors)
    v = validate_fields(SWITCH_SETTINGS, data, path, errors)
    if len(errors) != before:
        return None
    if v["pin_b"] is not None and v["pin_b"] == v["pin"]:
        errors.append(f"{path}.pin_b: GPIO{v['pin']} is also pin: a changeover switch's "
                      "two contacts are two pins")  # fmt: skip
    if v["bounce_ms"] >= v["chatter_ms"]:
        errors.append(f"{path}.chatter_ms: must be longer than bounce_ms ({v['bounce_ms']})")
    if len(errors) != before:
        return None
    return SwitchConfig(name=name, **v)


def validate_switches(data: Any, path: str, errors: list[str]) -> dict[str, SwitchConfig]:
    """The ``switches`` section validator (registered with the config loader)."""
    out: dict[str, SwitchConfig] = {}
    if data is None:
        return out
    if not isinstance(data, Mapping):
        errors.append(f"{path}: expected tables [switches.<name>], got {data!r}")
        return out
    for name, section in data.items():
        cfg = validate_switch(str(name), section, f"{path}.{name}", errors)
        if cfg is not None:
            out[str(name)] = cfg
    owners: dict[int, str] = {}
    for cfg in out.values():
        if not cfg.enabled:
            continue
        for label, pin in cfg.used_pins():
            where = f"{path}.{cfg.name}.{label}"
            if pin in owners:
                errors.append(f"{where}: GPIO{pin} is already used by {owners[pin]}")
            else:
                owners[pin] = where
    return out


register_section("switches", validate_switches)
