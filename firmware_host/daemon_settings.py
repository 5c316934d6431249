"""The ``[daemon]`` section: how the daemon itself runs (the watchdog's loop check, a
simulated table), declared here and read by :func:`firmware_host.assembly.read_plan`."""

from __future__ import annotations

from typing import Any

from tablecommon.settings import FieldSpec, register_section, validate_fields

DAEMON_SPECS: dict[str, FieldSpec] = {
    "watchdog_check": FieldSpec("bool", True, doc="withhold watchdog pings while the loop lags"),
    "simulated": FieldSpec(
        "bool",
        False,
        doc="the table's devices are simulators (the demo, a test bench): GPIO drivers get "
        "gpiozero's mock pins; never on a casino table, where a missing GPIO is an error",
    ),
}


def _validate_daemon(data: Any, path: str, errors: list[str]) -> dict[str, Any]:
    return validate_fields(DAEMON_SPECS, data, path, errors)


register_section("daemon", _validate_daemon)
