"""Who sent a floor request: signature, table, principal, freshness, role; keys and
rotation; the [auth] section."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from firmware_host.auth import (
    Authenticator,
    AuthError,
    AuthSettings,
    KeyFileError,
    PrincipalSpec,
    Signer,
    generate,
    load_public_key,
)
from firmware_host.config import ConfigInvalid, validate_document

NOW = datetime(2026, 5, 9, 7, 36, 0, tzinfo=UTC)
TOPIC = "commands/request"


def settings(**principals: tuple[str, ...]) -> AuthSettings:
    return AuthSettings(
        max_age_s=30,
        principals={n: PrincipalSpec(n, (), roles) for n, roles in principals.items()},
    )


@pytest.fixture
def keys() -> dict[str, Ed25519PrivateKey]:
    return {"dealer": Ed25519PrivateKey.generate(), "pit": Ed25519PrivateKey.generate()}


@pytest.fixture
def auth(keys: dict[str, Ed25519PrivateKey]) -> Authenticator:
    return Authenticator(
        settings(dealer=("dealer",), pit=("pit_supervisor",)),
        "T1",
        keys={n: (k.public_key(),) for n, k in keys.items()},
        clock=lambda: NOW,
    )


def signed(
    key: Ed25519PrivateKey, name: str = "dealer", *, at: datetime = NOW, table: str = "T1", **body
) -> dict:
    req = {"request_id": "r1", "command": "close_betting", "round_id": "T1-000001-aa", **body}
    return Signer(name, key).sign(TOPIC, table, req, at=at)


def code(exc: pytest.ExceptionInfo[AuthError]) -> str:
    return exc.value.code


def test_a_signed_request_names_its_verified_principal(auth, keys) -> None:
    who = auth.verify(TOPIC, signed(keys["dealer"]))
    assert (who.name, who.verified, who.audit) == ("dealer", True, "dealer")
    assert who.key is not None and who.key.startswith("ed25519:")


def test_unsigned_forged_altered_and_misdirected_requests_are_refused(auth, keys) -> None:
    good = signed(keys["dealer"])
    unsigned = {k: v for k, v in good.items() if k != "signature"}
    with pytest.raises(AuthError) as e:
        auth.verify(TOPIC, unsigned)
    assert code(e) == "UNSIGNED"
    forged = signed(keys["pit"], "dealer")  # signed by another key under dealer's name
    with pytest.raises(AuthError) as e:
        auth.verify(TOPIC, forged)
    assert code(e) == "BAD_SIGNATURE"
    altered = dict(good, round_id="T1-000002-bb")  # one member changed after signing
    with pytest.raises(AuthError) as e:
        auth.verify(TOPIC, altered)
    assert code(e) == "BAD_SIGNATURE"
    with pytest.raises(AuthError) as e:  # the same bytes on another topic
        auth.verify("bets/request", good)
    assert code(e) == "BAD_SIGNATURE"
    with pytest.raises(AuthError) as e:
        auth.verify(TOPIC, signed(keys["dealer"], table="T2"))
    assert code(e) == "WRONG_TABLE"
    with pytest.raises(AuthError) as e:
        auth.verify(TOPIC, signed(Ed25519PrivateKey.generate(), "stranger"))
    assert code(e) == "UNKNOWN_PRINCIPAL"
    for sig in ("not base64!", "AAAA", 17):
        with pytest.raises(AuthError) as e:
            auth.verify(TOPIC, dict(good, signature=sig))
        assert code(e) == "BAD_SIGNATURE"


def test_freshness_window(auth, keys) -> None:
    auth.check_fresh(signed(keys["dealer"], at=NOW - timedelta(seconds=30)))
    auth.check_fresh(signed(keys["dealer"], at=NOW + timedelta(seconds=30)))
    with pytest.raises(AuthError) as e:
        auth.check_fresh(signed(keys["dealer"], at=NOW - timedelta(seconds=31)))
    assert code(e) == "REQUEST_EXPIRED"
    with pytest.raises(AuthError) as e:
        auth.check_fresh(signed(keys["dealer"], at=NOW + timedelta(seconds=31)))
    assert code(e) == "REQUEST_FROM_FUTURE"
    with pytest.raises(AuthError) as e:
        auth.verify(TOPIC, dict(signed(keys["dealer"]), timestamp="2026-05-09T07:36:00"))
    assert code(e) == "UNSIGNED"  # no zone: not a UTC time


def test_roles_decide_what_a_principal_may_do(auth, keys) -> None:
    dealer = auth.verify(TOPIC, signed(keys["dealer"]))
    pit = auth.verify(TOPIC, signed(keys["pit"], "pit"))
    auth.allowed(dealer, "close_betting")
    auth.allowed(pit, "void_round")
    for who, what in ((dealer, "void_round"), (dealer, "place"), (pit, "place")):
        with pytest.raises(AuthError) as e:
            auth.allowed(who, what)
        assert code(e) == "NOT_PERMITTED"
        assert who.name in e.value.message


def test_without_signatures_the_named_principal_is_taken_unverified() -> None:
    auth = Authenticator(AuthSettings(signatures=False), "T1", keys={})
    who = auth.verify(TOPIC, {"request_id": "r", "command": "status", "principal": "pos-9"})
    assert (who.name, who.verified, who.audit) == ("pos-9", False, "unverified:pos-9")
    assert auth.verify(TOPIC, {"request_id": "r"}).name == "anonymous"
    auth.allowed(who, "void_round")  # nobody is known: nothing is refused
    auth.check_fresh({"timestamp": "1999-01-01T00:00:00Z"})
    assert auth.mode == "unsigned"


def test_keys_are_generated_loaded_and_rotated(tmp_path: Path) -> None:
    old_priv, old_pub = generate("pit", tmp_path / "old")
    new_priv, new_pub = generate("pit", tmp_path / "new")
    assert old_priv.stat().st_mode & 0o777 == 0o600
    with pytest.raises(FileExistsError):
        generate("pit", tmp_path / "old")
    spec = PrincipalSpec("pit", (str(old_pub), str(new_pub)), ("pit_supervisor",))
    auth = Authenticator(AuthSettings(principals={"pit": spec}), "T1", clock=lambda: NOW)
    # During a rotation either key verifies; each names the key that signed.
    a = auth.verify(TOPIC, Signer("pit", old_priv).sign(TOPIC, "T1", {"request_id": "1"}))
    b = auth.verify(TOPIC, Signer("pit", new_priv).sign(TOPIC, "T1", {"request_id": "2"}))
    assert a.key != b.key
    with pytest.raises(KeyFileError, match="not a PEM public key"):
        load_public_key(old_priv)
    with pytest.raises(KeyFileError, match="cannot read"):
        load_public_key(tmp_path / "missing.pub")


def test_auth_section_is_validated() -> None:
    doc = {
        "table": {"id": "t", "game": "mahjong"},
        "auth": {
            "principals": {
                "bad name": {"keys": ["a.pub"], "roles": ["dealer"]},
                "p1": {"keys": [], "roles": ["croupier"]},
            },
            "roles": {"x": ["void_round", "fly"]},
            "two_person": ["jackpot_paid", "reboot"],
        },
    }
    with pytest.raises(ConfigInvalid) as e:
        validate_document(doc)
    text = "\n".join(e.value.errors)
    assert "auth.principals.bad name: a principal's name" in text
    assert "auth.principals.p1.roles: unknown role(s) croupier" in text
    assert "auth.principals.p1.keys: a principal needs at least one public key" in text
    assert "auth.roles.x: unknown permission(s) fly" in text
    assert "auth.two_person: unknown command(s) reboot" in text
