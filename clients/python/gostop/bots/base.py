"""The bot interface: given a seat's view and its legal actions, return an action.

A bot sees exactly what its seat may see (``engine.View``), never the hidden cards, so
the same bot plays in-process against the engine or through the service.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from gostop.engine import Action, View


class Bot(Protocol):
    """A player program."""

    name: str
    """Short name shown in reports (``random``, ``greedy``, ``mcts``...)."""

    def choose(self, view: View, legal: Sequence[Action]) -> Action:
        """Pick one of ``legal`` (never empty) for the seat ``view.viewer``."""
        ...


class Cancellable(Protocol):
    """A bot whose decision can be stopped: ``cancel()``, called from another thread (a bot seat's
    worker calls it once the decision is past its deadline), makes ``choose`` return soon with the
    best it has. A bot without it keeps working until it returns, with nobody waiting for it."""

    def cancel(self) -> None: ...
