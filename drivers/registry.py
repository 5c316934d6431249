"""Which driver serves each ``[devices.<name>]`` section, and its validation.

Configuration::

    [devices.wheel]
    driver = "cammegh-ss2"          # a declared driver's name
    port = "/dev/serial/by-id/usb-FTDI_FT232R-if00-port0"
    baud = 9600

    [devices.keypad]
    driver = "keypad-gpio"
    pins = { "1" = 5, "2" = 6, "3" = 13, "4" = 19, confirm = 26, void = 21 }

The registry is built from the drivers' own declarations
(:class:`~drivers.declaration.DriverDeclaration`: the name, the kind of device, the
class, the simulator and the decoder), which each package of :data:`DRIVER_PACKAGES`
lists as its ``DECLARATIONS``; a driver from outside them is added with
:func:`register`. Every driver class exposes ``SETTINGS: dict[str, FieldSpec]`` (its
own keys; the common keys ``driver`` and ``enabled`` are added here). Unknown keys are
errors, every error carries its dotted path (``devices.wheel.baud: ...``). A driver
class may also define ``used_pins(settings) -> Iterable[tuple[str, int]]`` (label, BCM
pin) so that two devices claiming one GPIO pin are reported.

Importing this module registers the ``devices`` section with
:func:`tablecommon.settings.register_section`.

Stable API: :func:`declarations`, :func:`declaration`, :func:`register`,
:func:`kind_of`, :func:`driver_class`, :func:`validate_devices`, :func:`create_driver`,
:class:`DeviceConfig` (which carries its device's kind).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tablecommon.settings import ConfigInvalid, FieldSpec, register_section, validate_fields

from .declaration import DriverDeclaration

__all__ = [
    "COMMON_SETTINGS",
    "DRIVER_PACKAGES",
    "DeviceConfig",
    "create_driver",
    "declaration",
    "declarations",
    "driver_class",
    "kind_of",
    "kinds",
    "register",
    "unregister",
    "validate_device",
    "validate_devices",
]

#: The packages under ``drivers/`` whose ``DECLARATIONS`` are the registry: the one
#: line a new driver package adds (a new driver of an existing package adds none).
DRIVER_PACKAGES: tuple[str, ...] = (
    "cammegh",
    "gpio_wheel",
    "keypad",
    "shoe",
    "shaker",
    "board",
    "sign",
    "lineproto",
)

_packaged: dict[str, DriverDeclaration] | None = None
_registered: dict[str, DriverDeclaration] = {}


def _declared() -> dict[str, DriverDeclaration]:
    global _packaged
    if _packaged is None:
        found: dict[str, DriverDeclaration] = {}
        for package in DRIVER_PACKAGES:
            module = importlib.import_module(f"{__package__}.{package}")
            for d in module.DECLARATIONS:
                if d.name in found:  # a programming error, not a configuration's
                    raise TypeError(f"driver {d.name!r} is declared twice")
                found[d.name] = d
        _packaged = found
    return _packaged


def declarations() -> dict[str, DriverDeclaration]:
    """Every declared driver, name -> declaration (the packages' first, in order)."""
    return {**_declared(), **_registered}


def declaration(driver: str) -> DriverDeclaration:
    """The declaration of ``driver`` (KeyError for an unknown name)."""
    found = _registered.get(driver) or _declared().get(driver)
    if found is None:
        raise KeyError(driver)
    return found


def register(decl: DriverDeclaration) -> None:
    """Add a driver declared outside :data:`DRIVER_PACKAGES` (a vendor's plug-in, a
    test's toy driver): it is configured, simulated and decoded like the others."""
    if decl.name in declarations():
        raise ValueError(f"driver {decl.name!r} is already declared")
    _registered[decl.name] = decl


def unregister(driver: str) -> None:
    """Forget a driver added by :func:`register` (the packages' stay)."""
    _registered.pop(driver, None)


def kind_of(driver: str) -> str:
    """The device kind a driver serves (``"wheel"``, ``"shoe"``...)."""
    return declaration(driver).kind


def kinds() -> frozenset[str]:
    """Every kind of device a declared driver serves."""
    return frozenset(d.kind for d in declarations().values())


#: Keys every ``[devices.<name>]`` section accepts.
COMMON_SETTINGS: dict[str, FieldSpec] = {
    "driver": FieldSpec("str", required=True, doc="which driver serves this device"),
    "enabled": FieldSpec("bool", True, doc="false: keep the section but do not start the driver"),
}

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")


@dataclass(frozen=True)
class DeviceConfig:
    """One validated ``[devices.<name>]`` section."""

    name: str
    driver: str
    enabled: bool = True
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: The kind of device its driver serves (:func:`kind_of`).
    kind: str = ""


def driver_class(driver: str) -> type[Any]:
    """The class declared as ``driver``.

    Raises KeyError for an unknown name and ImportError if its module is missing.
    """
    return declaration(driver).load()


def _settings_of(cls: type[Any]) -> dict[str, FieldSpec]:
    specs: dict[str, FieldSpec] = dict(getattr(cls, "SETTINGS", {}))
    clash = set(specs) & set(COMMON_SETTINGS)
    if clash:  # a programming error in the driver, not in the configuration
        raise TypeError(f"{cls.__name__}.SETTINGS redefines common keys {sorted(clash)}")
    return {**COMMON_SETTINGS, **specs}


def validate_device(name: str, data: Any, path: str, errors: list[str]) -> DeviceConfig | None:
    """Validate one device section; append problems to ``errors``."""
    if not _NAME.match(name):
        errors.append(
            f"{path}: device name must be 1-32 letters, digits, '_' or '-' "
            "(it is used in MQTT topics)"
        )
        return None
    if not isinstance(data, Mapping):
        errors.append(f"{path}: expected a table with a 'driver' key, got {data!r}")
        return None
    driver = data.get("driver")
    known = declarations()
    if not isinstance(driver, str):
        errors.append(f"{path}.driver: required; one of {', '.join(sorted(known))}")
        return None
    if driver not in known:
        errors.append(
            f"{path}.driver: unknown driver {driver!r}; known: {', '.join(sorted(known))}"
        )
        return None
    try:
        cls = driver_class(driver)
    except (ImportError, AttributeError) as exc:
        errors.append(f"{path}.driver: driver {driver!r} is not available here ({exc})")
        return None
    before = len(errors)
    values = validate_fields(_settings_of(cls), data, path, errors)
    check = getattr(cls, "check_settings", None)
    if len(errors) == before and callable(check):
        for problem in check(values) or ():
            errors.append(f"{path}.{problem}" if not problem.startswith(path) else problem)
    if len(errors) != before:
        return None
    settings = {k: v for k, v in values.items() if k not in COMMON_SETTINGS}
    return DeviceConfig(
        name, driver, bool(values.get("enabled", True)), settings, known[driver].kind
    )


def _pins_of(cfg: DeviceConfig) -> Iterable[tuple[str, int]]:
    cls = driver_class(cfg.driver)
    used = getattr(cls, "used_pins", None)
    if not callable(used):
        return ()
    pins: Iterable[tuple[str, int]] = used(cfg.settings)
    return pins


def validate_devices(data: Any, path: str, errors: list[str]) -> dict[str, DeviceConfig]:
    """The ``devices`` section validator (registered with the config loader)."""
    out: dict[str, DeviceConfig] = {}
    if data is None:
        return out
    if not isinstance(data, Mapping):
        errors.append(f"{path}: expected tables [devices.<name>], got {data!r}")
        return out
    for name, section in data.items():
        cfg = validate_device(str(name), section, f"{path}.{name}", errors)
        if cfg is not None:
            out[str(name)] = cfg
    owners: dict[int, str] = {}
    for cfg in out.values():
        if not cfg.enabled:
            continue
        for label, pin in _pins_of(cfg):
            where = f"{path}.{cfg.name}.{label}"
            if pin in owners:
                errors.append(f"{where}: GPIO{pin} is already used by {owners[pin]}")
            else:
                owners[pin] = where
    return out


register_section("devices", validate_devices)


def create_driver(
    name: str,
    section: Mapping[str, Any] | DeviceConfig,
    *,
    pin_factory: Any = None,
    **kwargs: Any,
) -> Any:
    """Build the driver for one device from its (raw or validated) section.

    ``pin_factory`` is passed to every driver (GPIO drivers use it, serial drivers
    ignore it); ``kwargs`` go to the driver's constructor (tests pass ``opener=``
    or ``clock=``). Raises :class:`~tablecommon.settings.ConfigInvalid`.
    """
    if isinstance(section, DeviceConfig):
        cfg = section
    else:
        errors: list[str] = []
        got = validate_device(name, section, f"devices.{name}", errors)
        if got is None:
            raise ConfigInvalid(f"devices.{name}", errors or ["invalid device section"])
        cfg = got
    cls = driver_class(cfg.driver)
    return cls(name, cfg.settings, pin_factory=pin_factory, **kwargs)
