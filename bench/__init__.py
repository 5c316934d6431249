"""Benchmarks of the table controller: ``python -m bench [--quick] [--json FILE]``.

See ``docs/performance.md`` for what each figure measures and the published results.
"""

__version__ = "1"
