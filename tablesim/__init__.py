"""Simulation and demo tooling: everything that plays a table without being the table.

``tablectl demo`` (:mod:`tablesim.demo`), its simulated croupier, simulated players,
the floor's side of MQTT (:mod:`tablesim.floor_client`) and the MQTT brokers the demo,
the tests and the benchmarks start (:mod:`tablesim.broker`). It uses the runtime
packages (``firmware_host``, ``drivers``) through their public surfaces; they never
import it (``tests/test_tablesim_boundary.py`` checks), so a production table runs
without a line of it.
"""
