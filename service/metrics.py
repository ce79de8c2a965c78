"""Prometheus metrics: the standard gRPC server metrics and the game metrics.

Labels never carry card ids or anything hidden: only presets, outcomes, action kinds,
gRPC methods and codes, and store operations.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

_LATENCY_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)


class Metrics:
    """All metrics of one server, in their own registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        rpc = ("grpc_type", "grpc_service", "grpc_method")
        self.started = Counter("grpc_server_started_total", "RPCs started on the server.", rpc, registry=r)
        self.handled = Counter(
            "grpc_server_handled_total", "RPCs completed on the server, by status code.",
            (*rpc, "grpc_code"), registry=r,
        )
        self.handling = Histogram(
            "grpc_server_handling_seconds", "Time to handle an RPC (seconds).", rpc,
            buckets=_LATENCY_BUCKETS, registry=r,
        )
        self.stream_sent = Counter(
            "grpc_server_msg_sent_total", "Stream messages sent by the server.", rpc, registry=r,
        )
        self.games_created = Counter("gostop_games_created_total", "Games created, by preset.", ("preset",), registry=r)
        self.rounds_finished = Counter(
            "gostop_rounds_finished_total", "Rounds finished, by preset and outcome.", ("preset", "outcome"),
            registry=r,
        )
        self.actions = Counter("gostop_actions_total", "Actions committed, by kind.", ("kind",), registry=r)
        self.conflicts = Counter(
            "gostop_version_conflicts_total", "Commits refused because the game moved on.", registry=r,
        )
        self.idempotent_replays = Counter(
            "gostop_idempotent_replays_total", "Retried requests answered from the stored response.", registry=r,
        )
        self.store_latency = Histogram(
            "gostop_store_seconds", "Store operation latency (seconds).", ("store", "op"),
            buckets=_LATENCY_BUCKETS, registry=r,
        )
        self.store_errors = Counter(
            "gostop_store_errors_total", "Store operations that failed (unreachable or corrupt).",
            ("store", "op"), registry=r,
        )
