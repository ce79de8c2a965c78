"""Service errors, split by cause, and the one place that maps them to gRPC statuses.

Every failure of a call ends in ``to_status``: a ``grpc.StatusCode``, a message that
never names a hidden card, and ``google.rpc.Status`` details carrying an ``ErrorInfo``
(reason, domain ``gostop.v1``, metadata such as the current version).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from gostop.engine import (
    CorruptSnapshot,
    IllegalAction,
    InvalidDeal,
    InvalidRules,
    MalformedAction,
    NotYourTurn,
    RoundOver,
)

from .store_api import StoreCorrupt, StoreOutcomeUnknown, StoreUnavailable

DOMAIN = "gostop.v1"


@dataclass
class ServiceError(Exception):
    """A failure with a gRPC code, a stable reason and safe metadata."""

    code: grpc.StatusCode
    reason: str
    message: str
    metadata: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.message


def invalid(reason: str, message: str, **metadata: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, reason, message, metadata)


def not_found(game_id: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.NOT_FOUND, "GAME_NOT_FOUND", "no such game (or it expired)",
                        {"game_id": game_id})


def unauthenticated(message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.UNAUTHENTICATED, "BAD_CREDENTIALS", message)


def denied(reason: str, message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.PERMISSION_DENIED, reason, message)


def precondition(reason: str, message: str, **metadata: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.FAILED_PRECONDITION, reason, message, metadata)


def stale(current: int, expected: int) -> ServiceError:
    if expected == 0:  # proto3 cannot tell a left-out expected_version from 0
        message = (f"the game is at version {current}, not 0: expected_version is required (the version of "
                   "the view the action was chosen from); re-read the game and choose again")
    else:
        message = f"the game is at version {current}, not {expected}: re-read it and choose again"
    return ServiceError(
        grpc.StatusCode.ABORTED,
        "STALE_VERSION",
        message,
        {"current_version": str(current), "expected_version": str(expected)},
    )


def classify(exc: BaseException) -> ServiceError:
    """The service error for any exception a call may raise."""
    if isinstance(exc, ServiceError):
        return exc
    if isinstance(exc, (MalformedAction, InvalidRules, InvalidDeal)):
        meta = {"field": exc.field} if isinstance(exc, InvalidRules) else {}
        return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, exc.reason, str(exc), meta)
    if isinstance(exc, RoundOver):
        return precondition("ROUND_OVER", str(exc))
    if isinstance(exc, NotYourTurn):
        return precondition("NOT_YOUR_TURN", str(exc))
    if isinstance(exc, IllegalAction):
        return precondition(exc.code if exc.code != "ILLEGAL_ACTION" else exc.reason, str(exc))
    if isinstance(exc, StoreOutcomeUnknown):
        return ServiceError(
            grpc.StatusCode.UNAVAILABLE, "STORE_TIMEOUT",
            "the game store did not answer in time: the request may have been applied; "
            "retry it with the same request_id to learn its outcome", {"outcome": "unknown"})
    if isinstance(exc, StoreUnavailable):
        return ServiceError(grpc.StatusCode.UNAVAILABLE, "STORE_UNAVAILABLE",
                            "the game store is unreachable: the request was not applied", {"outcome": "not_applied"})
    if isinstance(exc, (StoreCorrupt, CorruptSnapshot)):
        return ServiceError(grpc.StatusCode.DATA_LOSS, "SNAPSHOT_CORRUPT", "the stored game cannot be decoded")
    return ServiceError(grpc.StatusCode.INTERNAL, "INTERNAL", "internal error")


def to_status(err: ServiceError) -> grpc.Status:
    """The gRPC status (with ``google.rpc.Status`` details) of a service error."""
    info = error_details_pb2.ErrorInfo(reason=err.reason, domain=DOMAIN, metadata=err.metadata)
    detail = any_pb2.Any()
    detail.Pack(info)
    status = status_pb2.Status(
        code=getattr(code_pb2, err.code.name, code_pb2.UNKNOWN), message=err.message, details=[detail]
    )
    return rpc_status.to_status(status)
