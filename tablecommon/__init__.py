"""What the table's runtime (``firmware_host``) and its device drivers (``drivers``)
both stand on: a leaf that imports nothing of the project (a test checks).

- :mod:`.errors`: the one base of coded errors (:class:`~.errors.CodedError`) and the
  two rules-core errors a shared fact raises (a card that cannot be read is an
  :class:`~.errors.OutcomeError`);
- :mod:`.values` and :mod:`.settings`: the settings schema of a table file's
  sections (:class:`~.settings.FieldSpec`, :func:`~.settings.validate_fields`) and
  their registration (:func:`~.settings.register_section`), which the configuration
  reads and every module with a section (the drivers' ``[devices]`` among them)
  declares;
- :mod:`.cliargs`: the one error path of ``tablectl``'s command lines;
- :mod:`.cards`: the card notation and shoes as data; :mod:`.wheel`: the single-zero
  wheel's pocket order;
- :mod:`.events`: the typed events of each kind of device (``wheel``, ``shoe``,
  ``shaker``, ``keypad``), which every driver of the kind emits and the procedure of
  the kind matches on.
"""
