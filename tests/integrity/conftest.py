"""tests/integrity: make the support modules importable under ``--import-mode=importlib``
(which does not put test directories on ``sys.path``)."""

from __future__ import annotations

import sys
from pathlib import Path

_here = str(Path(__file__).resolve().parent)
if _here not in sys.path:
    sys.path.insert(0, _here)
