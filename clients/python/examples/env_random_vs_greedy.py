"""Random against greedy through the PettingZoo environment: 1,000 rounds of `standard`, 2 players.

Nothing is trained: seat by seat, the agent to move reads its observation's action mask; the random
player picks a legal action id uniformly, the greedy bot (``gostop.bots``) is handed its seat's
``View`` and plays its choice's id. Each deal is played twice with the players' seats swapped
(duplicate deals, as in the arena). Prints wins, draws and losses with a 95% Wilson interval of the
random player's share of the decided rounds, and the mean points per round.

    python clients/python/examples/env_random_vs_greedy.py [--rounds 1000] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Sequence

from gostop.bots import make_bot
from gostop.bots.arena import wilson
from gostop.engine import action_id
from gostop.env import GostopEnv


def play(rounds: int, seed: int) -> dict[str, float]:
    """Play ``rounds`` rounds (deals ``seed``, ``seed`` + 1, ..., each twice with the seats swapped);
    the random player's wins, draws, losses and points, and the greedy bot's points."""
    env = GostopEnv("standard", players=2)
    chooser = random.Random(seed)
    greedy = make_bot("greedy")
    out = {"rounds": 0, "wins": 0, "draws": 0, "losses": 0, "random_points": 0.0, "greedy_points": 0.0}
    for r in range(rounds):
        random_agent = f"seat_{r % 2}"
        env.reset(seed=seed + r // 2)
        for agent in env.agent_iter():
            obs, reward, terminated, truncated, info = env.last()
            if terminated or truncated:
                if agent == random_agent:
                    out["random_points"] += reward
                    winner = info["winner"]
                    key = "draws" if winner < 0 else "wins" if winner == env.seat_of(agent) else "losses"
                    out[key] += 1
                else:
                    out["greedy_points"] += reward
                env.step(None)
            elif agent == random_agent:
                legal = obs["action_mask"].nonzero()[0]
                env.step(int(legal[chooser.randrange(len(legal))]))
            else:
                env.step(action_id(greedy.choose(env.view_of(agent), env.legal_actions())))
        out["rounds"] += 1
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="random against greedy through gostop.env (PettingZoo AEC)")
    parser.add_argument("--rounds", type=int, default=1000, help="rounds to play (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="the first deal's seed (default 0)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    r = play(args.rounds, args.seed)
    elapsed = time.perf_counter() - start
    decided = int(r["wins"] + r["losses"])
    low, high = wilson(int(r["wins"]), decided)
    share = r["wins"] / decided if decided else 0.0
    print(f"{int(r['rounds'])} rounds of standard (2 players) through the PettingZoo environment in {elapsed:.1f} s")
    print(f"random: {int(r['wins'])} wins, {int(r['draws'])} draws, {int(r['losses'])} losses; "
          f"share of decided rounds {share:.1%} (95% CI {low:.1%}-{high:.1%})")
    print(f"mean points per round: random {r['random_points'] / r['rounds']:+.2f}, "
          f"greedy {r['greedy_points'] / r['rounds']:+.2f}")


if __name__ == "__main__":
    main()
