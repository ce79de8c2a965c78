"""Prometheus metrics: the standard gRPC server metrics and the game metrics.

Labels never carry card ids or anything hidden: only presets, player counts, outcomes, action
kinds, gRPC methods and codes, and store operations.

Every server process has its own ``Metrics`` (its own registry) and serves it on its own port:
with ``--workers N`` worker ``i`` serves ``metrics_port + i`` (``service.workers``), and
Prometheus scrapes each worker as a target of its own; sums over workers are PromQL's ``sum``.
Gauges therefore describe one process (its cache, its open streams, its calls in flight).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics

_LATENCY_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)

# No ``*_created`` series (the creation timestamp of every counter and histogram child): they
# double the series count, and Prometheus does not need them to compute rates. The switch is
# prometheus_client's, process-wide, read when a registry is collected.
disable_created_metrics()  # type: ignore[no-untyped-call]  # (prometheus_client leaves it unannotated)


class Metrics:
    """All metrics of one server, in their own registry.

    To add metrics, add attributes here (``registry=r``) and document them in docs/service.md
    (the metric table); the chart's alert tests read the names exported from this class.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        rpc = ("grpc_type", "grpc_service", "grpc_method", "protocol")

        # --- gRPC (the GameService; counted by service.server.ObservingInterceptor)
        self.started = Counter("grpc_server_started_total", "RPCs started on the server.", rpc, registry=r)
        self.handled = Counter(
            "grpc_server_handled_total", "RPCs completed on the server, by status code.",
            (*rpc, "grpc_code"), registry=r,
        )
        self.handling = Histogram(
            "grpc_server_handling_seconds", "Time to handle an RPC (seconds).", rpc,
            buckets=_LATENCY_BUCKETS, registry=r,
        )
        self.msg_received = Counter(
            "grpc_server_msg_received_total", "Messages received by the server (the request of every call).",
            rpc, registry=r,
        )
        self.msg_sent = Counter(
            "grpc_server_msg_sent_total",
            "Messages sent by the server (a unary call's response, every message of a stream).", rpc, registry=r,
        )
        self.in_flight = Gauge(
            "grpc_server_in_flight_calls", "Calls being handled by this process now (open streams included).",
            rpc, registry=r,
        )

        # --- the HTTP port's edge (service.http.Edge): requests refused before any protocol saw them
        self.http_refused = Counter(
            "gostop_http_refused_total",
            "HTTP port requests refused before the API or the web table saw them, by reason "
            "(WEBSOCKET_NOT_SERVED, HOST_NOT_SERVED, REQUEST_BODY_TIMEOUT).", ("reason",), registry=r,
        )

        # --- games (counted by service.games.Games)
        self.games_created = Counter(
            "gostop_games_created_total", "Games created, by preset and number of players.", ("preset", "players"),
            registry=r,
        )
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
        # Read when scraped (set_function, by service.games.Games and service.server.Server).
        self.games_cached = Gauge(
            "gostop_games_cached", "Games whose last snapshot this process keeps in memory (GOSTOP_SNAPSHOT_CACHE "
            "bounds it).", registry=r,
        )
        self.watch_streams = Gauge(
            "gostop_watch_streams", "WatchGame streams open on this process.", registry=r,
        )
        self.followed_games = Gauge(
            "gostop_followed_games", "Games whose commits this process follows with one subscription shared by "
            "their streams (0 where each stream waits on its own).", registry=r,
        )

        # --- the store
        self.store_latency = Histogram(
            "gostop_store_seconds", "Store operation latency (seconds).", ("store", "op"),
            buckets=_LATENCY_BUCKETS, registry=r,
        )
        self.store_errors = Counter(
            "gostop_store_errors_total", "Store operations that failed (unreachable or corrupt).",
            ("store", "op"), registry=r,
        )

        # --- bot seats (pushes by service.games.Games; the decisions are the bot workers', see
        # gostop.service.programs.botworker, which registers its own metrics in the registry it is given)
        self.bot_push_failures = Counter(
            "gostop_bot_turn_push_failures_total",
            "Bot turns whose push to the bot queue failed after the commit (each is retried).", registry=r,
        )

        # --- turn clocks (service.clock; docs/clock.md)
        self.clock_moves = Counter(
            "gostop_clock_moves_total", "Decisions the table's bot made for seats, by policy bot and cause "
            "(timeout, away, auto_play).", ("policy", "cause"), registry=r,
        )
        self.clock_lag = Histogram(
            "gostop_clock_lag_seconds", "A decision made for a seat: its commit time minus its deadline.",
            buckets=_LATENCY_BUCKETS, registry=r,
        )
        self.clock_seats = Gauge(
            "gostop_clock_seats",
            "Seats of the clocked games this process holds, by state (away, auto_play, connected).",
            ("state",), registry=r,
        )
