"""``tablectl keys``: the Ed25519 keys of the floor's principals (``docs/security.md``).

- ``keys generate NAME [--dir DIR]``: a key pair for principal NAME: ``NAME.key`` (the
  principal's private key, mode 0600, never on the table) and ``NAME.pub`` (for the
  table's ``[auth.principals.NAME] keys``);
- ``keys id FILE``: the id the audit records for a key (``ed25519:...``);
- ``keys sign --key FILE --principal NAME --table ID --topic TOPIC REQUEST``: a request
  (JSON, ``-`` for standard input) signed as the table expects, for a technician or a
  vendor checking their own implementation;
- ``keys identity --key FILE``: the table's own identity key (``docs/security.md``,
  "What the table says"): created when missing (mode 0600, with ``NAME.pub``), and its
  public key printed for the floor's registry of tables;
- ``keys seal --key FILE --topic TOPIC PAYLOAD``: a payload signed as the table
  publishes it (for a vendor comparing their verification).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..cliargs import BadValue, CliError, creatable_file, existing_file, work_dir


def _principal(text: str) -> str:
    from ..auth.policy import PRINCIPAL_NAME

    if not PRINCIPAL_NAME.match(text):
        raise BadValue(
            f"{text!r} is not a principal name (1-64 letters, digits, '_', '.', '@', ':', '-')"
        )
    return text


def _table_id(text: str) -> str:
    from ..config import _TABLE_ID

    if not _TABLE_ID.match(text):
        raise BadValue(f"{text!r} is not a table id (1-64 letters, digits, '_', '.', '-')")
    return text


def _json_arg(text: str, what: str) -> dict[str, Any]:
    """A JSON object given as text, ``@FILE`` or ``-`` (standard input)."""
    where = what
    if text == "-":
        text, where = sys.stdin.read(), f"{what} (standard input)"
    elif text.startswith("@"):
        name = text[1:]
        try:
            text = Path(name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CliError(
                f"{what} @{name}: cannot read it: {getattr(exc, 'strerror', None) or exc}",
                code="FILE_UNREADABLE",
            ) from None
        where = f"{what} ({name})"
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise CliError(f"{where} is not valid JSON: {exc}", code="JSON_INVALID") from None
    if not isinstance(doc, dict):
        raise CliError(f"{where} must be a JSON object", code="JSON_INVALID")
    return doc


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("keys", help="generate and inspect the floor principals' signing keys")
    ksub = p.add_subparsers(dest="keys_command", metavar="ACTION")
    ksub.required = True
    g = ksub.add_parser("generate", help="a new Ed25519 key pair for a principal")
    g.add_argument("name", type=_principal, help="the principal's name ([auth.principals.NAME])")
    g.add_argument(
        "--dir", default=".", type=work_dir, help="where to write NAME.key and NAME.pub (created)"
    )
    g.add_argument("--overwrite", action="store_true", help="replace existing files")
    g.set_defaults(func=cmd_keys_generate)
    i = ksub.add_parser("id", help="the id of a public or private key file")
    i.add_argument("file", type=existing_file)
    i.set_defaults(func=cmd_keys_id)
    s = ksub.add_parser("sign", help="sign a request (JSON) as a principal")
    s.add_argument(
        "--key", required=True, type=existing_file, help="the principal's private key file"
    )
    s.add_argument("--principal", required=True, type=_principal)
    s.add_argument("--table", required=True, type=_table_id, help="the table id the request is for")
    s.add_argument(
        "--topic",
        default="commands/request",
        choices=("commands/request", "bets/request"),
        help="the request topic below the table's root",
    )
    s.add_argument("request", help="the request as JSON text, @FILE, or - (standard input)")
    s.set_defaults(func=cmd_keys_sign)
    t = ksub.add_parser(
        "identity",
        help="the table's identity key: create it (if missing) and print its public key",
        description="The table's own Ed25519 identity key, which signs every message the "
        "table publishes. Created with mode 0600 when FILE does not exist (never "
        "overwritten), with its public key beside it (NAME.pub); the public key is "
        "printed for the floor's registry of tables (docs/floor.md).",
    )
    t.add_argument(
        "--key",
        required=True,
        type=creatable_file,
        help="the identity key file ([journal] identity_key; default identity.key beside "
        "the journal, e.g. /var/lib/tablectl/identity.key)",
    )
    t.set_defaults(func=cmd_keys_identity)
    e = ksub.add_parser(
        "seal",
        help="sign a payload (JSON) as the table publishes it",
        description="Prints PAYLOAD as the table publishes it on TOPIC: its RFC 8785 "
        "canonical JSON with the signature of KEY as its last member (docs/security.md).",
    )
    e.add_argument(
        "--key",
        required=True,
        type=existing_file,
        help="an Ed25519 private key (the table's identity)",
    )
    e.add_argument(
        "--topic", required=True, type=_topic, help="the topic below the table's root (rounds...)"
    )
    e.add_argument("payload", help="the payload as JSON text, @FILE, or - (standard input)")
    e.set_defaults(func=cmd_keys_seal)


def _topic(text: str) -> str:
    from ..topics import TopicError, check_relative_topic

    try:
        return check_relative_topic(text)
    except TopicError as exc:
        raise BadValue(str(exc)) from None


def cmd_keys_generate(args: argparse.Namespace) -> int:
    from ..auth import generate, key_id, load_public_key

    try:
        priv, pub = generate(args.name, args.dir, overwrite=args.overwrite)
    except FileExistsError as exc:
        raise CliError(str(exc), code="KEY_EXISTS") from None
    kid = key_id(load_public_key(pub))
    print(f"private key: {priv} (mode 0600: for the principal {args.name} alone)")
    print(f"public key:  {pub} (for the table: [auth.principals.{args.name}] keys)")
    print(f"key id:      {kid}")
    return 0


def cmd_keys_id(args: argparse.Namespace) -> int:
    from ..auth import KeyFileError, key_id, load_private_key, load_public_key

    try:
        pub = load_public_key(args.file)
    except KeyFileError:
        try:
            pub = load_private_key(args.file).public_key()
        except KeyFileError:
            raise CliError(
                f"{args.file}: neither an Ed25519 public key nor a private one (PEM)",
                code="KEY_INVALID",
            ) from None
    print(key_id(pub))
    return 0


def cmd_keys_sign(args: argparse.Namespace) -> int:
    from ..auth import Signer

    signer = Signer(args.principal, args.key)
    request = _json_arg(args.request, "REQUEST")
    print(json.dumps(signer.sign(args.topic, args.table, request), ensure_ascii=False))
    return 0


def cmd_keys_identity(args: argparse.Namespace) -> int:
    from ..auth.identity import TableIdentity, public_path

    path = Path(args.key)
    created = not path.exists()
    identity = TableIdentity.create(path) if created else TableIdentity.load(path)
    pub = public_path(path)
    if not created and not pub.exists():
        pub.write_bytes(identity.public_pem())
    print(
        f"identity key: {path} ("
        + ("created, " if created else "exists, ")
        + "mode 0600: the table's alone, never copied)"
    )
    print(f"public key:   {pub} (for the floor's registry of tables)")
    print(f"key id:       {identity.key_id}")
    sys.stdout.write(identity.public_pem().decode("ascii"))
    return 0


def cmd_keys_seal(args: argparse.Namespace) -> int:
    from ..auth import load_private_key
    from ..auth.evidence import seal

    key = load_private_key(args.key)
    payload = _json_arg(args.payload, "PAYLOAD")
    sys.stdout.write(seal(key, args.topic, payload).decode("utf-8") + "\n")
    return 0
