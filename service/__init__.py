"""The gostop game service: a stateless gRPC server over a store of game snapshots and logs.

Serving needs what the ``[server]`` extra installs (``pip install 'gostop[server]'``); without it,
importing this package says so instead of failing on the first missing module.
"""

from __future__ import annotations

import importlib.util

_SERVER_MODULES = ("redis", "hiredis", "structlog", "prometheus_client", "grpc_health", "grpc_reflection")
_missing = [name for name in _SERVER_MODULES if importlib.util.find_spec(name) is None]
if _missing:
    raise ImportError(
        f"gostop.service needs the [server] extra (missing: {', '.join(_missing)}): pip install 'gostop[server]'",
        name=__name__,
    )
