"""Engine errors, split by cause so callers can map them to precise responses."""

from __future__ import annotations


class EngineError(Exception):
    """Base class of every error the engine raises on purpose."""

    reason: str = "ENGINE_ERROR"


class InvalidRules(EngineError, ValueError):
    """A rules object (or override) is impossible; names the offending field."""

    reason = "INVALID_RULES"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class InvalidDeal(EngineError, ValueError):
    """An explicit deal is not a valid deal for the rules (wrong cards or sizes)."""

    reason = "INVALID_DEAL"


class MalformedAction(EngineError, ValueError):
    """An action is not well formed (unknown id, card out of range, wrong type)."""

    reason = "MALFORMED_ACTION"


class IllegalAction(EngineError):
    """A well-formed action that the rules forbid in this state; says precisely why."""

    reason = "ILLEGAL_ACTION"

    def __init__(self, message: str, *, code: str = "ILLEGAL_ACTION") -> None:
        super().__init__(message)
        self.code = code


class NotYourTurn(IllegalAction):
    """The acting seat is not the seat to move."""

    reason = "NOT_YOUR_TURN"


class RoundOver(IllegalAction):
    """The round has ended; nothing more can be applied to it."""

    reason = "ROUND_OVER"


class CorruptSnapshot(EngineError, ValueError):
    """Serialized state bytes that cannot be decoded (bad version or content)."""

    reason = "CORRUPT_SNAPSHOT"
