"""structlog set-up: JSON lines, or a console renderer on a terminal."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import orjson
import structlog


def _json_bytes(event: Any, **kw: Any) -> bytes:
    """One log line as JSON bytes; whatever orjson cannot encode natively is written as its ``repr``.

    orjson refuses integers beyond 64 bits without calling ``default``: such a line is written by
    the standard library's encoder instead, so that no value in a log line can fail the call
    that logs it.
    """
    try:
        return orjson.dumps(event, default=kw.get("default", repr))
    except TypeError:
        return json.dumps(event, default=repr, ensure_ascii=False).encode()


def configure(fmt: str = "auto", level: str = "info") -> None:
    """Configure structlog (and the standard logging it shares output with).

    JSON lines are encoded by orjson and written as bytes: at the default level every call logs
    one line, and this way a line costs less than with the standard library's encoder and a text
    stream.
    """
    console = fmt == "console" or (fmt == "auto" and sys.stderr.isatty())
    numeric = getattr(logging, level.upper(), logging.INFO)
    logging.basicConfig(level=numeric, stream=sys.stderr, format="%(message)s")
    binary = getattr(sys.stderr, "buffer", None)
    renderer: structlog.typing.Processor
    factory: Any
    if console:
        renderer = structlog.dev.ConsoleRenderer()
        factory = structlog.PrintLoggerFactory(file=sys.stderr)
    elif binary is not None:
        renderer = structlog.processors.JSONRenderer(serializer=_json_bytes)
        factory = structlog.BytesLoggerFactory(file=binary)
    else:  # a text-only stream (an embedding program replaced stderr)
        renderer = structlog.processors.JSONRenderer()
        factory = structlog.PrintLoggerFactory(file=sys.stderr)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=factory,
        cache_logger_on_first_use=True,
    )
