"""Secrecy over many random games: nothing a seat receives — views, turn results, streamed WatchGame
events, error messages and details — and no log line holds another seat's hidden hand cards or any
card of the stock; operator-only data needs an operator key.

The check does not trust the engine's redaction: it decodes every message a seat was sent, collects
every card id in it (the card fields of the protos, listed below and checked to be complete, and
card codes such as ``02-tti`` in any string), and asserts that none of them is hidden from that seat
in the true state of the game at that version (replayed from the operator's log): in another seat's
hand and not shown by 흔들기, or in the stock.

Volume runs on the embedded memory store, through gRPC (streams, errors, logs) and, for thousands
of games, through the service's domain layer directly (the very messages the servicer returns);
a subset runs through a server process on a real Redis, whose JSON log lines are checked too."""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
import structlog
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from gostop.engine import (
    CODE,
    HIDDEN,
    ChooseCapture,
    PlayCard,
    State,
    action_from_id,
    match_apply,
    new_match,
    next_round,
)
from gostop.service.auth import Caller
from gostop.service.games import Games
from gostop.v1 import game_pb2 as pb
from gostop.wire import convert
from testkit.redis_server import RedisServer
from testkit.servers import (
    API_KEY,
    OPERATOR,
    Api,
    Game,
    client,
    config,
    failure,
    key_md,
    running_server,
    start_process,
)

from .harness import budget, record, sized, soak

# Not in make check: many games through every port and server processes.
pytestmark = pytest.mark.slow

CARD_FIELDS = {
    ("GameView", "floor"), ("SeatView", "hand"), ("SeatView", "revealed"), ("SeatView", "captured"),
    ("Pending", "played"), ("Pending", "flipped"), ("Pending", "options"), ("PlayCard", "card"),
    ("ChooseCapture", "card"), ("TurnContext", "card"), ("TurnContext", "held"), ("TurnContext", "flipped"),
    ("TurnContext", "taken"), ("Hand", "cards"), ("Dealt", "floor"), ("BonusCaptured", "card"),
    ("BonusCaptured", "replacement"), ("GwangSold", "cards"), ("CardPlayed", "card"), ("Shaken", "cards"),
    ("Bombed", "cards"), ("CardFlipped", "card"), ("CardLaid", "card"), ("Captured", "cards"),
    ("PpeokFormed", "cards"), ("PiStolen", "cards"), ("PlayRecord", "floor"), ("CaptureHint", "takes"),
    ("CaptureHint", "choose_from"),
}  # fmt: skip
"""Every integer field that holds a card id, in the messages a seat receives."""

ACTION_ID_FIELDS = {("LegalAction", "id"), ("PlayRecord", "action")}
"""Fields holding an action id, which names a card for plays and captures (``action_from_id``)."""

NOT_CARD_FIELDS = {
    "SeatToken": {"seat"}, "CreateGameResponse": {"version"}, "GetGameResponse": {"version"},
    "TurnResult": {"version"}, "WatchGameResponse": {"version"},
    "GameView": {"viewer", "dealer", "to_move", "stock_count", "version", "go_seq", "steps"},
    "Stack": {"month", "maker"},
    "SeatView": {"seat", "hand_size", "gos", "last_go_base", "shakes", "bombs", "multiplier", "spare_flips", "ppeok",
                 "turns", "ppeok_turns", "dry_turns", "last_go_order", "sseul", "bank_ms", "timeouts"},
    "Score": {"gwang_count", "yeol_count", "tti_count", "pi_value", "sseul_count", "gwang", "yeol", "godori", "tti",
              "hongdan", "cheongdan", "chodan", "pi", "sseul", "total"},
    "Pending": {"seat"}, "PlayRecord": {"seat", "piles"}, "Bomb": {"month"}, "Payment": {"payer", "payee", "points"},
    "Settlement": {"winner", "base", "gos", "go_score", "points", "money", "point_value"}, "Factor": {"value"},
    "Bill": {"seat", "points", "pays", "covers"},
    "MatchSummary": {"round_no", "rounds", "points", "money", "wins", "losses", "draws"},
    "Rules": {"players", "bonus_cards", "go_threshold", "meongbak_min_yeol", "pibak_max_pi", "chongtong_points",
              "three_ppeok_points", "first_ttadak_payment", "heodang_turns", "heodang_points", "point_value",
              "gwang_sale_price"},
    "PpeokPayments": {"points"}, "TurnContext": {"seat", "month", "matched"}, "Redealt": {"month"},
    "Dealt": {"dealer", "stock_count"}, "BonusCaptured": {"seat"}, "SatOut": {"seat"}, "JoinedRound": {"seat"},
    "GwangSold": {"seat", "price"}, "CardPlayed": {"seat"}, "Shaken": {"seat", "month"},
    "Bombed": {"seat", "month", "spare_flips"}, "FlipOnlyUsed": {"seat", "spare_flips"}, "CardFlipped": {"seat"},
    "CardLaid": {"seat"}, "Captured": {"seat"}, "PpeokFormed": {"seat", "month", "count"},
    "PpeokRecaptured": {"seat", "month", "maker"}, "Jjok": {"seat", "month"}, "Ttadak": {"seat", "month"},
    "Sseul": {"seat", "points"}, "PiStolen": {"seat", "victim", "requested"}, "GukjinDecided": {"seat"},
    "ScoreChanged": {"seat", "total"}, "WentGo": {"seat", "count", "base"}, "Stopped": {"seat", "base"},
    "InstantWin": {"seat", "points"}, "InstantLoss": {"seat"}, "BotSeat": {"seat", "budget_ms"},
    "CaptureHint": {"month_unseen"}, "SetReach": {"captured", "open"}, "StopPreview": {"next_base"},
    "GoTerms": {"gos", "add", "multiplier", "go_score"},
    "TableClock": {"seat", "started_ms", "bank_from_ms", "deadline_ms"},
    "ClockSettings": {"decision_ms", "bank_ms", "away_after", "auto_pause_ms"},
    "PlayedForSeat": {"seat"}, "SeatAway": {"seat"}, "AutoPlaySet": {"seat"}, "SeatPresence": {"seat"},
    "SetAutoPlayResponse": {"version"},
}  # fmt: skip
"""Every other integer field of those messages (seats, months, counts, points, versions)."""

RECEIVED = ("CreateGameResponse", "GetGameResponse", "SubmitActionResponse", "StartNextRoundResponse",
            "WatchGameResponse", "SetAutoPlayResponse")
CODES = re.compile("|".join(re.escape(c) for c in sorted(CODE, key=len, reverse=True)))
_INTEGERS = (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64)
CARDISH = re.compile(r"card|hand|floor|stock|deal|captured|revealed|flipped|events?$|view|action")


def _integer_fields(descriptor: Descriptor, seen: set[str] | None = None) -> Iterator[tuple[str, str]]:
    seen = set() if seen is None else seen
    if descriptor.full_name in seen:
        return
    seen.add(descriptor.full_name)
    for f in descriptor.fields:
        if f.type == FieldDescriptor.TYPE_MESSAGE:
            assert f.message_type is not None
            yield from _integer_fields(f.message_type, seen)
        elif f.type in _INTEGERS:
            yield descriptor.name, f.name


def test_every_integer_field_is_classified() -> None:
    """A new field in the protos must be declared a card field or not before this suite trusts it."""
    seen: set[str] = set()
    found = {pair for name in RECEIVED for pair in _integer_fields(pb.DESCRIPTOR.message_types_by_name[name], seen)}
    classified = CARD_FIELDS | ACTION_ID_FIELDS | {(m, f) for m, names in NOT_CARD_FIELDS.items() for f in names}
    assert found == classified, f"unclassified: {found - classified}; gone: {classified - found}"


def cards_in(msg: Message, seat: int) -> set[int]:
    """Every card id in ``msg`` (card fields, and card codes in strings), except ``seat``'s own hand
    in a ``Dealt`` event (a deal thrown in and redealt may have shown it cards now elsewhere); a
    ``Dealt`` event must show no other seat's hand at all."""
    out: set[int] = set()
    name = msg.DESCRIPTOR.name
    if name == "Dealt":
        for i, hand in enumerate(msg.hands):  # type: ignore[attr-defined]
            assert i == seat or all(c == HIDDEN for c in hand.cards), f"seat {seat} was dealt seat {i}'s hand"
        out.update(msg.floor)  # type: ignore[attr-defined]
        return out - {HIDDEN}
    for f, value in msg.ListFields():
        if f.type == FieldDescriptor.TYPE_MESSAGE:
            for item in value if f.is_repeated else [value]:
                out |= cards_in(item, seat)
        elif f.type == FieldDescriptor.TYPE_STRING:
            for text in value if f.is_repeated else [value]:
                out.update(CODE.index(c) for c in CODES.findall(text))
        elif (name, f.name) in CARD_FIELDS:
            out.update(value if f.is_repeated else [value])
        elif (name, f.name) in ACTION_ID_FIELDS:
            for ident in value if f.is_repeated else [value]:
                action = action_from_id(ident)
                if isinstance(action, PlayCard | ChooseCapture):
                    out.add(action.card)
    return out - {HIDDEN}


def hidden_from(state: State, seat: int) -> set[int]:
    """The cards ``seat`` may not know in ``state``: other hands (less what 흔들기 showed), the stock."""
    out = set(state.stock)
    for i, s in enumerate(state.seats):
        if i != seat:
            out.update(set(s.hand) - set(s.revealed))
    return out


# ------------------------------------------------------------------------------ ledger


@dataclass
class Received:
    """Everything the seats of one game were sent, by version, and the request cards they named."""

    messages: list[tuple[int, int, Message, frozenset[int]]] = field(default_factory=list)
    """(seat, version the message shows, message, cards the seat itself named in its request)."""

    def add(self, seat: int, version: int, msg: Message, named: frozenset[int] = frozenset()) -> None:
        self.messages.append((seat, version, msg, named))


def states_by_version(log: pb.GetGameLogResponse) -> dict[int, tuple[State, frozenset[int]]]:
    """The true round state after each version, replayed from the unredacted log, with the hand
    cards shown to every seat so far in the round by an event that leaves them in the hand: the
    sale of a sitting-out seat's 광 (광팔기) and 흔들기."""
    match, _ = new_match(_rules(log), log.seed, log.rounds)
    shown: set[int] = set()
    states: dict[int, tuple[State, frozenset[int]]] = {}
    for entry in log.entries:
        if entry.version > 1:
            if entry.HasField("action"):
                match, _ = match_apply(match, convert.action_from_pb(entry.action), entry.seat)
            else:
                match, _ = next_round(match)
        for event in entry.events:
            kind = event.WhichOneof("kind")
            if kind == "dealt":
                shown.clear()
            elif kind in ("gwang_sold", "shaken"):
                shown.update(getattr(event, kind).cards)
        states[entry.version] = (match.round, frozenset(shown))
    return states


def _rules(log: pb.GetGameLogResponse) -> Any:
    from testkit.servers import rules_from_pb

    return rules_from_pb(log.rules)


def check(received: Received, log: pb.GetGameLogResponse) -> int:
    """Assert that no message leaks a hidden card; the number of messages checked."""
    states = states_by_version(log)
    for seat, version, msg, named in received.messages:
        state, shown = states[version]
        leaked = (cards_in(msg, seat) - named - shown) & hidden_from(state, seat)
        assert not leaked, f"seat {seat} was sent hidden cards {sorted(leaked)} at version {version}: {msg}"
    return len(received.messages)


# ------------------------------------------------------------------------- gRPC games


async def _watch(api: Api, game: Game, seat: int, received: Received) -> None:
    md = () if seat < 0 else game.md(seat)
    async for item in api.stub.WatchGame(pb.WatchGameRequest(game_id=game.id), metadata=md):
        if seat >= 0:
            received.add(seat, item.version, item)
        else:  # a spectator: nobody's hand
            received.add(-1, item.version, item)


async def _probe_errors(api: Api, game: Game, seat: int, view: pb.GameView, rng: random.Random,
                        received: Received) -> None:
    """Bad actions whose error messages must not say more than the caller named."""
    held = {c for s in view.seats if s.seat == seat for c in s.hand}
    card = rng.choice([c for c in range(51) if c not in held])  # often in another hand, or in the stock
    bad = pb.SubmitActionRequest(game_id=game.id, expected_version=view.version, request_id="",
                                 structured=pb.Action(play_card=pb.PlayCard(card=card, shake=rng.random() < 0.5)))
    for who in {seat, (seat + 1) % len(game.tokens)}:
        err = await failure(api.stub.SubmitAction(bad, metadata=game.md(who)))
        assert err.code in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.INVALID_ARGUMENT), err
        # The texts go in a message with a string field, to be scanned like any other.
        received.add(who, view.version, pb.Settlement(reason=err.message), frozenset({card}))
        for value in err.info.metadata.values():
            received.add(who, view.version, pb.Settlement(reason=value), frozenset({card}))
        record(error_messages_checked=1)


async def _grpc_game(api: Api, rng: random.Random, tokens: list[str]) -> tuple[Received, pb.GetGameLogResponse]:
    preset, players = rng.choice([("standard", 2), ("classic", 3), ("classic", 4), ("house", 3), ("arcade", 2),
                                  ("simple", 2), ("house", 2), ("standard", 3)])
    game = await api.create(preset, players=players, seed=rng.getrandbits(63), rounds=rng.choice([1, 1, 2]))
    tokens.extend(game.tokens.values())
    received = Received()
    received.add(-1, 1, game.created)
    watchers = [asyncio.ensure_future(_watch(api, game, s, received)) for s in [-1, *game.tokens]]
    try:
        while True:
            spectator = await api.get(game)
            received.add(-1, spectator.version, spectator)
            if spectator.view.match.finished:
                break
            if rng.random() < 0.05:  # a seat may not read the log before the match is over
                seat = rng.choice(list(game.tokens))
                err = await failure(api.stub.GetGameLog(pb.GetGameLogRequest(game_id=game.id), metadata=game.md(seat)))
                assert err.info.reason == "LOG_NOT_AVAILABLE"
            if spectator.view.phase == pb.PHASE_OVER:
                seat = rng.randrange(players)
                game.version = spectator.version
                result = await api.next_round(game, seat)
                received.add(seat, result.version, result)
                continue
            seat = spectator.view.to_move
            own = await api.get(game, seat)
            received.add(seat, own.version, own)
            other = (seat + 1) % players
            received.add(other, own.version, await api.get(game, other))
            if rng.random() < 0.2:
                await _probe_errors(api, game, seat, own.view, rng, received)
            action = rng.choice(own.view.legal_actions).id
            response = await api.submit(game, seat, action, version=own.version)
            received.add(seat, response.result.version, response)
        await asyncio.wait_for(asyncio.gather(*watchers), 10)  # every stream ends with the match
    finally:
        for w in watchers:
            w.cancel()
    # Once the match is over, a seat may read the whole log; before, only an operator (see above).
    assert (await api.log(game, game.md(0))).entries
    return received, await api.log(game, OPERATOR)


async def _grpc_games(api: Api, count: int, rng: random.Random, tokens: list[str]) -> tuple[int, int]:
    games = messages = 0
    for _ in range(count):
        received, log = await _grpc_game(api, rng, tokens)
        messages += check(received, log)
        games += 1
    return games, messages


def _check_log_lines(lines: Sequence[Mapping[str, Any]], tokens: list[str]) -> int:
    """No log line holds a structure (a list of cards, a view), a field named like a card field, a
    card code or a seat token."""
    for line in lines:
        for key, value in line.items():
            assert isinstance(value, str | int | float | bool | None), f"log field {key} holds {value!r}"
            assert key == "event" or not CARDISH.search(key), f"log field {key} looks like cards"
        text = json.dumps(line, ensure_ascii=False, default=str)
        assert not CODES.search(text), f"a card in a log line: {text}"
        assert not any(t in text for t in tokens), f"a token in a log line: {text}"
    return len(lines)


async def test_no_leak_through_grpc_and_logs_memory_store() -> None:
    rng = random.Random(41)
    with structlog.testing.capture_logs(processors=[structlog.contextvars.merge_contextvars]) as logs:
        async with running_server(config(api_keys=API_KEY)) as api:
            # Operator-only data: explicit deals and full logs need the operator key.
            game = await api.create(seed=3)
            deal = pb.Deal(hands=[pb.Hand(cards=list(range(10))), pb.Hand(cards=list(range(10, 20)))],
                           floor=list(range(20, 28)), stock=list(range(28, 51)))
            for md in ((), key_md(API_KEY), game.md(0)):
                req = pb.CreateGameRequest(preset="standard", seed=1, deal=deal)
                err = await failure(api.stub.CreateGame(req, metadata=md))
                assert err.code in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED)
                err = await failure(api.stub.GetGameLog(pb.GetGameLogRequest(game_id=game.id), metadata=md))
                assert err.code == grpc.StatusCode.PERMISSION_DENIED, err
            ends = asyncio.get_running_loop().time() + budget(0.07)
            games = messages = 0
            tokens: list[str] = []
            while True:
                g, m = await _grpc_games(api, sized(10, 100), rng, tokens)
                games, messages = games + g, messages + m
                if not soak() or asyncio.get_running_loop().time() > ends:
                    break
    lines = _check_log_lines(logs, tokens)
    record(secrecy_games=games, secrecy_messages_checked=messages, log_lines_checked=lines, leaks_found=0)


async def test_no_leak_through_a_server_process_on_redis(service_redis: RedisServer) -> None:
    server = await start_process(service_redis.url)
    api = client(server.port)
    rng = random.Random(42)
    tokens: list[str] = []
    ends = asyncio.get_running_loop().time() + budget(0.04)
    games = messages = 0
    try:
        while True:
            g, m = await _grpc_games(api, sized(6, 20), rng, tokens)
            games, messages = games + g, messages + m
            if not soak() or asyncio.get_running_loop().time() > ends:
                break
    finally:
        await api.channel.close()
        server.stop()
    lines = [json.loads(line) for line in server.log().splitlines() if line.startswith("{")]
    assert lines and len(lines) == len([x for x in server.log().splitlines() if x.strip()]), "a log line is not JSON"
    record(secrecy_games=games, secrecy_messages_checked=messages, log_lines_checked=_check_log_lines(lines, tokens))


# ------------------------------------------------------------------ the domain layer


async def _direct_game(games: Games, rng: random.Random) -> tuple[Received, pb.GetGameLogResponse]:
    """One random match through ``Games`` (what the servicer returns, without the transport)."""
    preset, players = rng.choice([("standard", 2), ("classic", 3), ("classic", 4), ("house", 3), ("arcade", 2),
                                  ("simple", 2), ("house", 2), ("standard", 3)])
    created = await games.create(pb.CreateGameRequest(preset=preset, players=players, seed=rng.getrandbits(63),
                                                      rounds=rng.choice([1, 2])), Caller(None, None, True, True))
    gid = created.game_id
    received = Received()
    received.add(-1, 1, created)
    seats = [Caller(gid, s, False, False) for s in range(players)]
    view = created.view
    version = 1
    while not view.match.finished:
        if view.phase == pb.PHASE_OVER:
            seat = rng.randrange(players)
            result = (await games.start_next_round(pb.StartNextRoundRequest(game_id=gid, expected_version=version),
                                                   seats[seat])).result
        else:
            seat = view.to_move
            if not view.legal_actions:
                own = await games.get(pb.GetGameRequest(game_id=gid), seats[seat])
                received.add(seat, own.version, own)
                view = own.view
            req = pb.SubmitActionRequest(game_id=gid, expected_version=version,
                                         action_id=rng.choice(view.legal_actions).id)
            result = (await games.submit(req, seats[seat])).result
        received.add(seat, result.version, result)
        version, view = result.version, result.view
        if rng.random() < 0.3:
            other = rng.randrange(players)
            received.add(other, version, await games.get(pb.GetGameRequest(game_id=gid), seats[other]))
    log = await games.log(pb.GetGameLogRequest(game_id=gid, page_size=1000), Caller(None, None, True, True))
    assert log.next_after_version == 0
    return received, log


async def test_no_leak_over_thousands_of_games_domain_layer() -> None:
    rng = random.Random(43)
    async with running_server(config()) as api:
        assert api.server is not None
        games = api.server.games
        ends = asyncio.get_running_loop().time() + budget(0.12)
        count = messages = 0
        while True:
            for _ in range(sized(60, 1000)):
                received, log = await _direct_game(games, rng)
                messages += check(received, log)
                count += 1
            if not soak() or asyncio.get_running_loop().time() > ends:
                break
    record(secrecy_games=count, secrecy_messages_checked=messages)


async def test_the_check_catches_leaks() -> None:
    """The check itself: another seat's view, an unredacted deal or a card code in an error text,
    handed to a seat, are caught."""
    from gostop.engine import view as engine_view

    async with running_server(config()) as api:
        assert api.server is not None
        _, log = await _direct_game(api.server.games, random.Random(44))
        state, _ = states_by_version(log)[1]
        match, _ = new_match(_rules(log), log.seed, log.rounds)
        other_view = convert.view_to_pb(engine_view(state, 1), match, "g", 1)
        deal = next(e for e in log.entries[0].events if e.WhichOneof("kind") == "dealt")
        stock_card = state.stock[0]
        for leak in (other_view, deal, pb.Settlement(reason=f"card {CODE[stock_card]} is on top")):
            bad = Received([(0, 1, leak, frozenset())])
            try:
                check(bad, log)
            except AssertionError:
                continue
            raise AssertionError(f"the check missed a leak: {leak}")
