"""The PettingZoo AEC environment: one Go-Stop round per episode, every seat an agent.

The round runs on the engine's fast path, ``engine.Playout``: the rules of ``apply`` applied in
place, with no events and no frozen copy per step; the observation of a seat is computed from the
live position by ``observation.Encoder`` and equals the encoding of the seat's ``engine.View``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final, Literal

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from numpy.typing import NDArray
from pettingzoo import AECEnv

from gostop.engine import (
    SPECTATOR,
    Action,
    MalformedAction,
    Playout,
    Rules,
    Settlement,
    State,
    View,
    action_from_id,
    action_id,
    new_round,
    view,
)
from gostop.engine.render import settlement_text, state_text
from gostop.engine.state import Phase

from .observation import N_ACTIONS, OBS_HIGH, OBS_SIZE, Encoder, action_ids


def _action_or_none(ident: int) -> Action | None:
    try:
        return action_from_id(ident)
    except MalformedAction:
        return None


_ACTIONS: Final = tuple(_action_or_none(i) for i in range(N_ACTIONS))
"""The action of each id (``None`` for ids no action has); actions are immutable, so one object each."""

Reward = Literal["points", "win_loss"]
REWARDS: Final = ("points", "win_loss")
Observation = dict[str, NDArray[Any]]


def observation_space() -> spaces.Dict:
    """The space of every agent's observation: ``observation`` (``OBS_SIZE`` float32, the layout of
    ``observation.LAYOUT``) and ``action_mask`` (``N_ACTIONS`` int8, 1 for each legal action id)."""
    return spaces.Dict({
        "observation": spaces.Box(low=0.0, high=OBS_HIGH, shape=(OBS_SIZE,), dtype=np.float32),
        "action_mask": spaces.Box(low=0, high=1, shape=(N_ACTIONS,), dtype=np.int8),
    })


def round_rewards(settlement: Settlement, active: list[bool], reward: Reward) -> list[float]:
    """Each seat's reward for a settled round: its net points (instant payments included), or with
    ``win_loss`` +1 for the winner and −1 shared by the losing seats that played (−1 each with two
    players), 0 to every seat in a draw (나가리) and to a seat sitting out. Both sum to zero.

    >>> from gostop.engine import Rules, Playout, new_round
    >>> p = Playout(new_round(Rules.preset("standard", players=3), seed=1)[0])
    >>> while not p.over:
    ...     p.apply(p.legal_actions()[0])
    >>> s = p.state().settlement
    >>> sum(round_rewards(s, [True] * 3, "points")), sum(round_rewards(s, [True] * 3, "win_loss"))
    (0.0, 0.0)
    """
    if reward == "points":
        return [float(p) for p in settlement.points]
    out = [0.0] * len(settlement.points)
    if settlement.winner >= 0:
        losers = [i for i, playing in enumerate(active) if playing and i != settlement.winner]
        out[settlement.winner] = 1.0
        for i in losers:
            out[i] = -1.0 / len(losers)
    return out


class GostopEnv(AECEnv):
    """A Go-Stop round as a PettingZoo AEC environment (agents ``seat_0`` … ``seat_{n-1}``).

    ``preset`` and ``players`` name the rules (``engine.Rules.preset``; ``rules`` gives a whole
    ``Rules`` object instead). ``observe(agent)`` returns ``{"observation", "action_mask"}``: what
    that seat may know (``gostop.env``'s docstring lists the layout) and, for the agent to move, 1
    for each legal stable action id (``engine.action_id``; zeros for the others). ``step`` takes a
    legal action id (an int or a NumPy integer); any other raises ``ValueError``.

    Rewards come when the round ends, all at once: ``reward="points"`` (the default) each seat's
    net settlement points, ``"win_loss"`` +1/0/−1 (see ``round_rewards``); both are zero-sum. Then
    every agent is terminated and steps ``None`` once to leave, as PettingZoo's API has it.

    ``reset(seed=s)`` deals ``engine.new_round(rules, s)``: the same deal as the engine, the arena
    and ``gostop tournament`` give that seed. ``reset()`` without a seed deals from a seed drawn from
    the environment's generator (seeded by the last explicit seed, otherwise by the system's
    entropy), so a seeded reset followed by unseeded ones replays identically. A deal that ends the
    round at once (총통, in the presets that have it: nobody has a decision) is passed over for the
    next seed the generator draws (``round_seed`` is the seed dealt, ``skipped_deals`` counts them).
    ``options`` are accepted and not read.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "name": "gostop_v0", "render_modes": ["human", "ansi"], "render_fps": 1, "is_parallelizable": False,
    }

    def __init__(
        self,
        preset: str = "standard",
        players: int | None = None,
        *,
        rules: Rules | None = None,
        reward: Reward = "points",
        render_mode: str | None = None,
    ) -> None:
        super().__init__()
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {', '.join(REWARDS)}, not {reward!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None")
        self.rules: Rules = rules if rules is not None else Rules.preset(preset, players=players)
        self.reward: Reward = reward
        self.render_mode = render_mode
        n = self.rules.players
        self.possible_agents: list[str] = [f"seat_{i}" for i in range(n)]
        self.agents: list[str] = []
        self._seat = {a: i for i, a in enumerate(self.possible_agents)}
        self.observation_spaces = {a: observation_space() for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(N_ACTIONS) for a in self.possible_agents}
        self.rewards: dict[str, float] = {}
        self._cumulative_rewards: dict[str, float] = {}
        self.terminations: dict[str, bool] = {}
        self.truncations: dict[str, bool] = {}
        self.infos: dict[str, dict[str, Any]] = {}
        self.agent_selection = self.possible_agents[0]
        self._np_random: np.random.Generator | None = None
        self._np_random_seed: int | None = None
        self.round_seed = -1
        """The seed of the round dealt by the last ``reset`` (``engine.new_round``'s)."""
        self.skipped_deals = 0
        """Deals the last ``reset`` passed over because they ended the round at once (총통)."""
        self._encoder = Encoder(n, self.rules.deck_size, self.rules.go_threshold)
        self._playout: Playout | None = None
        self._legal: list[Action] = []
        self._legal_bits = 0
        """Bit ``i`` set for each legal action id ``i`` of the agent to move."""

    # ---------------------------------------------------------------------- PettingZoo API

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: Mapping[str, Any] | None = None) -> None:
        if seed is not None:
            # The generator is made when a draw needs it (making one costs more than a deal).
            self._np_random, self._np_random_seed = None, seed
        self.round_seed = seed if seed is not None else int(self.np_random.integers(1 << 63))
        state, _ = new_round(self.rules, self.round_seed)
        self.skipped_deals = 0
        while state.over:  # a 총통 at the deal: nobody has a decision to make
            self.skipped_deals += 1
            self.round_seed = int(self.np_random.integers(1 << 63))
            state, _ = new_round(self.rules, self.round_seed)
        self._playout = Playout(state)
        self._encoder.reset()
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        self._refresh()

    def observe(self, agent: str) -> Observation:
        legal = self._legal_bits if agent == self.agent_selection else 0
        obs, mask = self._encoder.observe(self._running(), self._seat[agent], legal)
        return {"observation": obs, "action_mask": mask}

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        playout = self._running()
        try:
            ident = int(action)
        except (TypeError, ValueError):
            ident = -1
        if not 0 <= ident < N_ACTIONS or not self._legal_bits >> ident & 1:
            raise ValueError(f"{action!r} is not a legal action of {agent}: legal ids are {self.legal_action_ids()}")
        self._cumulative_rewards[agent] = 0.0
        chosen = _ACTIONS[ident]
        assert chosen is not None
        playout.apply(chosen)
        if playout.over:
            self._finish()
        else:
            self._refresh()

    def render(self) -> str | None:
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode: GostopEnv(render_mode='ansi' or 'human')")
            return None
        text = self.render_text()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Nothing to release."""

    # ------------------------------------------------------------------ beyond the API

    @property
    def np_random(self) -> np.random.Generator:
        """The environment's generator: seeded by the last ``reset(seed=...)`` (by the system's
        entropy before any), it draws the seeds of unseeded resets."""
        if self._np_random is None:
            self._np_random, _ = seeding.np_random(self._np_random_seed)
        return self._np_random

    def render_text(self) -> str:
        """The table as a spectator sees it (no hand shown), and the settlement once it is over."""
        state = self.round_state()
        text = state_text(state, SPECTATOR)
        if state.settlement is not None:
            text += "\n" + settlement_text(state.settlement)
        return text

    def seat_of(self, agent: str) -> int:
        return self._seat[agent]

    def round_state(self) -> State:
        """The whole round as a frozen ``engine.State``: every hand and the stock included, for tools
        and tests (an agent's view is ``view_of``)."""
        return self._running().state()

    def view_of(self, agent: str) -> View:
        """What ``agent``'s seat may know, as the engine's ``View`` (what bots take)."""
        return view(self.round_state(), self._seat[agent])

    def legal_actions(self) -> list[Action]:
        """The legal actions of the agent to move (empty once the round is over)."""
        return list(self._legal)

    def legal_action_ids(self) -> list[int]:
        """Their stable ids, ascending."""
        return action_ids(self._legal)

    @property
    def settlement(self) -> Settlement | None:
        """The round's settlement once it is over."""
        return self._running().position.settlement

    # ---------------------------------------------------------------------- internals

    def _running(self) -> Playout:
        if self._playout is None:
            raise RuntimeError("reset() the environment before using it")
        return self._playout

    def _refresh(self) -> None:
        """The legal actions of the seat to move, and their ids as the bits of one integer."""
        playout = self._running()
        work = playout.position
        legal = self._legal = playout.legal_actions()
        if work.phase is Phase.PLAY:
            # Every hand card may be played: the first actions are their plain plays, whose ids are
            # the cards (ids ascend); 흔들기, 폭탄 and 빈 내기 follow.
            hand = work.seats[work.to_move].hand
            bits = self._encoder.hand_mask(work.to_move, hand)
            for a in legal[len(hand):]:
                bits |= 1 << action_id(a)
        else:
            bits = 0
            for a in legal:
                bits |= 1 << action_id(a)
        self._legal_bits = bits
        self.agent_selection = self.possible_agents[work.to_move]

    def _finish(self) -> None:
        work = self._running().position
        settlement = work.settlement
        assert settlement is not None
        active = [s.active for s in work.seats]
        rewards = round_rewards(settlement, active, self.reward)
        self._legal, self._legal_bits = [], 0
        for agent, seat in self._seat.items():
            self.rewards[agent] = rewards[seat]
            self.terminations[agent] = True
            self.infos[agent] = {
                "points": settlement.points[seat], "winner": settlement.winner, "outcome": settlement.outcome,
            }
        self._accumulate_rewards()


def env(**kwargs: Any) -> GostopEnv:
    """``GostopEnv(**kwargs)``: PettingZoo's conventional constructor name (the environment checks
    its own use, so it needs none of PettingZoo's wrappers)."""
    return GostopEnv(**kwargs)


raw_env = env
