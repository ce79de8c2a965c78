"""A uniformly random player: the floor every other bot must beat."""

from __future__ import annotations

import random
from collections.abc import Sequence

from gostop.engine import Action, View


class RandomBot:
    """Chooses uniformly among the legal actions with its own ``random.Random(seed)``."""

    def __init__(self, seed: int = 0) -> None:
        self.name = "random"
        self._rng = random.Random(seed)

    def choose(self, view: View, legal: Sequence[Action]) -> Action:
        if not legal:
            raise ValueError("no legal action to choose from")
        return legal[self._rng.randrange(len(legal))]
