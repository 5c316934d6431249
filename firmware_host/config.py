"""Table configuration: one TOML file per table, validated as a whole.

Every problem is reported at once, each with its dotted path and, for rule options,
the article that authorises the range (``pay_table.sicbo.total_5: 31 is outside the
authorised range 18..30 (57/2004 art. 6 6) (2))``). Unknown keys are errors: a
misspelt option must never silently fall back to its default.

Reads are tracked (as Klipper does): every option set in the file is remembered
(:attr:`TableConfig.options`), and what the daemon reads is noted as it assembles the
table (:meth:`TableConfig.section`; a section held as a plain mapping, such as
``[daemon]`` and ``[jackpot]``, option by option through :class:`Section`, the others
as a whole). An option set but never read, such as a ``[jackpot]`` section on a table
without a jackpot, is an error that names its section and option
(:meth:`TableConfig.unread_options`), at start-up and in ``tablectl check-config``.

Sections:

- ``version``: configuration format version (see :data:`MIGRATIONS`).
- ``[table]``: id, game, money settings.
- ``[limits]``: stake limits, per bet type overrides in ``[limits.bet_types.<type>]``.
- ``[pay_table.<game>]`` and ``[rules.<game>]``: the game's pay table and house
  options, declared by the game module (``firmware_host/games``).
- Other sections (``devices``, ``mqtt``, ``journal``, ``console``, ``jackpot``...)
  are declared by the modules that read them, through :func:`register_section`.

The reference of every key is ``docs/configuration.md``.
"""

from __future__ import annotations

import contextlib
import importlib
import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tablecommon.settings import (
    ConfigInvalid,
    FieldSpec,
    SectionValidator,
    register_section,
    registered_sections,
    validate_fields,
)
from tablecommon.values import relative_to

from .games import game_ids, get_game
from .games.base import Game, Limits
from .games.errors import UnknownGame
from .games.money import MAX_STAKE, MoneyRules, Rounding
from .table_config import Section, TableConfig

__all__ = [
    "BET_LIMIT_SPECS",
    "CURRENT_VERSION",
    "LIMIT_SPECS",
    "SECTION_MODULES",
    "TABLE_SPECS",
    "ConfigInvalid",
    "FieldSpec",
    "Section",
    "SectionValidator",
    "TableConfig",
    "default_config",
    "load_config",
    "migrate",
    "register_section",
    "result_device_problems",
    "validate_document",
    "validate_fields",
]

CURRENT_VERSION = 1


def _known_game(game_id: str) -> str | None:
    """A game id of the folders or registered (``games.register_game``), or why not."""
    known = game_ids()
    if game_id in known:
        return None
    return f"{game_id!r} is not one of the allowed choices {', '.join(map(repr, known))}"


_TABLE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


#: Modules that declare top-level sections; imported on first validation so that
#: ``tablectl check-config`` knows every section the daemon reads.
SECTION_MODULES = (
    "firmware_host.journal",
    "firmware_host.mqtt",
    "firmware_host.daemon_settings",
    "firmware_host.face.board",
    "firmware_host.console",
    "firmware_host.table.jackpot",
    "firmware_host.auth",
    "firmware_host.table.floor",
    "drivers.registry",
    "drivers.switches.settings",
    "firmware_host.integrity.software",
    "firmware_host.integrity.settings",
    "firmware_host.table.witness_settings",
)
_sections_loaded = False


def _load_section_modules() -> None:
    global _sections_loaded
    if _sections_loaded:
        return
    _sections_loaded = True
    for name in SECTION_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise


TABLE_SPECS: dict[str, FieldSpec] = {
    "id": FieldSpec(
        "str",
        required=True,
        doc="table id used in MQTT topics and round ids",
        check=lambda v: (
            None
            if _TABLE_ID.match(v)
            else "must be 1-64 characters of letters, digits, '_', '.', '-' (no MQTT wildcards or '/')"
        ),
    ),
    "game": FieldSpec("str", required=True, doc="game id", check=lambda v: _known_game(v)),
    "currency": FieldSpec(
        "str",
        "MOP",
        doc="ISO 4217 code of the table's currency",
        check=lambda v: (
            None if re.fullmatch(r"[A-Z]{3}", v) else "must be a 3-letter ISO 4217 code"
        ),
    ),
    "minor_digits": FieldSpec("int", 2, doc="digits of the minor unit (MOP, HKD: 2)", range=(0, 4)),
    "payable_unit": FieldSpec(
        "int", 1, doc="smallest amount the table pays, in minor units", range=(1, 10**9)
    ),
    "rounding": FieldSpec(
        "str", "floor", doc="rounding rule of payouts", choices=tuple(r.value for r in Rounding)
    ),
    "name": FieldSpec("str", "", doc="human-readable name of the table"),
    "result_source": FieldSpec(
        "str",
        None,
        doc="where results come from: 'device' (the game's result device, which must be "
        "configured and enabled) or 'manual' (entered by people over commands/request: "
        "needs signed requests and a principal allowed 'result'); default: the device, or "
        "'manual' for a game without one (mah-jong, P'ai Kao)",
        choices=("device", "manual"),
    ),
}

LIMIT_SPECS: dict[str, FieldSpec] = {
    "min_stake": FieldSpec(
        "int",
        None,
        doc="table minimum stake, minor units (default: the payable unit)",
        range=(1, MAX_STAKE),
    ),
    "max_stake": FieldSpec(
        "int", MAX_STAKE, doc="table maximum stake, minor units", range=(1, MAX_STAKE)
    ),
    "bet_types": FieldSpec(
        "table", {}, doc="per bet type limits: [limits.bet_types.<type>] min, max"
    ),
}

BET_LIMIT_SPECS: dict[str, FieldSpec] = {
    "min": FieldSpec("int", None, doc="minimum stake for this bet type", range=(1, MAX_STAKE)),
    "max": FieldSpec("int", None, doc="maximum stake for this bet type", range=(1, MAX_STAKE)),
}


#: Migrations from older ``version`` values: each takes and returns the raw document.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


def migrate(
    doc: dict[str, Any], errors: list[str], *, require_version: bool = False
) -> dict[str, Any]:
    if "version" not in doc and require_version:
        errors.append(
            f"version: required key is missing (the configuration format version; this "
            f"software writes version = {CURRENT_VERSION})"
        )
        return doc
    version = doc.get("version", CURRENT_VERSION)
    if isinstance(version, bool) or not isinstance(version, int):
        errors.append(f"version: expected an integer, got {version!r}")
        return doc
    if version > CURRENT_VERSION:
        errors.append(
            f"version: {version} is newer than this software understands (up to {CURRENT_VERSION})"
        )
        return doc
    if version < 1:
        errors.append(
            f"version: {version} is not a configuration format version (1..{CURRENT_VERSION})"
        )
        return doc
    while version < CURRENT_VERSION:
        doc = MIGRATIONS[version](doc)
        version += 1
        doc["version"] = version
    return doc


def validate_document(
    doc: Mapping[str, Any], source: str = "<document>", *, require_version: bool = False
) -> TableConfig:
    """Validate a parsed TOML document; raise :class:`ConfigInvalid` with every error.

    A table *file* must say its format ``version`` (:func:`load_config` requires it:
    a file whose format is unknown cannot be migrated safely); a document built in
    code may leave it out and is read as the current version. A file path a section
    names (``devices.<name>.protocol``) is relative to the directory of ``source`` when
    it is a ``.toml`` file, else to the working directory.
    """
    base = Path(source).parent if source.endswith(".toml") else None
    with relative_to(base):
        return _validate_document(doc, source, require_version=require_version)


def _validate_document(
    doc: Mapping[str, Any], source: str, *, require_version: bool
) -> TableConfig:
    _load_section_modules()
    errors: list[str] = []
    doc = migrate(dict(doc), errors, require_version=require_version)
    sections = registered_sections()
    known_top = {"version", "table", "limits", "pay_table", "rules", *sections}
    for key in doc:
        if key not in known_top:
            errors.append(f"{key}: unknown section; known sections: {', '.join(sorted(known_top))}")

    table = validate_fields(TABLE_SPECS, doc.get("table"), "table", errors)
    if "table" not in doc:
        errors.append("table: required section is missing (id, game)")
    game_id = table.get("game")
    game: Game[Any, Any] | None = None
    if isinstance(game_id, str) and game_id in game_ids():
        try:
            game = get_game(game_id)
        except UnknownGame as exc:
            errors.append(f"table.game: {exc.message}")

    money = None
    with contextlib.suppress(ValueError, TypeError):  # the field errors are already listed
        money = MoneyRules(
            currency=table.get("currency", "MOP"),
            minor_digits=table.get("minor_digits", 2),
            payable_unit=table.get("payable_unit", 1),
            rounding=Rounding(table.get("rounding", "floor")),
        )

    rules = None
    for section in ("pay_table", "rules"):
        sec = doc.get(section, {})
        if not isinstance(sec, Mapping):
            errors.append(f"{section}: expected a table of games, got {sec!r}")
            continue
        for gid in sec:
            if gid not in game_ids():
                errors.append(
                    f"{section}.{gid}: unknown game; known games: {', '.join(game_ids())}"
                )
            elif gid != game_id:
                errors.append(f"{section}.{gid}: this table plays {game_id!r}; remove this section")
    if game is not None:
        rules = game.rules_from_config(
            {s: (doc.get(s) or {}).get(game.game_id) for s in ("pay_table", "rules")}, errors
        )

    limits_raw = validate_fields(LIMIT_SPECS, doc.get("limits"), "limits", errors)
    per_type: dict[str, tuple[int, int | None]] = {}
    names: set[str] = set()
    if game is not None:
        names = {
            bt.name for bt in game.bet_types(rules if rules is not None else game.default_rules())
        }
    unit = money.payable_unit if money is not None else 1
    lo_t, hi_t = limits_raw.get("min_stake"), limits_raw.get("max_stake")
    if lo_t is None:
        lo_t = unit  # the smallest stake the table can pay a prize on
    if isinstance(lo_t, int) and isinstance(hi_t, int) and lo_t > hi_t:
        errors.append(f"limits: min_stake {lo_t} is above max_stake {hi_t}")
    # 60/2004 art. 7, 57/2004 and 59/2004 art. 6: prizes are whole multiples of the
    # stake, so a stake must be a whole number of payable units (docs/rules/money.md).
    # A limit that is not promises stakes that every bet request would then refuse.
    given = doc.get("limits")
    stake_limits = [
        (f"limits.{key}", limits_raw.get(key))
        for key in ("min_stake", "max_stake")
        if isinstance(given, Mapping) and key in given
    ]
    for bt, spec in (limits_raw.get("bet_types") or {}).items():
        path = f"limits.bet_types.{bt}"
        if names and bt not in names:
            errors.append(
                f"{path}: {game_id} has no bet type {bt!r}; known: {', '.join(sorted(names))}"
            )
            continue
        vals = validate_fields(BET_LIMIT_SPECS, spec, path, errors)
        lo = vals.get("min") or lo_t
        hi = vals.get("max") or hi_t
        if isinstance(lo, int) and isinstance(hi, int) and lo > hi:
            errors.append(f"{path}: min {lo} is above max {hi}")
        if isinstance(vals.get("max"), int) and isinstance(hi_t, int) and vals["max"] > hi_t:
            errors.append(
                f"{path}.max: {vals['max']} is above the table maximum limits.max_stake {hi_t}; "
                "raise max_stake and give the other bet types their own max"
            )
        stake_limits += [(f"{path}.{k}", vals.get(k)) for k in ("min", "max")]
        per_type[bt] = (lo, hi)
    if names:  # a game without bets (mah-jong) has no stakes to check
        for path, value in stake_limits:
            if isinstance(value, int) and value % unit:
                errors.append(
                    f"{path}: {value} is not a whole number of the payable unit "
                    f"table.payable_unit = {unit}: the table could not pay a prize of a whole "
                    "multiple of such a stake exactly (60/2004 art. 7; 57/2004, 59/2004 art. 6)"
                )
    if game is not None and rules is not None and money is not None:
        errors.extend(game.money_problems(rules, money))

    parsed_sections: dict[str, Any] = {}
    reads: set[str] = set()
    options: set[str] = set()
    for name, validator in sections.items():
        value = validator(doc.get(name), name, errors)
        parsed_sections[name] = Section(name, value, reads) if isinstance(value, dict) else value
        raw = doc.get(name)
        if isinstance(raw, Mapping):
            options.update(f"{name}.{key}" for key in raw)
    result_source = table.get("result_source")
    if game is not None:
        _check_device_kinds(game, parsed_sections.get("devices"), errors)
        result_source = _check_result_source(
            game, parsed_sections.get("devices"), result_source, errors
        )

    if errors or money is None or game is None or rules is None:
        raise ConfigInvalid(source, errors or ["configuration is incomplete"])
    return TableConfig(
        version=doc.get("version", CURRENT_VERSION),
        table_id=table["id"],
        game_id=game.game_id,
        name=table.get("name", ""),
        money=money,
        limits=Limits(lo_t, hi_t, per_type, money.payable_unit),
        rules=rules,
        sections=parsed_sections,
        source=source,
        options=frozenset(options),
        reads=reads,
        result_source=result_source or "device",
    )


def _check_result_source(
    game: Game[Any, Any], devices: Any, result_source: str | None, errors: list[str]
) -> str:
    """The result source in force (``table.result_source``, by default ``device`` for a
    game with a result device, else ``manual``), refusing the contradictions: a
    ``device`` source for a game without one, and ``manual`` beside an enabled device
    that reads the results (one source of results, never two). A table without its
    result device and without ``manual`` is refused by the daemon and ``check-config``
    (:func:`result_device_problems`), not here: the rules alone (``tablectl settle``)
    need no device."""
    kind = game.result_device
    if kind is None:
        if result_source == "device":
            errors.append(
                f"table.result_source: {game.game_id} has no result device; its results are "
                'declared by command (remove the key or say "manual")'
            )
        return "manual"
    if result_source == "manual":
        readers, _ = _result_readers(kind, devices)
        if readers:
            errors.append(
                f'table.result_source: "manual", but devices.{readers[0]} (a {kind}) reads '
                f"the results of this {game.game_id} table: remove one or the other"
            )
        return "manual"
    return "device"


def _result_readers(kind: str, devices: Any) -> tuple[list[str], list[str]]:
    """The enabled and the disabled devices of ``kind`` among ``[devices]`` (each
    validated section says the kind of device its driver serves)."""
    if isinstance(devices, Section):
        devices = devices.untracked()
    readers: list[str] = []
    disabled: list[str] = []
    for name, dev in (devices or {}).items() if isinstance(devices, Mapping) else ():
        if getattr(dev, "kind", None) != kind:
            continue
        (readers if getattr(dev, "enabled", True) else disabled).append(str(name))
    return readers, disabled


def result_device_problems(cfg: TableConfig) -> list[str]:
    """No silent manual table: a game whose result a device reads (the roulette wheel)
    cannot run without that device, enabled and of the right kind, unless
    ``table.result_source = "manual"`` says that people enter its results."""
    kind = cfg.game.result_device
    if kind is None or cfg.result_source == "manual":
        return []
    readers, disabled = _result_readers(kind, cfg.sections.get("devices"))
    if readers:
        return []
    why = (
        f"devices.{disabled[0]} is disabled"
        if disabled
        else f"no [devices.<name>] section has a {kind} driver"
    )
    return [
        f"devices: a {cfg.game_id} table reads its results from a {kind}, and {why}: "
        f'configure the {kind}, or say table.result_source = "manual" if people enter '
        "the results (they then need signed requests, and a principal with the 'result' "
        "permission or a console operator, docs/security.md)"
    ]


def _check_device_kinds(game: Game[Any, Any], devices: Any, errors: list[str]) -> None:
    """Refuse an enabled device of a kind the table's game cannot use (a wheel on a
    sic bo table): ``Game.device_kinds`` against the kind its driver declares."""
    if isinstance(devices, Section):
        devices = devices.untracked()
    if not isinstance(devices, Mapping) or not devices:
        return
    usable = ", ".join(sorted(game.device_kinds))
    for name, dev in devices.items():
        kind = getattr(dev, "kind", None)
        if not kind or not getattr(dev, "enabled", True):
            continue
        if kind not in game.device_kinds:
            errors.append(
                f"devices.{name}: a {kind} ({dev.driver}) cannot serve a {game.game_id} table; "
                f"its devices are of kind {usable} (remove the section or set enabled = false)"
            )


def load_config(path: str | Path) -> TableConfig:
    """Read and validate a table file; raise :class:`ConfigInvalid` listing every error."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigInvalid(str(p), [f"cannot read the file: {exc.strerror or exc}"]) from exc
    except UnicodeDecodeError as exc:
        raise ConfigInvalid(
            str(p), [f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"]
        ) from exc
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigInvalid(str(p), [f"not valid TOML: {exc}"]) from exc
    except RecursionError as exc:  # tomllib recurses once per nested array or table
        raise ConfigInvalid(
            str(p), ["not a table file: arrays or tables nested too deeply"]
        ) from exc
    return validate_document(doc, str(p), require_version=True)


def default_config(game_id: str, table_id: str = "demo-1") -> TableConfig:
    """A configuration with every default, for ``tablectl settle``/``math`` without ``--config``."""
    return validate_document(
        {"version": CURRENT_VERSION, "table": {"id": table_id, "game": game_id}}
    )
