"""The settings schema of a table file's sections, and their registration.

A module that reads a top-level section of the table file (``[devices]``, ``[mqtt]``,
``[journal]``...) declares its keys as :class:`FieldSpec` values, validates the section
with :func:`validate_fields` and registers the validator with
:func:`register_section`; ``firmware_host.config`` validates a whole file with every
section registered (and imports the modules that register them, its
``SECTION_MODULES``). Every problem is one line with its dotted path
(``devices.wheel.baud: expected an integer``); unknown keys are errors.

Both the runtime and the drivers (each driver's ``SETTINGS``, the ``[devices]``
section) use it; it imports nothing of the project but :mod:`tablecommon.values`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .values import check_value, coerce

__all__ = [
    "ConfigInvalid",
    "FieldSpec",
    "SectionValidator",
    "register_section",
    "registered_sections",
    "validate_fields",
]


class ConfigInvalid(ValueError):
    """Every problem found in a table file (``firmware_host.config.load_config``) or a
    section of it (``drivers.registry.create_driver``), each one line with its path."""

    def __init__(self, source: str, errors: list[str]) -> None:
        self.source = source
        self.errors = errors
        super().__init__(f"{source}: {len(errors)} error(s)\n" + "\n".join(errors))


@dataclass(frozen=True)
class FieldSpec:
    """One key of a non-game section."""

    kind: str  # int, bool, str, path, fraction, int_list, str_list, table
    default: Any = None
    required: bool = False
    doc: str = ""
    range: tuple[int, int] | None = None
    choices: tuple[Any, ...] | None = None
    check: Callable[[Any], str | None] | None = None
    cite: str = ""

    def meta(self) -> dict[str, Any]:
        return {
            "range": self.range,
            "choices": self.choices,
            "check": self.check,
            "cite": self.cite,
        }


#: A section validator: (data, path, errors) -> parsed value (or None on errors).
SectionValidator = Callable[[Any, str, list[str]], Any]

_SECTIONS: dict[str, SectionValidator] = {}


def register_section(name: str, validator: SectionValidator) -> None:
    """Let a module (devices, mqtt, journal...) validate its own top-level section."""
    _SECTIONS[name] = validator


def registered_sections() -> dict[str, SectionValidator]:
    """Every section registered so far, name -> validator (in registration order)."""
    return dict(_SECTIONS)


def validate_fields(
    specs: Mapping[str, FieldSpec], data: Any, path: str, errors: list[str]
) -> dict[str, Any]:
    """Validate a flat table against ``specs``: unknown keys, types, ranges, required."""
    out: dict[str, Any] = {}
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        errors.append(f"{path}: expected a table, got {data!r}")
        return out
    for key, value in data.items():
        spec = specs.get(key)
        p = f"{path}.{key}"
        if spec is None:
            errors.append(f"{p}: unknown key; known keys: {', '.join(sorted(specs)) or 'none'}")
            continue
        if spec.kind == "table":
            if not isinstance(value, Mapping):
                errors.append(f"{p}: expected a table, got {value!r}")
                continue
            out[key] = dict(value)
            continue
        v, err = coerce(spec.kind, value, p, spec.meta())
        if err is None:
            err = check_value(v, p, spec.meta())
        if err:
            errors.append(err)
            continue
        out[key] = v
    for key, spec in specs.items():
        if key not in out and key not in data:
            if spec.required:
                errors.append(f"{path}.{key}: required key is missing ({spec.doc})")
            else:
                out[key] = spec.default
    return out
