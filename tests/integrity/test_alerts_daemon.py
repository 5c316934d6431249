"""Every alert type raised, acknowledged and cleared through the console and the signed
MQTT command on a running daemon, with the retained ``alerts`` topic, ``tablectl
status`` and the audit chain showing who and why (issue 19, acceptance item 3).

The alerts are raised here as their detectors raise them (``Alerts.raise_``); the
detectors' own tests show each detector raising its codes from the equipment."""

from __future__ import annotations

import json
from pathlib import Path

from firmware_host.config import validate_document
from firmware_host.console import hash_pin
from firmware_host.daemon import TableDaemon
from firmware_host.integrity.codes import ALERT_CODES
from firmware_host.mqtt import MqttSettings
from firmware_host.schemas import validate
from firmware_host.subcommands.ops import status_text
from tablesim.floor_client import FloorClient
from tablesim.principals import make_principals

PIN = "2468"


async def test_every_alert_raised_acknowledged_cleared_console_and_mqtt(
    tmp_path: Path,
    amqtt_broker,  # type: ignore[no-untyped-def]
) -> None:
    principals = make_principals(tmp_path / "keys")
    cfg = validate_document(
        {
            "table": {"id": "al-1", "game": "fantan", "result_source": "manual"},
            "auth": principals.auth_section(),
            "console": {"operators": {"tech1": {"pin_hash": hash_pin(PIN)}}},
        }
    )
    d = TableDaemon(
        cfg,
        state_dir=tmp_path,
        runtime_dir=tmp_path,
        mqtt=MqttSettings(
            host=amqtt_broker.host,
            port=amqtt_broker.port,
            protocol=amqtt_broker.protocol,
            reconnect_min_ms=50,
        ),
    )
    await d.start()
    await d.parts.link.wait_subscribed(30)  # type: ignore[union-attr]
    try:
        async with FloorClient(
            amqtt_broker.host, amqtt_broker.port, cfg.table_id, signers=principals
        ) as floor:
            session = d.new_session("test")
            await session.handle("login tech1")
            assert "logged in" in " ".join(await session.handle(PIN))
            alerts = d.parts.alerts
            assert alerts is not None
            by: dict[int, tuple[str, str]] = {}
            cases = [
                (code, spec, channel)
                for code, spec in sorted(ALERT_CODES.items())
                for channel in ("console", "mqtt")
            ]
            for i, (code, spec, channel) in enumerate(cases):
                subject = f"s{i}-{channel}"
                rec = alerts.raise_(code, f"test of {code}", subject=subject, evidence={"i": i})
                assert rec.severity == spec.severity
                # the retained topic shows it, as the schema says
                await floor.until(
                    lambda rid=rec.id: any(
                        a["id"] == rid
                        for m in floor.messages[-5:]
                        if m.topic == "alerts"
                        for a in json.loads(m.payload)["alerts"]
                    ),
                    what=f"alert {code} on the alerts topic",
                )
                # tablectl status and the console list it
                assert code in status_text(d.parts.console_backend.status())  # type: ignore[union-attr]
                assert code in "\n".join(await session.handle("alerts"))
                reason = f"checked {code.lower()} ({channel})"
                if channel == "console":
                    out = await session.handle(f"ack {rec.id} {reason}")
                    assert "error" not in " ".join(out), out
                    by[rec.id] = ("console:tech1", reason)
                else:
                    r = await floor.command("ack_alert", alert_id=rec.id, reason=reason)
                    assert isinstance(r, dict) and r["status"] == "ok", r
                    validate("command_response", r)
                    by[rec.id] = ("mqtt:pit", reason)
                state = d.journal.alerts.get(rec.id)  # type: ignore[union-attr]
                assert state is not None
                if spec.condition:
                    assert state.state == "acknowledged"  # its condition still holds
                    alerts.end(code, subject)
                    state = d.journal.alerts.get(rec.id)  # type: ignore[union-attr]
                    assert state is not None
                assert state.state == "cleared", (code, state)
            # nothing left: the retained topic says so, schema-valid
            await floor.until(
                lambda: (
                    any(m.topic == "alerts" for m in floor.messages)
                    and json.loads([m for m in floor.messages if m.topic == "alerts"][-1].payload)[
                        "alerts"
                    ]
                    == []
                ),
                what="an empty alerts topic",
            )
            for m in floor.messages:
                if m.topic == "alerts":
                    validate("alerts", json.loads(m.payload))
            # the wrong principal may not acknowledge; an unknown alert is refused
            dealer = principals.signers["dealer"]
            r = await floor.command("ack_alert", alert_id=1, reason="x", signer=dealer)
            assert isinstance(r, dict) and r["code"] == "NOT_PERMITTED", r
            r = await floor.command("ack_alert", alert_id=9999, reason="x")
            assert isinstance(r, dict) and r["code"] == "ALERT_NOT_FOUND", r
            r = await floor.command("ack_alert", alert_id=1, reason="again")
            assert isinstance(r, dict) and r["code"] == "ALERT_NOT_FOUND", r
    finally:
        await d.stop()
    j = d.journal
    assert j is not None
    from firmware_host.journal import AuditKey, Journal

    key = AuditKey.load(tmp_path / "audit.key")  # the daemon's own, beside the journal
    with Journal(tmp_path / "journal.sqlite3", audit_key=key) as j2:
        assert j2.chain.verify().ok
        events = j2.chain.events(1000)
        for alert_id, (who, why) in by.items():
            mine = [
                e for e in events if isinstance(e.data, dict) and e.data.get("alert_id") == alert_id
            ]
            assert [e.kind for e in mine] == ["alert_raised", "alert_acknowledged", "alert_cleared"]
            assert mine[1].data["by"] == who and mine[1].data["reason"] == why
        # the signed acknowledgement names its principal in the chain, as every command does
        cmds = [e for e in events if e.kind == "floor_command" and e.data["command"] == "ack_alert"]
        assert len(cmds) == sum(1 for w, _ in by.values() if w.startswith("mqtt"))
        assert all(e.data["principal"] == "pit" and e.data["verified"] for e in cmds)


async def test_verify_software_over_mqtt_and_console(tmp_path: Path, amqtt_broker) -> None:  # type: ignore[no-untyped-def]
    from firmware_host.auth import generate, load_private_key
    from firmware_host.integrity.software import (
        SoftwareSettings,
        build_manifest,
        default_root,
        sign_manifest,
        verify,
    )

    # a manifest of the running packages, signed with a throwaway build key
    priv, pub = generate("build", tmp_path / "buildkey")
    manifest = build_manifest(default_root(), version="test")
    (tmp_path / "sw.manifest").write_bytes(manifest)
    (tmp_path / "sw.manifest.sig").write_bytes(sign_manifest(manifest, load_private_key(priv)))
    principals = make_principals(tmp_path / "keys")
    cfg = validate_document(
        {
            "table": {"id": "sw-2", "game": "fantan", "result_source": "manual"},
            "auth": principals.auth_section(),
            "console": {"operators": {"tech1": {"pin_hash": hash_pin(PIN)}}},
            "software": {"manifest": str(tmp_path / "sw.manifest"), "public_key": str(pub)},
        }
    )
    d = TableDaemon(
        cfg,
        state_dir=tmp_path,
        runtime_dir=tmp_path,
        mqtt=MqttSettings(
            host=amqtt_broker.host,
            port=amqtt_broker.port,
            protocol=amqtt_broker.protocol,
            reconnect_min_ms=50,
        ),
    )
    await d.start()
    await d.parts.link.wait_subscribed(30)  # type: ignore[union-attr]
    try:
        async with FloorClient(
            amqtt_broker.host, amqtt_broker.port, cfg.table_id, signers=principals
        ) as floor:
            r = await floor.command("verify_software", seed="lab-seed-0001")
            assert isinstance(r, dict) and r["status"] == "ok", r
            validate("command_response", r)
            data = r["data"]
            expect = verify(
                SoftwareSettings(str(tmp_path / "sw.manifest"), str(pub)), seed="lab-seed-0001"
            )
            assert data["ok"] is True and data["seeded_digest"] == expect.seeded_digest
            r = await floor.command("verify_software", seed="short")
            assert isinstance(r, dict) and r["code"] == "MALFORMED_REQUEST", r
            r = await floor.command(
                "verify_software", seed="lab-seed-0002", signer=principals.signers["dealer"]
            )
            assert isinstance(r, dict) and r["code"] == "NOT_PERMITTED", r
        session = d.new_session("test")
        out = "\n".join(await session.handle("verify-software lab-seed-0003"))
        assert "ok: true" in out.lower() or "ok: yes" in out.lower(), out
    finally:
        await d.stop()
    from firmware_host.journal import Journal

    with Journal(tmp_path / "journal.sqlite3") as j:
        checks = [e.data for e in j.chain.events(200) if e.kind == "software_verified"]
        assert [(c["trigger"], c["by"], c["ok"]) for c in checks] == [
            ("start-up", None, True), ("mqtt", "mqtt:pit", True), ("console", "console", True),
        ]  # fmt: skip
        assert checks[1]["seed"] == "lab-seed-0001"


async def test_detectors_on_a_running_roulette_table(tmp_path: Path, amqtt_broker) -> None:  # type: ignore[no-untyped-def]
    # a roulette table whose results are entered (no wheel here): the detectors follow
    # the settled rounds; a large bet and a repeated number reach the floor
    principals = make_principals(tmp_path / "keys")
    cfg = validate_document(
        {
            "table": {"id": "ro-1", "game": "roulette", "result_source": "manual"},
            "auth": principals.auth_section(),
            "integrity": {"large_transaction": 1_000_000, "repeat_limit": 2},
        }
    )
    d = TableDaemon(
        cfg,
        state_dir=tmp_path,
        runtime_dir=tmp_path,
        mqtt=MqttSettings(
            host=amqtt_broker.host,
            port=amqtt_broker.port,
            protocol=amqtt_broker.protocol,
            reconnect_min_ms=50,
        ),
    )
    await d.start()
    await d.parts.link.wait_subscribed(30)  # type: ignore[union-attr]
    try:
        async with FloorClient(
            amqtt_broker.host, amqtt_broker.port, cfg.table_id, signers=principals
        ) as floor:
            e = d.parts.engine
            assert e is not None
            for n, stake in ((18, 1_000_000), (18, 1000)):  # 18 is red: stake and payout
                e.open_betting()
                e.desk.place({"bet_id": "a", "seat": 1, "bet_type": "red", "stake": stake})
                e.close_betting()
                e.submit_result({"number": n})

            def latest_alerts() -> list[str]:
                got = [m for m in floor.messages if m.topic == "alerts"]
                return [a["code"] for a in json.loads(got[-1].payload)["alerts"]] if got else []

            await floor.until(
                lambda: (
                    sorted(latest_alerts())
                    == ["LARGE_TRANSACTION", "LARGE_TRANSACTION", "REPEATED_NUMBER"]
                ),
                what="the detectors' alerts on the alerts topic",
            )
            await floor.until(
                lambda: any(
                    m.topic == "events" and json.loads(m.payload)["event"] == "large_transaction"
                    for m in floor.messages
                ),
                what="a large_transaction event",
            )
            for m in floor.messages:
                if m.topic in ("alerts", "events", "rounds"):
                    validate({"alerts": "alerts", "events": "event", "rounds": "round"}[m.topic],
                             json.loads(m.payload))  # fmt: skip
    finally:
        await d.stop()
