"""The floor's tooling for a fleet of tables (issue 35): from one Pi to a thousand.

- ``tablectl provision`` (:mod:`tablefleet.provision`): the floor's inventory (a CSV:
  table id, game, pit, devices, dealers) made into each table's files (its table file,
  its identity and audit keys, its MQTT password, the principals' public keys it names)
  and the floor's (the registry of tables the ingest reads, the broker's password file
  and ACL lines); idempotent, secrets written with safe modes.
- ``tablectl rollout`` (:mod:`tablefleet.rollout`): what the update playbook
  (``deploy/ansible/update.yml``) asks a table over MQTT: a signed command
  (``maintenance``, ``end_maintenance``) and a wait on its retained ``state``
  (in maintenance and idle, back online with the new version, in play).

The table daemon (``firmware_host``) never imports this package (a test checks).
"""
