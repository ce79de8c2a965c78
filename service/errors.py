"""Service errors: a code, a stable reason, a message that never names a hidden card, and safe
metadata (such as the current version). ``classify`` is the one place any exception of a call
becomes such an error; ``status`` turns one into what a transport sends. Nothing here is gRPC's.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

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


class Code(enum.Enum):
    """The outcome of a call, with the names and numbers gRPC and Connect share (google.rpc.Code)."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16


@dataclass
class ServiceError(Exception):
    """A failure with a code, a stable reason and safe metadata."""

    code: Code
    reason: str
    message: str
    metadata: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.message


def invalid(reason: str, message: str, **metadata: str) -> ServiceError:
    return ServiceError(Code.INVALID_ARGUMENT, reason, message, metadata)


def not_found(game_id: str) -> ServiceError:
    return ServiceError(Code.NOT_FOUND, "GAME_NOT_FOUND", "no such game (or it expired)",
                        {"game_id": game_id})


def unauthenticated(message: str) -> ServiceError:
    return ServiceError(Code.UNAUTHENTICATED, "BAD_CREDENTIALS", message)


def denied(reason: str, message: str) -> ServiceError:
    return ServiceError(Code.PERMISSION_DENIED, reason, message)


def precondition(reason: str, message: str, **metadata: str) -> ServiceError:
    return ServiceError(Code.FAILED_PRECONDITION, reason, message, metadata)


def stale(current: int, expected: int) -> ServiceError:
    if expected == 0:  # proto3 cannot tell a left-out expected_version from 0
        message = (f"the game is at version {current}, not 0: expected_version is required (the version of "
                   "the view the action was chosen from); re-read the game and choose again")
    else:
        message = f"the game is at version {current}, not {expected}: re-read it and choose again"
    return ServiceError(
        Code.ABORTED,
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
        return ServiceError(Code.INVALID_ARGUMENT, exc.reason, str(exc), meta)
    if isinstance(exc, RoundOver):
        return precondition("ROUND_OVER", str(exc))
    if isinstance(exc, NotYourTurn):
        return precondition("NOT_YOUR_TURN", str(exc))
    if isinstance(exc, IllegalAction):
        return precondition(exc.code if exc.code != "ILLEGAL_ACTION" else exc.reason, str(exc))
    if isinstance(exc, StoreOutcomeUnknown):
        return ServiceError(
            Code.UNAVAILABLE, "STORE_TIMEOUT",
            "the game store did not answer in time: the request may have been applied; "
            "retry it with the same request_id to learn its outcome", {"outcome": "unknown"})
    if isinstance(exc, StoreUnavailable):
        return ServiceError(Code.UNAVAILABLE, "STORE_UNAVAILABLE",
                            "the game store is unreachable: the request was not applied", {"outcome": "not_applied"})
    if isinstance(exc, (StoreCorrupt, CorruptSnapshot)):
        return ServiceError(Code.DATA_LOSS, "SNAPSHOT_CORRUPT", "the stored game cannot be decoded")
    return ServiceError(Code.INTERNAL, "INTERNAL", "internal error")
