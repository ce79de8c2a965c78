"""The errors of the gostop clients: one ``GostopError`` subclass per cause, chosen by the status's
``google.rpc.ErrorInfo`` reason (else its gRPC code).

The three causes the engine also has are named apart from the engine's exceptions, which a client
program may import beside them: ``IllegalActionError``, ``NotYourTurnError`` and ``RoundOverError``
are the service refusing a request (they carry a gRPC ``code``); ``gostop.engine.IllegalAction``
and its kin are the engine refusing an action in-process (they carry the reason as ``code``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

__all__ = [
    "Cancelled",
    "DataLoss",
    "DeadlineExceeded",
    "FailedPrecondition",
    "GameNotFound",
    "GameTooLong",
    "GostopError",
    "IllegalActionError",
    "InternalError",
    "InvalidRequest",
    "NotYourTurnError",
    "PermissionDenied",
    "RequestIdReused",
    "RoundInProgress",
    "RoundOverError",
    "StaleVersion",
    "TurnTimedOut",
    "Unauthenticated",
    "Unavailable",
    "client_side_error",
    "error_from_rpc",
]



class GostopError(Exception):
    """A failed call: its gRPC code, the ``ErrorInfo`` reason and metadata, and the message."""

    def __init__(self, code: grpc.StatusCode, reason: str, message: str,
                 metadata: Mapping[str, str] | None = None) -> None:
        super().__init__(f"{code.name} {reason}: {message}" if reason else f"{code.name}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.metadata: dict[str, str] = dict(metadata or {})


class InvalidRequest(GostopError):
    """``INVALID_ARGUMENT``: a malformed request (bad game id, rules, action, request id, clock
    settings out of range: ``BAD_CLOCK`` with the ``field``...)."""


class RequestIdReused(InvalidRequest):
    """``INVALID_ARGUMENT`` / ``REQUEST_ID_REUSED``: the request id was used for another request."""


class Unauthenticated(GostopError):
    """``UNAUTHENTICATED``: a missing, malformed or invalid seat token or API key."""


class PermissionDenied(GostopError):
    """``PERMISSION_DENIED``: a token of another game, an operator-only request, a log not yet open, a
    bot worker acting for a person's seat before its deadline (``NOT_A_BOT_SEAT``)."""

    @property
    def deadline_ms(self) -> int | None:
        """``NOT_A_BOT_SEAT``: when the seat's decision falls due (server Unix ms), if it has a deadline."""
        value = self.metadata.get("deadline_ms")
        return int(value) if value else None


class GameNotFound(GostopError):
    """``NOT_FOUND`` / ``GAME_NOT_FOUND``: no such game, or it expired."""


class FailedPrecondition(GostopError):
    """``FAILED_PRECONDITION``: the game is not in a state that allows the request (``NO_CLOCK``:
    ``SetAutoPlay`` on a game without a turn clock)."""


class NotYourTurnError(FailedPrecondition):
    """The caller's seat is not the seat to move."""


class IllegalActionError(FailedPrecondition):
    """A well-formed action the rules forbid now (the message says why)."""


class RoundOverError(FailedPrecondition):
    """An action after the end of the round, or ``StartNextRound`` once the match is over."""


class RoundInProgress(FailedPrecondition):
    """``StartNextRound`` before the current round is over."""


class GameTooLong(FailedPrecondition):
    """The game reached the server's action limit."""


class StaleVersion(GostopError):
    """``ABORTED`` / ``STALE_VERSION``: the game moved on; re-read it and choose again."""

    @property
    def current_version(self) -> int:
        return int(self.metadata.get("current_version", "0"))

    @property
    def expected_version(self) -> int:
        return int(self.metadata.get("expected_version", "0"))


class TurnTimedOut(StaleVersion):
    """``ABORTED`` / ``TURN_TIMED_OUT``: the seat's time ran out and the table's bot made its decision
    first (a game with a turn clock); re-read the game. A ``StaleVersion``, so ``act`` reads again."""


class Unavailable(GostopError):
    """``UNAVAILABLE``: the server or its store cannot serve the call now (retried before it is raised)."""


class DeadlineExceeded(GostopError):
    """``DEADLINE_EXCEEDED``: the call's deadline passed."""


class Cancelled(GostopError):
    """``CANCELLED``."""


class DataLoss(GostopError):
    """``DATA_LOSS``: the stored game cannot be decoded."""


class InternalError(GostopError):
    """``INTERNAL`` or any other unexpected status."""


_BY_REASON: Final[dict[str, type[GostopError]]] = {
    "REQUEST_ID_REUSED": RequestIdReused,
    "GAME_NOT_FOUND": GameNotFound,
    "NOT_YOUR_TURN": NotYourTurnError,
    "ILLEGAL_ACTION": IllegalActionError,
    "ROUND_OVER": RoundOverError,
    "ROUND_IN_PROGRESS": RoundInProgress,
    "GAME_TOO_LONG": GameTooLong,
    "STALE_VERSION": StaleVersion,
    "TURN_TIMED_OUT": TurnTimedOut,
}
_BY_CODE: Final[dict[grpc.StatusCode, type[GostopError]]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidRequest,
    grpc.StatusCode.OUT_OF_RANGE: InvalidRequest,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.NOT_FOUND: GameNotFound,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.ABORTED: StaleVersion,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.CANCELLED: Cancelled,
    grpc.StatusCode.DATA_LOSS: DataLoss,
}


def _error(code: grpc.StatusCode, reason: str, message: str, metadata: Mapping[str, str] | None = None
           ) -> GostopError:
    cls = _BY_REASON.get(reason) or _BY_CODE.get(code, InternalError)
    if not issubclass(cls, _BY_CODE.get(code, GostopError)):  # a reason under an unexpected code
        cls = _BY_CODE.get(code, InternalError)
    return cls(code, reason, message, metadata)


def error_from_rpc(error: grpc.RpcError) -> GostopError:
    """The typed error of a failed call (sync or aio), from its ``google.rpc.Status`` details
    (``grpc-status-details-bin``) when present, else from its code and message alone."""
    code = error.code() if callable(getattr(error, "code", None)) else grpc.StatusCode.UNKNOWN
    code = code if isinstance(code, grpc.StatusCode) else grpc.StatusCode.UNKNOWN
    message = error.details() if callable(getattr(error, "details", None)) else str(error)
    reason, metadata = "", {}
    try:
        status = rpc_status.from_call(error)
    except Exception:  # malformed details: keep the code and message
        status = None
    if status is not None:
        message = status.message or message
        for detail in status.details:
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info):
                reason, metadata = info.reason, dict(info.metadata)
                break
    return _error(code, reason, message or "", metadata)


def client_side_error(cls: type[GostopError], reason: str, message: str) -> GostopError:
    """An error found before calling (the same type the server would answer with)."""
    return cls(grpc.StatusCode.FAILED_PRECONDITION, reason, message + " (checked by the client)")
