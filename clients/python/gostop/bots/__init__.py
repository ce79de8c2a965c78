"""Bots: the interface, the built-in players, and bots from anywhere (``gostop.bots.plugins``).

>>> make_bot("greedy").name, BOT_NAMES
('greedy', ('random', 'greedy', 'mcts'))
>>> make_bot("mcts:iterations=50", seed=3).name
'mcts'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from .base import Bot
from .greedy import GreedyBot
from .mcts import MctsBot
from .plugins import BotSpecError, parse_spec, registered_names, split_specs
from .plugins import make as _make
from .random_bot import RandomBot

BOT_NAMES: Final = ("random", "greedy", "mcts")
"""The built-in bots."""


def _simple(cls: Callable[[int], Bot], name: str) -> Callable[..., Bot]:
    def build(seed: int = 0, **options: Any) -> Bot:
        if options:
            raise BotSpecError(f"bot {name!r} takes no options, got {sorted(options)}")
        return cls(seed)

    return build


BUILTIN_BOTS: Final[dict[str, Callable[..., Bot]]] = {
    "random": _simple(RandomBot, "random"), "greedy": _simple(GreedyBot, "greedy"), "mcts": MctsBot,
}


def make_bot(spec: str, seed: int = 0, **options: Any) -> Bot:
    """Build a bot from its spec: a built-in name (``mcts`` takes ``iterations``, ``cpu_millis`` and
    its tuning options, see ``MctsBot``; ``random`` and ``greedy`` take none), ``module:attribute``,
    or a name registered in the ``gostop.bots`` entry-point group, each optionally followed by
    ``:key=value,...`` (see ``gostop.bots.plugins``). ``BotSpecError`` (a ``ValueError``) says why a
    spec builds no bot."""
    return _make(spec, seed, **options)


def check_bot(spec: str) -> None:
    """Build the bot of ``spec`` once, so that a command refuses a bad spec before it starts."""
    make_bot(spec)


__all__ = ["BOT_NAMES", "BUILTIN_BOTS", "Bot", "BotSpecError", "GreedyBot", "MctsBot", "RandomBot", "check_bot",
           "make_bot", "parse_spec", "registered_names", "split_specs"]
