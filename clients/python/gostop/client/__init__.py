"""The Python clients of the gostop game service.

``GostopClient`` (blocking, ``grpc``) and ``AsyncGostopClient`` (asyncio, ``grpc.aio``) have the same
methods; failures are ``GostopError`` subclasses (``gostop.client.errors``); ``run_seats`` plays seats
of a game with any bot (``gostop.client.runner``); ``RemoteBot`` asks a bot served as a
``gostop.v1.BotService`` (any language) for a seat's decisions (``gostop.client.remote_bot``).
"""

from .client import (
    DEFAULT_TIMEOUT,
    ActionLike,
    AsyncGostopClient,
    AsyncWatchStream,
    Game,
    GameRef,
    GostopClient,
    RetryPolicy,
    WatchStream,
    seat_of_token,
)
from .errors import (
    Cancelled,
    DataLoss,
    DeadlineExceeded,
    FailedPrecondition,
    GameNotFound,
    GameTooLong,
    GostopError,
    IllegalActionError,
    InternalError,
    InvalidRequest,
    NotYourTurnError,
    PermissionDenied,
    RequestIdReused,
    RoundInProgress,
    RoundOverError,
    StaleVersion,
    TurnTimedOut,
    Unauthenticated,
    Unavailable,
    error_from_rpc,
)
from .remote_bot import RemoteBot, RemoteBotError
from .runner import BotError, Chooser, RunReport, SeatRunner, run_seats

__all__ = [
    "DEFAULT_TIMEOUT",
    "ActionLike",
    "AsyncGostopClient",
    "AsyncWatchStream",
    "BotError",
    "Cancelled",
    "Chooser",
    "DataLoss",
    "DeadlineExceeded",
    "FailedPrecondition",
    "Game",
    "GameNotFound",
    "GameRef",
    "GameTooLong",
    "GostopClient",
    "GostopError",
    "IllegalActionError",
    "InternalError",
    "InvalidRequest",
    "NotYourTurnError",
    "PermissionDenied",
    "RemoteBot",
    "RemoteBotError",
    "RequestIdReused",
    "RetryPolicy",
    "RoundInProgress",
    "RoundOverError",
    "RunReport",
    "SeatRunner",
    "StaleVersion",
    "TurnTimedOut",
    "Unauthenticated",
    "Unavailable",
    "WatchStream",
    "error_from_rpc",
    "run_seats",
    "seat_of_token",
]
