"""The constants of the service benchmark: the table played, the goals, deadlines and channel options.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PRESET = "standard"
PLAYERS = 2
GOAL_INFLIGHT = 8
GOAL_SHARE = 0.50
GOAL_P99_MS = 5.0
GOAL_WORKERS = 2
GOAL_WORKERS_RATIO = 1.6
CALL_TIMEOUT = 10.0
"""Deadline of every call (seconds): a stalled server fails the call instead of hanging the run."""
GAMES_PER_SECOND = 150
"""Games created before each SubmitAction run, per second of warm-up and window (the default of ``--games``):
above the 80-100 rounds a second one server plays here, so that the window measures SubmitAction
alone. A run that outpaces them creates more inline (CreateGame calls that the server serves
inside the window, uncounted: 128 games made them ~4 % of its CPU at 8 in flight) and says how many."""
TOKEN_SECRET = "bench-service-token-secret-0123456789"
OPERATOR_KEY = "bench-operator-key"
"""The games are created with an operator key, so that the server deals exactly the seed given and
the load generator can mirror each game locally (a seed from a plain caller only mixes into a fair deal)."""
CHANNEL_OPTIONS = (("grpc.use_local_subchannel_pool", 1),)
"""Each channel keeps its own connection: by default gRPC shares one TCP connection among the
channels of a process that have the same target and options, and a connection goes to one worker."""
Metadata = tuple[tuple[str, str], ...]
OPERATOR: Metadata = (("x-api-key", OPERATOR_KEY),)
"""The metadata that creates the benchmark's games."""
RPCS = ("health", "submit", "get")
RPC_NAMES = {"health": "Health/Check", "submit": "SubmitAction", "get": "GetGame"}
