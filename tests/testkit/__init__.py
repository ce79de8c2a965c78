"""What the test suites share: configurations, real Redis servers, real server processes and
in-process servers, gRPC helpers and a raw HTTP/2 connection.

The fixtures built on them (``service_redis``, ``api``) live in ``tests/conftest.py``, so tests
ask for them by name and import only helpers.
"""
