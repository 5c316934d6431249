"""What the daemon reads from a table's configuration, read at once and without I/O.

:func:`read_plan` reads every section the daemon uses into a :class:`TablePlan`: the
``[daemon]`` options, the journal, MQTT and console settings, the enabled devices, the
progressive jackpot (only on a table whose game offers one). Reading is tracked
(:meth:`~firmware_host.config.TableConfig.section`): whatever the file sets and the
plan never read is a problem, named by its section and option; so is a table that
needs GPIO pins on a machine without them (unless the configuration says the table
is simulated), and a policy that defeats the controls it configures
(``firmware_host/risks.py``: a key shared by two principals, a two-person rule one
person satisfies, a key file of the table open to others...). The daemon refuses to
start with a problem; ``tablectl check-config`` and the console's ``check-config``
report them (:func:`assembly_problems`): one code path, the same lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from drivers.registry import DeviceConfig
from drivers.switches.settings import SwitchConfig

from .auth import AuthSettings
from .config import TableConfig, result_device_problems
from .console import ConsoleSettings
from .devices import gpio_problems
from .face.board import StatisticsSettings, board_problems
from .games.jackpot import JackpotParams
from .games.money import MAX_STAKE
from .integrity.settings import IntegritySettings, ball_revs_problems, spin_time_problems
from .integrity.software import SoftwareSettings
from .integrity.switches import switch_problems
from .journal import JournalSettings
from .mqtt import MqttSettings
from .risks import assess
from .table.bets import BetCaps, bet_caps
from .table.jackpot import JackpotSettings
from .table.witness_settings import WitnessSettings, witness_problems


@dataclass(frozen=True)
class TablePlan:
    """Everything the daemon takes from the configuration."""

    watchdog_check: bool
    simulated: bool
    journal: JournalSettings
    mqtt: MqttSettings
    console: ConsoleSettings
    #: Every configured device (enabled or not), in the file's order.
    devices: tuple[DeviceConfig, ...]
    #: The progressive jackpot's rules (61/2004 art. 10), or None: no jackpot here.
    jackpot_params: JackpotParams | None
    jackpot: JackpotSettings | None
    #: ``[statistics]``: the window of the roulette and dice statistics.
    statistics: StatisticsSettings
    #: Who may send what (``[auth]``), key file paths resolved against the table file.
    auth: AuthSettings
    #: How many bets and how much stake a round and a seat may hold (``[bets]``).
    bet_caps: BetCaps
    #: ``device`` or ``manual`` (``table.result_source``).
    result_source: str
    #: Why this configuration cannot run here (unread options, GPIO, keys), one line each.
    problems: tuple[str, ...]
    #: What runs but deserves a look (signatures off...), one line each.
    warnings: tuple[str, ...] = ()
    #: ``[software]``: the signed manifest and the build's key, paths resolved.
    software: SoftwareSettings = field(default_factory=SoftwareSettings)
    #: ``[integrity]``: the detectors' settings (``docs/integrity.md``).
    integrity: IntegritySettings = field(default_factory=IntegritySettings)
    #: The policy risks this table runs with, accepted by ``[auth] accept_risks``
    #: (``firmware_host/risks.py``): logged at start, in the retained ``state``.
    accepted_risks: tuple[str, ...] = ()
    #: Each accepted risk's line, as ``check-config`` warns about it.
    accepted_risk_lines: tuple[str, ...] = ()
    #: ``[switches.<name>]``: the table's doors, lids, boxes and tamper loops.
    switches: tuple[SwitchConfig, ...] = ()
    #: ``[witness]``: the result's second reading (``docs/witness.md``), or None.
    witness: WitnessSettings | None = None


def read_plan(
    cfg: TableConfig,
    *,
    mqtt: MqttSettings | None = None,
    state_dir: str | Path | None = None,
    pin_factory_given: bool = False,
) -> TablePlan:
    """Read ``cfg`` as the daemon uses it. ``mqtt`` overrides ``[mqtt]``, ``state_dir``
    the journal's path; ``pin_factory_given``: the caller brings its own GPIO pins."""
    daemon = cfg.section("daemon")
    watchdog_check = bool(daemon["watchdog_check"]) if daemon else True
    simulated = bool(daemon["simulated"]) if daemon else False
    journal: JournalSettings = cfg.section("journal") or JournalSettings()
    if state_dir is not None:
        journal = replace(journal, path=str(Path(state_dir) / "journal.sqlite3"))
    from_file: MqttSettings | None = cfg.section("mqtt")  # read even when overridden
    mqtt = mqtt or from_file or MqttSettings()
    console: ConsoleSettings = cfg.section("console") or ConsoleSettings()
    devices = tuple((cfg.section("devices") or {}).values())
    switches: dict[str, SwitchConfig] = cfg.section("switches") or {}
    params = cfg.game.jackpot_params(cfg.rules)
    jackpot = JackpotSettings.from_section(cfg.section("jackpot")) if params else None
    statistics = StatisticsSettings.from_section(cfg.section("statistics"))
    auth = _resolve_keys(cfg.section("auth") or AuthSettings(), cfg.source)
    caps = bet_caps(cfg.section("bets"), cfg.limits.max_stake or MAX_STAKE)
    auth_problems, warnings = _auth_problems(auth, cfg.result_source, console)
    verdict = assess(auth, jackpot=params is not None, journal=journal)
    auth_problems.extend(verdict.problems)
    warnings.extend(verdict.warnings)
    software = _resolve_software(cfg.section("software") or SoftwareSettings(), cfg.source)
    integrity = IntegritySettings.from_section(cfg.section("integrity"))
    witness = WitnessSettings.from_section(cfg.section("witness"))
    warnings.extend(mqtt.warnings())
    warnings.extend(console.warnings())
    if not software.configured:
        warnings.append(
            "[software] not configured: the installed software is not verified against a "
            "signed manifest at start-up, daily and on demand (docs/integrity.md)"
        )
    problems = [
        *gpio_problems(devices, simulated=simulated, injected=pin_factory_given),
        *switch_problems(switches, devices, simulated=simulated, injected=pin_factory_given),
        *result_device_problems(cfg),
        *auth_problems,
        *board_problems(
            cfg.game_id,
            [(d.name, d.kind, d.settings) for d in devices if d.enabled],
        ),
        *ball_revs_problems(integrity, devices),
        *spin_time_problems(integrity, devices),
        *witness_problems(
            witness,
            devices,
            result_kind=cfg.game.result_device,
            result_source=cfg.result_source,
        ),
        *cfg.unread_options(),
    ]
    return TablePlan(
        watchdog_check=watchdog_check,
        simulated=simulated,
        journal=journal,
        mqtt=mqtt,
        console=console,
        devices=devices,
        jackpot_params=params,
        jackpot=jackpot,
        statistics=statistics,
        auth=auth,
        bet_caps=caps,
        result_source=cfg.result_source,
        problems=tuple(problems),
        warnings=tuple(warnings),
        software=software,
        integrity=integrity,
        accepted_risks=verdict.accepted,
        accepted_risk_lines=verdict.accepted_lines,
        switches=tuple(switches.values()),
        witness=witness,
    )


def _resolve_software(sw: SoftwareSettings, source: str) -> SoftwareSettings:
    """Manifest and key paths relative to the table file's directory."""
    if not sw.configured:
        return sw
    base = Path(source).parent if Path(source).suffix == ".toml" else Path.cwd()
    return replace(sw, manifest=str(base / sw.manifest), public_key=str(base / sw.public_key))


def _resolve_keys(auth: AuthSettings, source: str) -> AuthSettings:
    """Key file paths relative to the table file's directory (an absolute path stays)."""
    base = Path(source).parent if Path(source).suffix == ".toml" else Path.cwd()
    principals = {
        name: replace(spec, keys=tuple(str(base / k) for k in spec.keys))
        for name, spec in auth.principals.items()
    }
    return replace(auth, principals=principals)


def _auth_problems(
    auth: AuthSettings, result_source: str, console: ConsoleSettings
) -> tuple[list[str], list[str]]:
    """A manual table without authenticated, permitted people to enter results (signed
    requests or a console operator's PIN: problems); signatures off, nobody to take
    bets (warnings). Key files and the policy's risks: :func:`~.risks.assess`."""
    problems: list[str] = []
    warnings: list[str] = []
    if not auth.signatures:
        warnings.append(
            "auth.signatures = false: floor requests are NOT authenticated; anyone who can "
            "publish on the table's request topics can open, close, void and settle rounds "
            "and place or cancel any bet (for a bench only; docs/security.md)"
        )
    if result_source == "manual":
        if not auth.signatures:
            problems.append(
                'table.result_source = "manual": results entered by people need signed '
                "requests (auth.signatures = true)"
            )
        elif not auth.holders("result") and not console.operators:
            # A console operator logs in with a PIN at the table's own console (local,
            # on record): such a table has people who may enter results.
            problems.append(
                'table.result_source = "manual": no principal of [auth.principals] may '
                "enter a result (give one the 'dealer' role or a role with 'result'), and no "
                "console operator is configured ([console.operators])"
            )
    if auth.signatures and not auth.principals:
        warnings.append(
            "auth: no principal is configured: every floor request (bets, commands) will be "
            "refused UNKNOWN_PRINCIPAL"
        )
    return problems, warnings


def assembly_warnings(cfg: TableConfig) -> list[str]:
    """What ``tablectl check-config`` warns about (the table runs, but look)."""
    return list(read_plan(cfg).warnings)


def assembly_problems(cfg: TableConfig) -> list[str]:
    """Why the daemon would refuse ``cfg`` here: options set but never read, GPIO pins
    missing. Empty when the table can run."""
    return list(read_plan(cfg).problems)
