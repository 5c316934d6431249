"""``tablectl verify-software`` and ``tablectl software-manifest`` (``docs/integrity.md``).

- ``verify-software --config TABLE.toml`` (or ``--manifest M --public-key K``): the
  installed files checked against the signed manifest; exit 0 when they match, 1 when
  not (the list of what differs), ``--seed`` adds the GAT-style seeded answer,
  ``--root`` checks another copy (a lab's reference install).
- ``software-manifest --key BUILD.key --out MANIFEST``: at build time, the manifest of
  the packages as installed under ``--root`` and its signature (``MANIFEST.sig``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..cliargs import BadValue, CliError, existing_dir, existing_file, output_file

EXIT_MISMATCH = 1


def _seed(text: str) -> str:
    from ..integrity.software import SEED

    if not SEED.match(text):
        raise BadValue(f"must be 8-128 of A-Z a-z 0-9 _ . : + / = -, got {text!r}")
    return text


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    v = sub.add_parser(
        "verify-software",
        help="check the installed software against its signed manifest",
        description="Hash every installed file of the daemon's packages and compare with "
        "the manifest signed at build time ([software] of the table file, or --manifest "
        "and --public-key). Exit 0: they match; 1: a mismatch (listed).",
    )
    v.add_argument("--config", type=existing_file, help="the table file (its [software] section)")
    v.add_argument(
        "--manifest", type=existing_file, help="the signed manifest (its signature: MANIFEST.sig)"
    )
    v.add_argument(
        "--public-key", type=existing_file, help="the build's Ed25519 public key (PEM)"
    )
    v.add_argument(
        "--root",
        type=existing_dir,
        help="the directory holding the packages (default: the running ones)",
    )
    v.add_argument(
        "--seed", type=_seed, help="a requester's seed: also print the seeded answer (GAT style)"
    )
    v.add_argument("--json", action="store_true", help="print the result as one JSON object")
    v.set_defaults(func=cmd_verify_software)
    m = sub.add_parser(
        "software-manifest",
        help="build and sign the manifest of the installed files (build time)",
        description="Write the SHA-256 manifest of the daemon's packages under --root and "
        "its Ed25519 signature (MANIFEST.sig) with the build key. The build key stays on "
        "the build machine; the table gets the manifest, the signature and the public key.",
    )
    m.add_argument(
        "--key", required=True, type=existing_file, help="the build's Ed25519 private key (PEM)"
    )
    m.add_argument("--out", required=True, type=output_file, help="where to write the manifest")
    m.add_argument(
        "--root",
        type=existing_dir,
        help="the directory holding the packages (default: the running ones)",
    )
    m.add_argument("--version", dest="software_version", help="the version to record")
    m.set_defaults(func=cmd_software_manifest)


def cmd_verify_software(args: argparse.Namespace) -> int:
    from ..config import load_config
    from ..integrity.software import SoftwareSettings, verify

    if args.config and (args.manifest or args.public_key):
        raise CliError(
            "give either --config (its [software] section) or --manifest and --public-key, "
            "not both",
            code="OPTION_NOT_APPLICABLE",
        )
    if bool(args.manifest) != bool(args.public_key):
        raise CliError(
            "--manifest and --public-key go together (the manifest and the key that "
            "verifies its signature)",
            code="INVALID_VALUE",
        )
    if args.config:
        from ..assembly import _resolve_software

        cfg = load_config(args.config)
        found: SoftwareSettings = cfg.section("software") or SoftwareSettings()
        settings = _resolve_software(found, cfg.source)
    else:
        settings = SoftwareSettings(args.manifest or "", args.public_key or "")
    if not settings.configured:
        raise CliError(
            "no manifest and public key ([software] of --config, or --manifest and "
            "--public-key)",
            code="SOFTWARE_NOT_CONFIGURED",
        )
    result = verify(settings, root=Path(args.root) if args.root else None, seed=args.seed)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(result.summary())
        for key in ("changed", "missing", "unlisted"):
            for rel in getattr(result, key):
                print(f"  {key}: {rel}")
        if result.seeded_digest is not None:
            print(f"seeded answer ({result.seed}): {result.seeded_digest}")
    return 0 if result.ok else EXIT_MISMATCH


def cmd_software_manifest(args: argparse.Namespace) -> int:
    from .. import __version__
    from ..auth import load_private_key
    from ..integrity.software import build_manifest, default_root, sign_manifest

    key = load_private_key(args.key)
    root = Path(args.root) if args.root else default_root()
    manifest = build_manifest(root, version=args.software_version or __version__)
    out = Path(args.out)
    out.write_bytes(manifest)
    Path(str(out) + ".sig").write_bytes(sign_manifest(manifest, key))
    files = len(json.loads(manifest)["files"])
    print(f"{out}: {files} file(s) under {root}, signed ({out}.sig)")
    return 0
