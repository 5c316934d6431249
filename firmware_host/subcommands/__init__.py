"""Subcommands of ``tablectl``, one module per area."""
