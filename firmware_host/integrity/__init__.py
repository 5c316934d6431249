"""Game integrity (issue 19): the equipment and the software watched as regulators and
surveillance do. ``docs/integrity.md`` describes every detector, its statistics and its
thresholds.

- ``alerts``: the one alert model, held until an operator acknowledges it (journal:
  ``journal/alerts.py``), published on the retained ``alerts`` topic;
- ``codes``: every alert code with its severity and meaning;
- ``stats``: the statistics as pure functions (chi-square, its exact tail, CUSUM);
- ``software``: the signed manifest of the installed files and the GAT-style check;
- the detectors, extensions of the table (``table/extension.py``) outside the rules core.
"""
