"""The benchmarks of ``make bench``: the engine (``bench.engine``), the service under load
(``bench.service``, with ``bench.domain_free``, a server with no domain work, for its bound), the
same with ghz (``bench.ghz``) and Redis memory per game (``bench.memory``).

Run from the repository root with the tests' helpers on the path, which start the real
redis-server and server processes: ``PYTHONPATH=tests .venv/bin/python -m bench.service``.
"""
