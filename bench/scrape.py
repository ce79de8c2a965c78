"""The server's own Prometheus metrics, scraped before and after a window, as a per-call breakdown.
"""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Sequence

from testkit.redis_server import HOST

# ----------------------------------------------------------------------------- server metrics

_SAMPLE = re.compile(r"^(\w+)\{([^}]*)\} (\S+)$")


def scrape(port: int) -> dict[tuple[str, str], float]:
    """Sums and counts of the server's RPC and store histograms: (metric, label) -> value."""
    with urllib.request.urlopen(f"http://{HOST}:{port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    out: dict[tuple[str, str], float] = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if not m or not m.group(1).endswith(("_sum", "_count")):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        if m.group(1).startswith("grpc_server_handling_seconds"):
            key = labels.get("grpc_method", "")
        elif m.group(1).startswith("gostop_store_seconds"):
            key = "store." + labels.get("op", "")
        else:
            continue
        out[(m.group(1).rsplit("_", 1)[1], key)] = float(m.group(3))
    return out


def scrape_all(ports: Sequence[int]) -> dict[tuple[str, str], float]:
    """``scrape`` summed over the metrics endpoints of every worker."""
    out: dict[tuple[str, str], float] = {}
    for port in ports:
        for key, value in scrape(port).items():
            out[key] = out.get(key, 0.0) + value
    return out


def server_breakdown(before: dict[tuple[str, str], float], after: dict[tuple[str, str], float]) -> str:
    """Mean server-side time per call between two scrapes, e.g. ``SubmitAction 1.20 ms, store.commit 0.40 ms``."""
    parts = []
    for (kind, key), count in sorted(after.items()):
        if kind != "count":
            continue
        calls = count - before.get(("count", key), 0.0)
        if calls <= 0:
            continue
        total = after.get(("sum", key), 0.0) - before.get(("sum", key), 0.0)
        parts.append(f"{key} {total / calls * 1000:.3f} ms x{calls:.0f}")
    return ", ".join(parts)
