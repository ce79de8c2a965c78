"""Research environments: Go-Stop as a PettingZoo AEC environment and a Gymnasium single-agent one.

(The ``[research]`` extra installs PettingZoo, Gymnasium and NumPy, and OpenSpiel for
``gostop.env.openspiel``: ``pip install 'gostop[research]'``.)

- ``GostopEnv`` (``gostop.env.aec``): one round per episode, every seat an agent (``seat_0`` …), for
  every preset and table size (``GostopEnv("classic", players=4)``), on the engine's fast path.
- ``GostopGymEnv`` (``gostop.env.single``): one seat learns, the others are played by named bots
  (``GostopGymEnv("standard", opponents="greedy")``), also made by
  ``gymnasium.make("gostop/GoStop-v0", ...)`` with the same arguments.

>>> e = GostopEnv("standard")
>>> e.reset(seed=7)
>>> obs, reward, terminated, truncated, info = e.last()
>>> e.agent_selection, obs["observation"].shape, int(obs["action_mask"].sum())
('seat_1', (878,), 10)
>>> e.step(e.legal_action_ids()[0])

Observation (``observe(agent)``): a dict with ``observation``, a float32 vector of
``OBS_SIZE`` = 878 entries, and ``action_mask``, 252 int8 entries, 1 for each legal stable action
id of the agent to move (``engine.action_id``: a card id plays that card, 64 + card plays it with
흔들기, 128 + month bombs, 160 + card chooses that floor card, 230/231 go/stop...; all zeros for
the agents not to move). The vector holds only what the seat may know (the engine's ``View`` of
it: never another seat's hidden hand, never the stock's order). Seats are counted relative to the
observer: seat +0 is the observer, seat +k the one k places after it in seat (turn) order; the
slots of seats a smaller table lacks are zero, so every table size has the same shape. Every
entry lies between 0 and its max (the observation space's bounds); counts are raw, not scaled.

| entries | name | max | meaning |
|---|---|---|---|
| 0–50 | `hand` | 1 | card plane: the observer's hand |
| 51–101 | `floor` | 1 | card plane: the floor |
| 102–305 | `pile` | 1 | 4 card planes, seat +k's at +51k: its captured pile |
| 306–509 | `shown` | 1 | 4 card planes, seat +k's at +51k: cards of its hand shown by 흔들기 |
| 510–713 | `played` | 1 | 4 card planes, seat +k's at +51k: cards it played from its hand (a 폭탄's three) |
| 714–764 | `pending` | 1 | card plane: the turn's face-up cards in transit (held, played or flipped) |
| 765–815 | `unseen` | 1 | card plane: cards the observer cannot place (other hands, the stock) |
| 816–819 | `present` | 1 | flag per seat (k = 0-3 in every per-seat block): the table has seat +k |
| 820–823 | `active` | 1 | flag per seat: seat +k plays this round (4 players: not sitting out) |
| 824–827 | `dealer` | 1 | flag per seat: seat +k is the 선 (plays first) |
| 828–831 | `to_move` | 1 | flag per seat: seat +k's decision is pending |
| 832–839 | `phase` | 1 | one-hot: sit_out, gwang_sale, play, choose_hand, choose_flip, gukjin, go_stop, over |
| 840–842 | `gukjin` | 1 | one-hot, 국진 (card 32): open, kept, converted |
| 843 | `carry` | 1 | flag: the round counts ×2 (after a 나가리) |
| 844–847 | `hand_size` | 51 | count per seat: cards in seat +k's hand |
| 848–851 | `score` | 1000 | per seat: seat +k's base score (the points of its pile) |
| 852–855 | `gos` | 51 | count per seat: gos (고) seat +k declared |
| 856–859 | `go_base` | 1000 | per seat: seat +k's base score at its last go (it may go or stop again only above it) |
| 860–863 | `shakes` | 12 | count per seat: months seat +k shook (흔들기) |
| 864–867 | `bombs` | 12 | count per seat: months seat +k bombed (폭탄) |
| 868–871 | `ppeok` | 51 | count per seat: 뻑 seat +k made |
| 872–875 | `spare_flips` | 51 | count per seat: seat +k's 빈 내기 (flip-only turns) left |
| 876 | `stock` | 51 | count: cards left in the stock |
| 877 | `go_threshold` | 1,000,000 | the rules' base score from which a seat may stop or go |

The layout is ``observation.LAYOUT`` (``FIELDS[name].offset``); ``observation_of_view`` encodes
an ``engine.View`` (what a service client receives) into the same vector.

Rewards: zero until the round ends; then each seat's net settlement points (instant payments
included; ``reward="win_loss"``: +1 to the winner, −1 shared by the losing seats, 0 in a 나가리),
zero-sum either way.
"""

from __future__ import annotations

import gymnasium

from .aec import REWARDS, GostopEnv, env, observation_space, raw_env, round_rewards
from .observation import (
    FIELDS,
    LAYOUT,
    MAX_SEATS,
    N_ACTIONS,
    OBS_SIZE,
    Encoder,
    action_ids,
    action_mask,
    encode_state,
    layout_table,
    observation_of_view,
)
from .single import GostopGymEnv

GYM_ID = "gostop/GoStop-v0"
"""The Gymnasium id of ``GostopGymEnv`` (``gymnasium.make(GYM_ID, preset=..., opponents=...)``)."""

if GYM_ID not in gymnasium.registry:
    gymnasium.register(id=GYM_ID, entry_point="gostop.env.single:GostopGymEnv")

__all__ = [
    "FIELDS", "GYM_ID", "LAYOUT", "MAX_SEATS", "N_ACTIONS", "OBS_SIZE", "REWARDS", "Encoder", "GostopEnv",
    "GostopGymEnv", "action_ids", "action_mask", "encode_state", "env", "layout_table", "observation_of_view",
    "observation_space", "raw_env", "round_rewards",
]
