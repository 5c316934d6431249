"""``tablectl verify-software`` and ``tablectl software-manifest`` (``docs/integrity.md``).

- ``verify-software --config TABLE.toml`` (or ``--manifest M --public-key K``): the
  installed software checked against the signed manifest; exit 0 when it matches, 1
  when not (each difference by path); ``--seed`` adds the GAT-style seeded answer,
  ``--root`` reads a copy of the image mounted there (a lab's reference), ``--record``
  appends the result to the installation log (the download log, ``installs.py``).
- ``software-manifest --out MANIFEST [--key BUILD.key]``: at build time, the manifest of
  the environment the command runs in (``--scope packages``: the project's packages
  only, for a demo); signed at once with ``--key``, or later on the release machine
  with ``software-manifest --sign MANIFEST --key BUILD.key`` (the build key never
  goes where the environment is built).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

from ..cliargs import BadValue, CliError, creatable_file, existing_dir, existing_file, output_file

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
        description="Read every file the signed manifest lists (the virtual environment, "
        "the interpreter, the standard library: its scope) and compare: a file changed, "
        "missing or not listed, a link pointing elsewhere, a place the interpreter imports "
        "from outside the manifest. Exit 0: they match; 1: a mismatch (each difference by "
        "path).",
    )
    v.add_argument("--config", type=existing_file, help="the table file (its [software] section)")
    v.add_argument(
        "--manifest", type=existing_file, help="the signed manifest (its signature: MANIFEST.sig)"
    )
    v.add_argument("--public-key", type=existing_file, help="the build's Ed25519 public key (PEM)")
    v.add_argument(
        "--root",
        type=existing_dir,
        help="where a copy of the image is mounted: the manifest's paths are read under it "
        "(default: the running table)",
    )
    v.add_argument(
        "--seed", type=_seed, help="a requester's seed: also print the seeded answer (GAT style)"
    )
    v.add_argument("--json", action="store_true", help="print the result as one JSON object")
    v.add_argument(
        "--record",
        type=creatable_file,
        help="also append the result to this installation log (the download log: "
        "/var/lib/tablectl/software-installs.jsonl; docs/install.md)",
    )
    v.set_defaults(func=cmd_verify_software)
    m = sub.add_parser(
        "software-manifest",
        help="build (and sign) the manifest of the installed software (build time)",
        description="Write the SHA-256 manifest of the environment this command runs in "
        "(its virtual environment whole, its interpreter, every directory it imports from) "
        "after checking every installed distribution against its RECORD; with --key, its "
        "Ed25519 signature (MANIFEST.sig). --sign signs a manifest built elsewhere. The "
        "build key stays on the release machine; the table gets the manifest, the "
        "signature and the public key.",
    )
    m.add_argument("--out", type=output_file, help="where to write the manifest")
    m.add_argument(
        "--key", type=existing_file, help="the build's Ed25519 private key (PEM): sign the manifest"
    )
    m.add_argument(
        "--sign",
        metavar="MANIFEST",
        type=existing_file,
        help="sign this manifest (built elsewhere)",
    )
    m.add_argument("--scope", choices=("environment", "packages"), default="environment",
                   help="environment (a table's); packages: the project's packages only "
                   "(a demo's)")  # fmt: skip
    m.add_argument(
        "--root", type=existing_dir, help="packages scope: the directory holding the packages"
    )
    m.add_argument("--accept-unrecorded", action="store_true",
                   help="sign even with files in the environment's site-packages that no "
                   "distribution's RECORD names (they are named in the manifest)")  # fmt: skip
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
            "no manifest and public key ([software] of --config, or --manifest and --public-key)",
            code="SOFTWARE_NOT_CONFIGURED",
        )
    root = Path(args.root).resolve() if args.root else None
    result = verify(settings, prefix=root, seed=args.seed)
    if args.record:
        from ..integrity.installs import append_log

        append_log(Path(args.record), {
            "action": "verified", "ok": result.ok, "reason": result.reason,
            "version": result.version, "manifest_sha256": result.manifest_sha256,
            "files": result.files, "scope": result.scope,
        })  # fmt: skip
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(result.summary())
        for line in result.differences():
            print(f"  {line}")
        if result.seeded_digest is not None:
            print(f"seeded answer ({result.seed}): {result.seeded_digest}")
    return 0 if result.ok else EXIT_MISMATCH


def cmd_software_manifest(args: argparse.Namespace) -> int:
    from .. import __version__
    from ..auth import load_private_key
    from ..integrity.software import (
        ManifestRefused,
        environment_scope,
        make_manifest,
        packages_scope,
        sign_manifest,
    )

    name = "software-manifest"
    if args.sign:
        if not args.key:
            raise CliError("--sign needs --key", code="MISSING_ARGUMENT")
        manifest = Path(args.sign).read_bytes()
        Path(args.sign + ".sig").write_bytes(sign_manifest(manifest, load_private_key(args.key)))
        print(f"{args.sign}: sha256 {hashlib.sha256(manifest).hexdigest()}, signed "
              f"({args.sign}.sig)")  # fmt: skip
        return 0
    if not args.out:
        raise CliError("--out (or --sign MANIFEST) is needed", code="MISSING_ARGUMENT")
    if args.root and args.scope != "packages":
        raise CliError("--root goes with --scope packages", code="OPTION_NOT_APPLICABLE")
    meddling = [v for v in ("PYTHONPATH", "PYTHONHOME") if os.environ.get(v)]
    if meddling and args.scope == "environment":
        raise CliError(
            f"{' and '.join(meddling)} set: the manifest is of the environment the service "
            "runs (without them)",
            code="ENVIRONMENT_NOT_CLEAN",
        )
    key = load_private_key(args.key) if args.key else None
    if args.scope == "packages":
        scope = packages_scope(Path(args.root) if args.root else None)
    else:
        scope = environment_scope()
    try:
        manifest, found = make_manifest(scope, version=args.software_version or __version__,
                                        accept_unrecorded=args.accept_unrecorded)  # fmt: skip
    except ManifestRefused as exc:
        print(f"tablectl {name}: refused: {len(exc.problems)} problem(s); nothing written",
              file=sys.stderr)  # fmt: skip
        for line in exc.problems:
            print(f"  {line}", file=sys.stderr)
        return 1  # a list of problems, one per line (README: exit 1 results)
    out = Path(args.out)
    out.write_bytes(manifest)
    signed = "unsigned: sign it with --sign on the release machine"
    if key is not None:
        Path(str(out) + ".sig").write_bytes(sign_manifest(manifest, key))
        signed = f"signed ({out}.sig)"
    body = json.loads(manifest)
    print(
        f"{out}: {len(body['files'])} file(s) and {len(body['links'])} link(s), "
        f"{found.size / 1e6:.1f} MB, scope {scope.kind} ({', '.join(sorted(body['trees']))}); "
        f"sha256 {hashlib.sha256(manifest).hexdigest()}; {signed}"
    )
    for p in body.get("unrecorded") or ():
        print(f"  accepted, in no RECORD: {p}")
    return 0
