"""The one error path of ``tablectl``: the shared command-line checks
(:mod:`tablecommon.cliargs`, which the drivers' ``tablectl sim`` and ``tablectl
decode`` use too), under the runtime's own name."""

from __future__ import annotations

from tablecommon.cliargs import (
    BadValue,
    CliError,
    Parser,
    broker_url,
    count,
    creatable_file,
    db_url,
    existing_dir,
    existing_file,
    flag_name,
    listen_address,
    name_like,
    number,
    one_of,
    output_file,
    plain_words,
    redact_url,
    tcp_port,
    topic_prefix,
    work_dir,
)

__all__ = [
    "BadValue",
    "CliError",
    "Parser",
    "broker_url",
    "count",
    "creatable_file",
    "db_url",
    "existing_dir",
    "existing_file",
    "flag_name",
    "listen_address",
    "name_like",
    "number",
    "one_of",
    "output_file",
    "plain_words",
    "redact_url",
    "tcp_port",
    "topic_prefix",
    "work_dir",
]
