"""Reliability and security tests of the game service, run against real components: real
``redis-server`` processes (standalone and Cluster), real server processes, real gRPC over
loopback. ``make test`` runs them at a small scale; ``make soak`` (``scripts/soak.py``) runs them
longer and prints the figures. ``docs/reliability.md`` says what they guarantee."""
