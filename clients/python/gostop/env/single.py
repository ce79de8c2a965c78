"""The Gymnasium single-agent environment: one seat learns, the others are played by named bots.

It drives ``aec.GostopEnv``: the learner's observation and action mask are the AEC environment's
for its seat, and between two of the learner's decisions the other seats are played by bots built
with ``gostop.bots.make_bot`` (``"greedy"``, ``"random"``, ``"mcts:cpu_millis=50"``, a plugin...),
each given its seat's ``engine.View`` and legal actions, as in the arena.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal

import gymnasium
import numpy as np
from gymnasium import spaces
from numpy.typing import NDArray

from gostop.bots import Bot, make_bot
from gostop.engine import Rules, action_id, view

from .aec import GostopEnv, Observation, Reward, observation_space
from .observation import N_ACTIONS

IllegalAction = Literal["terminate", "raise"]
ILLEGAL_ACTIONS: Final = ("terminate", "raise")


class GostopGymEnv(gymnasium.Env[dict[str, Any], np.int64]):
    """One Go-Stop round per episode, from the seat ``seat`` (``None``: a seat drawn at each reset).

    ``opponents`` names the bot of each other seat, in seat order after the learner's (one name:
    the same bot everywhere). Observations are the AEC environment's (``{"observation",
    "action_mask"}``); the action is a stable action id (``Discrete(252)``); ``action_masks()``
    gives the mask as booleans (what maskable learners ask for). The reward is 0 until the round
    ends, then the learner's ``reward`` (``points`` or ``win_loss``, as in ``GostopEnv``).

    An action outside the mask ends the episode (``illegal_action="terminate"``, the default:
    reward ``illegal_reward``, ``info["illegal_action"]`` its id) or raises ``ValueError``
    (``"raise"``).

    ``reset(seed=s)`` deals ``engine.new_round(rules, s)`` and seeds the environment's generator,
    from which the opponents' seeds (and, with ``seat=None``, the learner's seat) are drawn, and
    the round seeds of later unseeded resets. A round in which the learner has no decision at all
    (a 총통 at the deal; with four players, a seat forced out with nothing to sell) is passed over
    for the next seed drawn. ``info`` of ``reset`` gives the ``round_seed`` dealt, the ``seat`` and
    how many deals were ``skipped``.
    """

    # (gymnasium.Env declares metadata an instance attribute: not a ClassVar here)
    metadata: dict[str, Any] = {"render_modes": ["human", "ansi"], "render_fps": 1}  # noqa: RUF012

    def __init__(
        self,
        preset: str = "standard",
        players: int | None = None,
        *,
        opponents: str | Sequence[str] = "greedy",
        seat: int | None = 0,
        rules: Rules | None = None,
        reward: Reward = "points",
        illegal_action: IllegalAction = "terminate",
        illegal_reward: float = -1.0,
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None")
        if illegal_action not in ILLEGAL_ACTIONS:
            raise ValueError(f"illegal_action must be one of {', '.join(ILLEGAL_ACTIONS)}, not {illegal_action!r}")
        self.game = GostopEnv(preset, players, rules=rules, reward=reward)
        n = self.game.rules.players
        if seat is not None and not 0 <= seat < n:
            raise ValueError(f"seat must be in 0-{n - 1} or None, not {seat}")
        specs = [opponents] * (n - 1) if isinstance(opponents, str) else list(opponents)
        if len(specs) != n - 1:
            raise ValueError(f"{n - 1} opponents needed at {n} seats, got {len(specs)}")
        for spec in specs:
            make_bot(spec)  # a bad spec fails here, not at the first reset
        self.opponents: tuple[str, ...] = tuple(specs)
        self.fixed_seat = seat
        self.seat = seat if seat is not None else 0
        """The learner's seat in the current round."""
        self.illegal_action: IllegalAction = illegal_action
        self.illegal_reward = float(illegal_reward)
        self.render_mode = render_mode
        self.observation_space = observation_space()
        self.action_space = spaces.Discrete(N_ACTIONS)
        self._bots: dict[int, Bot] = {}
        self._done = True

    @property
    def agent(self) -> str:
        """The learner's agent name in the AEC environment."""
        return self.game.possible_agents[self.seat]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        super().reset(seed=seed)
        rng = self.np_random
        n = self.game.rules.players
        round_seed = seed if seed is not None else int(rng.integers(1 << 63))
        skipped = 0
        while True:
            self.seat = self.fixed_seat if self.fixed_seat is not None else int(rng.integers(n))
            others = [(self.seat + k) % n for k in range(1, n)]
            seeds = [int(rng.integers(1 << 31)) for _ in others]
            self._bots = {s: make_bot(spec, seed=b) for s, spec, b in zip(others, self.opponents, seeds, strict=True)}
            self.game.reset(seed=round_seed)
            skipped += self.game.skipped_deals
            self._play_opponents()
            if not self._over:
                break
            skipped += 1
            round_seed = int(rng.integers(1 << 63))
        self._done = False
        return self._observe(), {"round_seed": self.game.round_seed, "seat": self.seat, "skipped": skipped}

    def step(self, action: Any) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        if self._done:
            raise RuntimeError("the round is over: reset() the environment")
        ident = int(action)
        if ident not in self.game.legal_action_ids():
            if self.illegal_action == "raise":
                raise ValueError(f"{ident} is not a legal action: legal ids are {self.game.legal_action_ids()}")
            self._done = True
            return self._observe(), self.illegal_reward, True, False, {"illegal_action": ident}
        self.game.step(ident)
        self._play_opponents()
        if self._over:
            self._done = True
            return self._observe(), float(self.game.rewards[self.agent]), True, False, dict(self.game.infos[self.agent])
        return self._observe(), 0.0, False, False, {}

    def action_masks(self) -> NDArray[np.bool_]:
        """The legal actions as a boolean mask over the action ids (none once the episode is over)."""
        mask = np.zeros(N_ACTIONS, dtype=np.bool_)
        if not self._done:
            mask[self.game.legal_action_ids()] = True
        return mask

    def render(self) -> str | None:
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode: GostopGymEnv(render_mode='ansi' or 'human')")
            return None
        text = self.game.render_text()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    # ---------------------------------------------------------------------- internals

    @property
    def _over(self) -> bool:
        return self.game.terminations[self.agent]

    def _observe(self) -> Observation:
        obs = self.game.observe(self.agent)
        if self._done:
            obs["action_mask"][:] = 0
        return obs

    def _play_opponents(self) -> None:
        """Let the bots play until the learner's decision or the end of the round."""
        game = self.game
        while not self._over and game.agent_selection != self.agent:
            seat = game.seat_of(game.agent_selection)
            legal = game.legal_actions()
            chosen = self._bots[seat].choose(view(game.round_state(), seat), legal)
            if chosen not in legal:
                raise ValueError(f"bot {self._bots[seat].name} chose an illegal action {chosen!r}")
            game.step(action_id(chosen))
