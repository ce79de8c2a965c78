"""Bots: the interface, the registry, and the built-in players.

>>> make_bot("greedy").name, BOT_NAMES
('greedy', ('random', 'greedy', 'mcts'))
"""

from __future__ import annotations

from typing import Any, Final

from .base import Bot
from .greedy import GreedyBot
from .mcts import MctsBot
from .random_bot import RandomBot

BOT_NAMES: Final = ("random", "greedy", "mcts")
"""Names ``make_bot`` knows."""


def make_bot(name: str, seed: int = 0, **options: Any) -> Bot:
    """Build a bot by name. ``mcts`` takes ``iterations``, ``millis`` and its tuning options
    (see ``MctsBot``); ``random`` and ``greedy`` take none.
    """
    if name == "random":
        _no_options(name, options)
        return RandomBot(seed)
    if name == "greedy":
        _no_options(name, options)
        return GreedyBot(seed)
    if name == "mcts":
        return MctsBot(seed=seed, **options)
    raise ValueError(f"unknown bot {name!r}; known: {', '.join(BOT_NAMES)}")


def _no_options(name: str, options: dict[str, Any]) -> None:
    if options:
        raise ValueError(f"bot {name!r} takes no options, got {sorted(options)}")


__all__ = ["BOT_NAMES", "Bot", "GreedyBot", "MctsBot", "RandomBot", "make_bot"]
