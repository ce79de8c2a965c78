"""The service's programs: ``gostop serve`` (the server, with a bot worker inside on the memory
store) and ``gostop bots serve`` (a bot worker for a Redis-backed deployment).

They are clients of the service's API, not part of its core: nothing else under ``gostop.service``
imports them (tests/contract/test_layers.py).
"""
