"""Go-Stop as an OpenSpiel game (``python_gostop``), and OpenSpiel's own ISMCTS as a bot of ours.

Importing this module registers the game (``pyspiel.register_game``)::

    import pyspiel
    import gostop.env.openspiel  # registers python_gostop
    game = pyspiel.load_game("python_gostop(preset=classic,players=3)")

One game is one round; chance (the deal, every card the stock gives) is explicit, actions are the
engine's stable action ids, and a player's strings and tensors come from its ``engine.View``.
``IsmctsBot`` is OpenSpiel's ``ISMCTSBot`` under our bots' budget, a bot spec like any other
(``gostop.env.openspiel:IsmctsBot``). Parameters, chance, tensors and the bot: docs/research.md
("OpenSpiel").
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any, Final, cast

import numpy as np
import pyspiel  # type: ignore[import-not-found]  # OpenSpiel ships no type information
from open_spiel.python.algorithms import ismcts as os_ismcts  # type: ignore[import-untyped]
from open_spiel.python.algorithms import mcts as os_mcts

from gostop.bots.mcts import DEFAULT_CPU_MILLIS, Budget
from gostop.engine import (
    PRESET_PLAYERS,
    PRESETS,
    Action,
    Bomb,
    Deal,
    FlipOnly,
    Phase,
    PlayCard,
    Playout,
    Rules,
    State,
    View,
    action_from_id,
    cached_action_id,
    new_round,
    view,
)
from gostop.engine.cards import ALL_CARDS, CODE, MONTH, MONTH_CARDS
from gostop.engine.determinize import determinize
from gostop.engine.events import Redealt
from gostop.engine.render import action_label

__all__ = [
    "GAME_NAME", "NUM_ACTIONS", "SEAT_FIELDS", "GostopGame", "GostopState", "IsmctsBot", "Observer", "every_table",
    "load", "rules_of",
]

GAME_NAME: Final = "python_gostop"
NUM_ACTIONS: Final = 252
"""Action ids are the engine's stable ids, 0-251 (``engine.actions``)."""
PHASES: Final = (*Phase, "deal")
"""The phase one-hot of the tensors: the engine's phases, then the deal (chance only)."""
SEAT_FIELDS: Final = (
    "active", "hand_size", "score", "gos", "last_go_base", "shakes", "bombs", "multiplier", "spare_flips",
    "ppeok", "dry_turns", "sseul", "turns",
)
"""The per-seat numbers of the ``seats`` tensor piece, in order (``engine.views.SeatView``)."""
_PLAY_WIDTH: Final = ALL_CARDS + 12 + 2
"""One play in the ``plays`` piece: the card played (51), a 폭탄's month (12), 빈 내기, 흔들기."""
_CHANCE: Final = int(pyspiel.PlayerId.CHANCE)
_TERMINAL: Final = int(pyspiel.PlayerId.TERMINAL)
_NO_PENDING: Final = -1
_DEAL_PENDING: Final = -2
"""``_Core.pending`` while the deal's bonus cards wait for their replacements."""

_PARAMETERS: Final[dict[str, Any]] = {"preset": "standard", "players": 0, "returns": "points", "rules": ""}
_GAME_TYPE: Final = pyspiel.GameType(
    short_name=GAME_NAME,
    long_name="Go-Stop (고스톱), one round",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=4,
    min_num_players=2,
    provides_information_state_string=True,
    provides_information_state_tensor=True,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=_PARAMETERS,
)


def rules_of(params: dict[str, Any]) -> Rules:
    """The rules the game parameters name (``rules`` JSON, else ``preset`` and ``players``)."""
    text = str(params.get("rules") or "")
    if text:
        return Rules.from_dict(json.loads(text))
    preset = str(params.get("preset", "standard"))
    players = int(params.get("players", 0))
    return Rules.preset(preset, players=players or None)


def load(rules: Rules, returns: str = "points") -> GostopGame:
    """The game of any ``Rules`` (through ``pyspiel.load_game``, so that OpenSpiel knows it)."""
    game = pyspiel.load_game(GAME_NAME, {"rules": json.dumps(rules.to_dict()), "returns": returns})
    return cast(GostopGame, game)


def every_table() -> list[tuple[str, int]]:
    """Every preset and the table sizes it is described for (``engine.PRESET_PLAYERS``)."""
    return [(p, n) for p in PRESETS for n in sorted(PRESET_PLAYERS[p])]


class GostopGame(pyspiel.Game):  # type: ignore[misc]
    """One round of Go-Stop under one rule set (see the module for the parameters)."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        values = dict(_PARAMETERS, **(params or {}))
        rules = rules_of(values)
        returns = str(values["returns"])
        if returns not in ("points", "win_loss"):
            raise ValueError(f"returns must be points or win_loss, not {returns!r}")
        bound = float(rules.round_points_bound) if returns == "points" else 1.0
        # Decisions per seat's turn: the play, two capture choices, 국진 and go/stop; 4 players add
        # the sit-out answers and the 광 sale.
        length = rules.playing_seats * rules.hand_size * 5 + 4
        info = pyspiel.GameInfo(
            num_distinct_actions=NUM_ACTIONS, max_chance_outcomes=ALL_CARDS, num_players=rules.players,
            min_utility=-bound, max_utility=bound, utility_sum=0.0, max_game_length=length,
        )
        super().__init__(_GAME_TYPE, info, values)
        self.rules = rules
        self.win_loss = returns == "win_loss"
        self.max_plays = rules.playing_seats * rules.hand_size
        """Plays in a round at most: a seat's own turns never outnumber its hand's cards."""

    def new_initial_state(self) -> GostopState:
        """The state before the deal (a chance node)."""
        return GostopState(self)

    def state_at(self, position: State) -> GostopState:
        """A state at an engine position with its stock in the order given: every card is decided,
        so no chance node follows (a determinization; ``IsmctsBot``'s root). Its OpenSpiel
        history is empty."""
        if position.rules != self.rules:
            raise ValueError("the position is played under other rules than this game's")
        state = GostopState(self)
        core = state._core
        core.dealer = position.dealer
        core.place(Playout(position))
        core.prefix = list(position.stock)
        return state

    def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> Observer:
        """The observer of OpenSpiel's observation API (strings and tensors)."""
        if params:
            raise ValueError(f"observation parameters are not supported: {params}")
        return Observer(self, iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False))


class _Core:
    """The state's Python side: what OpenSpiel copies (``clone``) and pickles (``serialize``).

    ``prefix`` are the top cards of the stock that chance already chose and the rules did not
    take yet (top first); the rest of the engine's stock is in no particular order and is never
    read before chance orders it.
    """

    __slots__ = ("dealer", "dealt", "pending", "playout", "prefix", "rules", "win_loss", "work")

    def __init__(self, rules: Rules, win_loss: bool) -> None:
        self.rules = rules
        self.win_loss = win_loss
        self.dealer = -1 if rules.first_leader == "seeded" else 0
        self.dealt: list[int] = []
        """The deal so far: the floor's cards, then seat 0's hand, seat 1's, ..."""
        self.playout: Playout | None = None
        self.work: Any = None
        """The playout's live position (``Playout.position``)."""
        self.prefix: list[int] = []
        self.pending = _NO_PENDING
        """An action id waiting for its flip (or ``_DEAL_PENDING``)."""

    def __deepcopy__(self, memo: dict[int, Any]) -> _Core:
        other = _Core.__new__(_Core)
        other.rules, other.win_loss, other.dealer = self.rules, self.win_loss, self.dealer
        other.dealt, other.prefix, other.pending = list(self.dealt), list(self.prefix), self.pending
        other.place(None if self.playout is None else Playout(self.playout.state()))
        return other

    def place(self, playout: Playout | None) -> None:
        """Play on from ``playout`` (None: back to the deal)."""
        self.playout = playout
        self.work = None if playout is None else playout.position

    def __getstate__(self) -> dict[str, Any]:
        return {"rules": self.rules.to_dict(), "win_loss": self.win_loss, "dealer": self.dealer,
                "dealt": self.dealt, "prefix": self.prefix, "pending": self.pending,
                "position": None if self.playout is None else self.playout.state()}

    def __setstate__(self, data: dict[str, Any]) -> None:
        self.rules = Rules.from_dict(data["rules"])
        self.win_loss, self.dealer = data["win_loss"], data["dealer"]
        self.dealt, self.prefix, self.pending = data["dealt"], data["prefix"], data["pending"]
        self.place(None if data["position"] is None else Playout(data["position"]))


class GostopState(pyspiel.State):  # type: ignore[misc]
    """A round in progress: the deal, the engine's position, and the stock cards chance chose."""

    def __init__(self, game: GostopGame) -> None:
        super().__init__(game)
        self._core = _Core(game.rules, game.win_loss)

    # ------------------------------------------------------------------ OpenSpiel's State API

    def current_player(self) -> int:
        """The seat to move, ``CHANCE`` (deal, flips) or ``TERMINAL``."""
        core = self._core
        if core.pending != _NO_PENDING or core.playout is None:
            return _CHANCE
        w = core.work
        if w.phase is Phase.OVER:
            return _TERMINAL
        return int(w.to_move)

    def _legal_actions(self, player: int) -> list[int]:
        core = self._core
        assert core.playout is not None and player == core.playout.to_move
        return [cached_action_id(a) for a in core.playout.legal_actions()]

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """The dealer, the next card dealt, or the next card off the stock: uniform."""
        core = self._core
        if core.playout is None and core.pending == _NO_PENDING:
            if core.dealer < 0:
                n = core.rules.players
                return [(s, 1.0 / n) for s in range(n)]
            left = sorted(set(range(core.rules.deck_size)).difference(core.dealt))
        else:
            left = sorted(self._unordered())
        p = 1.0 / len(left)
        return [(c, p) for c in left]

    def _apply_action(self, action: int) -> None:
        core = self._core
        if core.playout is None and core.pending == _NO_PENDING:
            self._deal(action)
        elif core.pending != _NO_PENDING:
            core.prefix.append(action)
            self._go_on()
        else:
            self._act(action_from_id(action))

    def _action_to_string(self, player: int, action: int) -> str:
        core = self._core
        if player == pyspiel.PlayerId.CHANCE:
            if core.playout is None and core.pending == _NO_PENDING:
                if core.dealer < 0:
                    return f"dealer {action}"
                return f"deal {CODE[action]}"
            return f"stock {CODE[action]}"
        return action_label(action_from_id(action))

    def is_terminal(self) -> bool:
        core = self._core
        return core.playout is not None and core.pending == _NO_PENDING and core.playout.over

    def returns(self) -> list[float]:
        """Each seat's return: settlement points, or ±1 (``returns=win_loss``); 0 before the end."""
        core = self._core
        n = core.rules.players
        if not self.is_terminal():
            return [0.0] * n
        assert core.playout is not None
        w = core.work
        settlement = w.settlement
        if not core.win_loss:
            return [float(p) for p in settlement.points]
        winner = settlement.winner
        if winner < 0:
            return [0.0] * n
        active = [s for s in range(n) if w.seats[s].active]
        loss = -1.0 / (len(active) - 1)
        return [1.0 if s == winner else (loss if s in active else 0.0) for s in range(n)]

    def __str__(self) -> str:
        """The whole state (every hand and the chosen stock cards): for debugging, not for players."""
        core = self._core
        if core.playout is None:
            return f"deal dealer={core.dealer} dealt={' '.join(CODE[c] for c in core.dealt)}" + (
                f" stock-top={' '.join(CODE[c] for c in core.prefix)}" if core.prefix else "")
        s = core.playout.state()
        lines = [f"phase={s.phase.value} to_move={s.to_move} dealer={s.dealer} steps={s.steps}",
                 f"floor: {' '.join(CODE[c] for c in s.floor)}",
                 f"stock: {len(s.stock)} cards, chosen top: {' '.join(CODE[c] for c in core.prefix)}"]
        for i, seat in enumerate(s.seats):
            lines.append(f"seat {i}: hand {' '.join(CODE[c] for c in seat.hand)} | pile "
                         f"{' '.join(CODE[c] for c in seat.captured)} | gos {seat.gos}")
        if core.pending >= 0:
            lines.append(f"waiting for the stock: {action_label(action_from_id(core.pending))}")
        if s.settlement is not None:
            lines.append(f"settlement: {s.settlement.outcome} winner {s.settlement.winner} "
                         f"points {list(s.settlement.points)}")
        return "\n".join(lines)

    def resample_from_infostate(self, player: int, probability_sampler: Any) -> GostopState:
        """A state the player cannot tell from this one: the hidden cards (other hands, the stock
        order) drawn uniformly among those consistent with its view (``engine.determinize``)."""
        draw = probability_sampler() if callable(probability_sampler) else random.random()
        return self.resample(player, random.Random(int(float(draw) * (1 << 53))))

    # ------------------------------------------------------------------ ours

    @property
    def position(self) -> State | None:
        """The engine position (None during the deal); its stock's order beyond the cards chance
        chose means nothing."""
        core = self._core
        return None if core.playout is None else core.playout.state()

    def resample(self, player: int, rng: random.Random) -> GostopState:
        """``resample_from_infostate`` with our own generator; the whole stock order is drawn."""
        core = self._core
        if core.playout is None or core.pending != _NO_PENDING:
            raise pyspiel.SpielError("resampling is for decision nodes")
        game = cast(GostopGame, self.get_game())
        return game.state_at(determinize(view(core.playout.state(), player), rng))

    def view(self, player: int) -> View:
        """``engine.view`` of the position for ``player`` (not during the deal)."""
        core = self._core
        if core.playout is None:
            raise pyspiel.SpielError("no view during the deal")
        return view(core.playout.state(), player)

    def _unordered(self) -> list[int]:
        """The stock cards chance has not ordered yet (the undealt cards during the deal)."""
        core = self._core
        chosen = set(core.prefix)
        if core.playout is None:
            dealt = set(core.dealt)
            return [c for c in range(core.rules.deck_size) if c not in dealt and c not in chosen]
        return [c for c in core.work.stock if c not in chosen]

    def _needed(self, action: Action | None) -> int:
        """How many non-bonus stock cards the next step may take: a flip takes one (bonus cards
        flipped over come on top), each bonus card replaced takes one."""
        core = self._core
        if core.playout is None:
            return 0
        w = core.work
        phase = w.phase
        if phase is Phase.PLAY:
            if isinstance(action, PlayCard):
                month = MONTH[action.card]
                return 0 if sum(1 for c in w.floor if MONTH[c] == month) == 2 else 1
            return 1 if isinstance(action, (Bomb, FlipOnly)) else 0
        if phase is Phase.CHOOSE_HAND:
            return 1
        if phase is Phase.SIT_OUT or phase is Phase.GWANG_SALE:  # play begins: hands' bonus cards
            return sum(1 for seat in w.seats for c in seat.hand if c >= MONTH_CARDS)
        return 0

    def _ready(self, needed: int) -> bool:
        """Chance chose enough of the stock's top for a step that takes ``needed`` cards."""
        if needed <= 0:
            return True
        for c in self._core.prefix:
            if c < MONTH_CARDS:
                needed -= 1
                if not needed:
                    return True
        return not self._unordered()

    def _deal(self, outcome: int) -> None:
        core = self._core
        if core.dealer < 0:
            core.dealer = outcome
            return
        core.dealt.append(outcome)
        r = core.rules
        if len(core.dealt) == r.floor_size + r.players * r.hand_size:
            core.pending = _DEAL_PENDING
            self._go_on()

    def _deal_bonus_cards(self) -> int:
        core = self._core
        r = core.rules
        cards = core.dealt if r.players != 4 else core.dealt[:r.floor_size]
        return sum(1 for c in cards if c >= MONTH_CARDS)

    def _go_on(self) -> None:
        """Complete the pending deal or action once chance chose enough of the stock."""
        core = self._core
        if core.pending == _DEAL_PENDING:
            if not self._ready(self._deal_bonus_cards()):
                return
            core.pending = _NO_PENDING
            self._start_round()
            return
        action = action_from_id(core.pending)
        if not self._ready(self._needed(action)):
            return
        core.pending = _NO_PENDING
        self._step(action)

    def _start_round(self) -> None:
        core = self._core
        r = core.rules
        d, f, h = core.dealt, r.floor_size, r.hand_size
        hands = tuple(tuple(sorted(d[f + i * h:f + (i + 1) * h])) for i in range(r.players))
        stock = (*core.prefix, *self._unordered())
        state, events = new_round(r, 0, deal=Deal(hands, tuple(d[:f]), stock, core.dealer))
        if any(isinstance(e, Redealt) for e in events):  # the engine would deal again: so does chance
            core.dealt, core.prefix = [], []
            return
        core.place(Playout(state))
        self._consumed(len(stock) - len(state.stock))

    def _act(self, action: Action) -> None:
        if self._ready(self._needed(action)):
            self._step(action)
        else:
            self._core.pending = cached_action_id(action)

    def _step(self, action: Action) -> None:
        core = self._core
        assert core.playout is not None
        w = core.work
        if core.prefix:
            core.playout.order_stock(core.prefix)
        before = len(w.stock)
        core.playout.apply(action)
        self._consumed(before - len(w.stock))

    def _consumed(self, taken: int) -> None:
        core = self._core
        if taken > len(core.prefix):  # pragma: no cover - a card the rules took before chance chose it
            raise pyspiel.SpielError(f"the rules took {taken} stock cards; chance had chosen {len(core.prefix)}")
        del core.prefix[:taken]


class Observer:
    """OpenSpiel's observer (``make_py_observer``): a seat's observation or information state.

    ``iig_obs_type.perfect_recall`` adds the public history (the ``plays`` piece, the step
    count); ``private_info`` chooses whose hands are shown (the observer's by default; none;
    or every seat's, for analysis: the stock stays hidden in every case); without
    ``public_info`` only the ``player`` and ``hands`` pieces are there.
    """

    def __init__(self, game: GostopGame, iig_obs_type: Any) -> None:
        r = game.rules
        n = r.players
        self.perfect_recall = bool(iig_obs_type.perfect_recall)
        self.public = bool(iig_obs_type.public_info)
        private = iig_obs_type.private_info
        self.private_all = private == pyspiel.PrivateInfoType.ALL_PLAYERS
        self.private_own = private == pyspiel.PrivateInfoType.SINGLE_PLAYER or self.private_all
        pieces: list[tuple[str, tuple[int, ...]]] = [("player", (n,)), ("hands", (n, ALL_CARDS))]
        if self.public:
            pieces += [("floor", (ALL_CARDS,)), ("captured", (n, ALL_CARDS)), ("turn", (ALL_CARDS,)),
                       ("phase", (len(PHASES),)), ("to_move", (n,)), ("dealer", (n,)),
                       ("seats", (n, len(SEAT_FIELDS))), ("table", (6,))]
            if self.perfect_recall:
                pieces.append(("plays", (game.max_plays, n + _PLAY_WIDTH)))
        size = sum(int(np.prod(shape)) for _, shape in pieces)
        self.tensor = np.zeros(size, np.float32)
        self.dict: dict[str, np.ndarray[Any, Any]] = {}
        at = 0
        for name, shape in pieces:
            k = int(np.prod(shape))
            self.dict[name] = self.tensor[at:at + k].reshape(shape)
            at += k

    def set_from(self, state: GostopState, player: int) -> None:
        """Fill the tensor with ``state`` as ``player`` knows it."""
        self.tensor.fill(0.0)
        d = self.dict
        d["player"][player] = 1.0
        core = state._core
        if core.playout is None:
            self._set_deal(core, player)
            return
        v = view(core.playout.state(), player)
        hands = d["hands"]
        full = core.playout.state().seats if self.private_all else None
        for s in v.seats:
            if full is not None:
                cards: Sequence[int] = full[s.seat].hand
            elif s.seat == player and self.private_own:
                cards = s.hand
            else:
                cards = s.revealed
            hands[s.seat, list(cards)] = 1.0
        if not self.public:
            return
        d["floor"][list(v.floor)] = 1.0
        for s in v.seats:
            d["captured"][s.seat, list(s.captured)] = 1.0
            d["seats"][s.seat] = _seat_numbers(v, s.seat)
        ctx = v.turn
        if ctx is not None and v.phase is not Phase.OVER:
            turn = [*ctx.held]
            if v.phase is Phase.CHOOSE_HAND and ctx.card >= 0:
                turn.append(ctx.card)
            if v.phase is Phase.CHOOSE_FLIP and ctx.flipped >= 0:
                turn.append(ctx.flipped)
            d["turn"][turn] = 1.0
        d["phase"][PHASES.index(v.phase)] = 1.0
        if v.phase is not Phase.OVER:
            d["to_move"][v.to_move] = 1.0
        d["dealer"][v.dealer] = 1.0
        d["table"][:] = (v.stock_count, v.gukjin == "open", v.gukjin == "kept", v.gukjin == "converted",
                         v.carry, v.go_seq)
        if self.perfect_recall:
            plays = d["plays"]
            n = len(v.seats)
            for i, play in enumerate(v.plays[:len(plays)]):
                plays[i, play.seat] = 1.0
                a = action_from_id(play.action)
                if isinstance(a, PlayCard):
                    plays[i, n + a.card] = 1.0
                    if a.shake:
                        plays[i, n + ALL_CARDS + 13] = 1.0
                elif isinstance(a, Bomb):
                    plays[i, n + ALL_CARDS + a.month - 1] = 1.0
                else:
                    plays[i, n + ALL_CARDS + 12] = 1.0

    def _set_deal(self, core: _Core, player: int) -> None:
        d = self.dict
        r = core.rules
        f, h = r.floor_size, r.hand_size
        for seat in range(r.players):
            if self.private_all or (seat == player and self.private_own):
                d["hands"][seat, core.dealt[f + seat * h:f + (seat + 1) * h]] = 1.0
        if self.public:
            d["floor"][core.dealt[:f]] = 1.0
            d["phase"][PHASES.index("deal")] = 1.0
            if core.dealer >= 0:
                d["dealer"][core.dealer] = 1.0

    def string_from(self, state: GostopState, player: int) -> str:
        """``state`` as ``player`` knows it, as text (ISMCTS keys its nodes by this string)."""
        core = state._core
        if core.playout is None:
            r = core.rules
            f, h = r.floor_size, r.hand_size
            own = core.dealt[f + player * h:f + (player + 1) * h] if self.private_own else []
            return (f"p{player} deal dealer={core.dealer} floor={_codes(core.dealt[:f])} "
                    f"hand={_codes(sorted(own))}")
        position = core.playout.state()
        v = view(position, player)
        out = [f"p{player} {v.phase.value} to_move={v.to_move} dealer={v.dealer}"]
        if self.perfect_recall:
            out[0] += f" step={v.steps}"
        for s in v.seats:
            if self.private_all:
                cards: Sequence[int] = position.seats[s.seat].hand
            elif s.seat == player and self.private_own:
                cards = s.hand
            else:
                cards = s.revealed
            line = f"seat{s.seat} hand[{s.hand_size}]={_codes(cards)}"
            if self.public:
                line += (f" pile={_codes(s.captured)} active={int(s.active)} "
                         + " ".join(f"{k}={x:g}" for k, x in zip(SEAT_FIELDS[2:], _seat_numbers(v, s.seat)[2:],
                                                                 strict=True))
                         + f" ppeok_turns={list(s.ppeok_turns)} shaken={list(s.shakes)} bombed={list(s.bombs)}")
            out.append(line)
        if not self.public:
            return "\n".join(out)
        out.append(f"floor={_codes(sorted(v.floor))} stacks={[(st.month, st.maker) for st in v.stacks]} "
                   f"stock={v.stock_count} gukjin={v.gukjin} carry={int(v.carry)} go_seq={v.go_seq}")
        ctx = v.turn
        if ctx is not None and v.phase is not Phase.OVER:
            out.append(f"turn seat={ctx.seat} kind={ctx.kind} card={ctx.card} month={ctx.month} "
                       f"matched={ctx.matched} held={_codes(ctx.held)} flipped={ctx.flipped} "
                       f"taken={_codes(ctx.taken)} steals={list(ctx.steals)} last={int(ctx.last)}")
        if v.payments:
            out.append("payments=" + " ".join(f"{p.payer}>{p.payee}:{p.points}:{p.reason}" for p in v.payments))
        if self.perfect_recall and v.plays:
            out.append("plays=" + " ".join(f"{p.seat}:{p.action}" for p in v.plays))
        if v.settlement is not None:
            out.append(f"settlement={v.settlement.outcome} winner={v.settlement.winner} "
                       f"points={list(v.settlement.points)}")
        return "\n".join(out)


def _codes(cards: Sequence[int]) -> str:
    return ",".join(CODE[c] for c in cards) or "-"


def _seat_numbers(v: View, seat: int) -> tuple[float, ...]:
    s = v.seats[seat]
    return (float(s.active), float(s.hand_size), float(s.score.total), float(s.gos), float(s.last_go_base),
            float(len(s.shakes)), float(len(s.bombs)), float(s.multiplier), float(s.spare_flips), float(s.ppeok),
            float(s.dry_turns), float(s.sseul), float(s.turns))


# ------------------------------------------------------------------ the reference bot


class _BudgetedIsmcts(os_ismcts.ISMCTSBot):  # type: ignore[misc]
    """OpenSpiel's ``ISMCTSBot`` searching until a ``Budget`` is spent instead of a fixed number of
    simulations: upstream's ``run_search`` with its loop's bound replaced (everything else,
    selection, expansion, the evaluator and the final policy, is OpenSpiel's)."""

    def __init__(self, budget: Budget, **kwargs: Any) -> None:
        super().__init__(max_simulations=1 << 30, **kwargs)
        self.budget = budget
        self.simulations = 0

    def run_search(self, state: GostopState) -> list[tuple[int, float]]:
        self.reset()
        legal = state.legal_actions()
        if len(legal) == 1:
            return [(legal[0], 1.0)]
        self._root_node = self.create_new_node(state)
        done = 0
        while True:
            self.run_simulation(self.sample_root_state(state))
            done += 1
            # The first simulation only expands the root (no visit is counted there), and the final
            # policy needs one: a budget spent by then (one iteration, or a first simulation that
            # took half a CPU budget on a loaded machine) still gets the second.
            if self._root_node.total_visits > 0 and self.budget.spent(done):
                break
        self.simulations = done
        return cast(list[tuple[int, float]], self.get_final_policy(state, self._root_node))


_GAMES: dict[tuple[Rules, str], GostopGame] = {}


class IsmctsBot:
    """OpenSpiel's ISMCTS with random rollouts as a gostop bot (``gostop.bots.base.Bot``).

    Each decision: the bot's view becomes an OpenSpiel state (one world consistent with it),
    and ``ISMCTSBot`` searches it, drawing a new world for every simulation
    (``GostopState.resample``: the hidden cards uniformly among those consistent with the view,
    exactly what our ``mcts`` samples without its belief model). The budget is ``mcts``'s:
    ``cpu_millis`` of the thread's CPU time (default ``DEFAULT_CPU_MILLIS``, as ``mcts``),
    ``millis`` of wall-clock time, or ``iterations`` (simulations). ``uct_c``: UCT's
    exploration constant; ``returns``: what the search maximizes (``win_loss`` by default, the
    share of rounds won; or ``points``, then raise ``uct_c`` to the points' scale); ``rollouts``:
    random rollouts per leaf; ``final``: the final policy (``max_visit_count``,
    ``normalized_visited_count`` or ``max_value``). Deterministic for a seed and a view with an
    ``iterations`` budget.
    """

    def __init__(
        self,
        seed: int = 0,
        *,
        cpu_millis: float | None = None,
        millis: float | None = None,
        iterations: int | None = None,
        uct_c: float = 2.0,
        returns: str = "win_loss",
        rollouts: int = 1,
        final: str = "max_visit_count",
    ) -> None:
        if cpu_millis is None and millis is None and iterations is None:
            cpu_millis = DEFAULT_CPU_MILLIS
        if returns not in ("points", "win_loss"):
            raise ValueError(f"returns must be points or win_loss, not {returns!r}")
        self.name = "ismcts"
        self.seed = seed
        self.cpu_millis, self.millis, self.iterations = cpu_millis, millis, iterations
        self.uct_c = uct_c
        self.returns = returns
        self.rollouts = rollouts
        self.final = os_ismcts.ISMCTSFinalPolicyType[final.upper()]
        self.last_iterations = 0
        """Simulations of the latest search (0 when the decision was forced)."""

    def game(self, rules: Rules) -> GostopGame:
        """The OpenSpiel game of ``rules`` (one per rule set and process)."""
        key = (rules, self.returns)
        game = _GAMES.get(key)
        if game is None:
            game = _GAMES[key] = load(rules, self.returns)
        return game

    def choose(self, view: View, legal: Sequence[Action]) -> Action:
        if not legal:
            raise ValueError("no legal action to choose from")
        self.last_iterations = 0
        if len(legal) == 1:
            return legal[0]
        budget = Budget(self.iterations, self.millis, self.cpu_millis)
        if view.rules is None:
            raise ValueError("the view carries no rules")
        me = view.seats[view.viewer]
        key = hash((self.seed, view.viewer, view.steps, me.hand, view.floor, view.stock_count)) & ((1 << 32) - 1)
        rng = random.Random(key)
        game = self.game(view.rules)
        root = game.state_at(determinize(view, rng))
        numbers = np.random.RandomState(key)
        search = _BudgetedIsmcts(
            budget, game=game, evaluator=os_mcts.RandomRolloutEvaluator(self.rollouts, numbers), uct_c=self.uct_c,
            random_state=numbers, final_policy_type=self.final,
        )
        search.set_resampler(lambda state, player: state.resample(player, rng))
        chosen = int(search.step(root))
        self.last_iterations = search.simulations
        action = action_from_id(chosen)
        if action not in legal:  # pragma: no cover - the game's legal actions are the engine's
            raise RuntimeError(f"ISMCTS chose {action!r}, not a legal action")
        return action


pyspiel.register_game(_GAME_TYPE, GostopGame)
