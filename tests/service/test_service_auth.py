"""Authentication and authorization: seat tokens, spectators, API keys and operator keys, over the
memory store and a real Redis."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import grpc
import pytest

from gostop.engine import HIDDEN, Deal, Rules, new_round
from gostop.engine.events import Redealt
from gostop.service.auth import Authenticator
from gostop.service.errors import Code, ServiceError
from gostop.v1 import game_pb2 as pb
from testkit.servers import (
    API_KEY,
    OPERATOR,
    OPERATOR_KEY,
    SECRET,
    Api,
    Game,
    config,
    expect,
    key_md,
    running_server,
    seat_md,
)

UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED
DENIED = grpc.StatusCode.PERMISSION_DENIED


@pytest.fixture
async def keyed(store_url: str) -> AsyncIterator[Api]:
    """A server that requires an API key for CreateGame and knows one operator key."""
    async with running_server(config(store_url, api_keys=f"{API_KEY}, other-key", operator_keys=OPERATOR_KEY)) as api:
        yield api


@pytest.fixture
async def open_api() -> AsyncIterator[Api]:
    """A server without any key configured (memory store)."""
    async with running_server(config(operator_keys="")) as api:
        yield api


def _deal(rules: Rules, seed: int) -> Deal:
    """A valid explicit deal (one the engine would not throw in)."""
    rng = random.Random(seed)
    while True:
        cards = list(range(rules.deck_size))
        rng.shuffle(cards)
        hands = tuple(tuple(sorted(cards[i * rules.hand_size:(i + 1) * rules.hand_size]))
                      for i in range(rules.players))
        pos = rules.players * rules.hand_size
        floor = tuple(cards[pos:pos + rules.floor_size])
        deal = Deal(hands, floor, tuple(cards[pos + rules.floor_size:]), dealer=1)
        _, events = new_round(rules, 0, deal=deal)
        if not any(isinstance(e, Redealt) for e in events):
            return deal


# ----------------------------------------------------------------------------- API keys


async def test_create_needs_an_api_key_when_configured(keyed: Api) -> None:
    req = pb.CreateGameRequest(preset="standard", seed=1)
    err = await expect(keyed.stub.CreateGame(req), UNAUTHENTICATED, "BAD_CREDENTIALS")
    assert "API key" in err.message
    await expect(keyed.stub.CreateGame(req, metadata=key_md("wrong-key")), UNAUTHENTICATED, "BAD_CREDENTIALS")
    await expect(keyed.stub.CreateGame(req, metadata=key_md("")), UNAUTHENTICATED)
    for key in (API_KEY, "other-key", OPERATOR_KEY):
        out = await keyed.stub.CreateGame(req, metadata=key_md(key))
        assert out.version == 1


async def test_without_configured_keys_anyone_creates_but_only_operators_deal(open_api: Api) -> None:
    out = await open_api.stub.CreateGame(pb.CreateGameRequest(preset="simple", seed=3))
    assert len(out.seats) == 2
    deal = _deal(Rules.preset("simple"), 3)
    req = pb.CreateGameRequest(preset="simple", deal=pb.Deal(
        hands=[pb.Hand(cards=h) for h in deal.hands], floor=deal.floor, stock=deal.stock, dealer=deal.dealer))
    await expect(open_api.stub.CreateGame(req), DENIED, "OPERATOR_ONLY")
    # A key nobody configured is not an operator key.
    await expect(open_api.stub.CreateGame(req, metadata=key_md(OPERATOR_KEY)), UNAUTHENTICATED)


async def test_explicit_deal_needs_an_operator_key(keyed: Api) -> None:
    rules = Rules.preset("standard")
    deal = _deal(rules, 7)
    req = pb.CreateGameRequest(preset="standard", seed=9, deal=pb.Deal(
        hands=[pb.Hand(cards=h) for h in deal.hands], floor=deal.floor, stock=deal.stock, dealer=deal.dealer))
    await expect(keyed.stub.CreateGame(req, metadata=key_md(API_KEY)), DENIED, "OPERATOR_ONLY")
    await expect(keyed.stub.CreateGame(req), UNAUTHENTICATED)
    out = await keyed.stub.CreateGame(req, metadata=OPERATOR)
    game = Game(out.game_id, {s.seat: s.token for s in out.seats}, 1, out)
    log = await keyed.log(game)
    dealt = [e.dealt for e in log.entries[0].events if e.HasField("dealt")]
    assert [list(h.cards) for h in dealt[0].hands] == [list(h) for h in deal.hands]
    assert list(dealt[0].floor) == list(deal.floor) and dealt[0].dealer == deal.dealer
    assert dealt[0].stock_count == len(deal.stock)


# ---------------------------------------------------------------------------- seat tokens


async def test_seats_and_spectators_see_only_what_they_may(keyed: Api) -> None:
    game = await keyed.create("classic", players=3, seed=5)
    truth = (await keyed.log(game)).entries[0]
    dealt = next(e.dealt for e in truth.events if e.HasField("dealt"))
    assert all(c != HIDDEN for h in dealt.hands for c in h.cards), "operators get the unredacted log"
    spectator = (await keyed.get(game)).view
    assert spectator.viewer == -1 and not spectator.legal_actions
    for s in spectator.seats:
        assert list(s.hand) == list(s.revealed) and s.hand_size > 0
    assert game.created.view == spectator
    for seat in range(3):
        v = (await keyed.get(game, seat)).view
        hands = {s.seat: set(s.hand) for s in v.seats}
        assert hands[seat] and hands[seat] <= set(range(51))
        for other in range(3):
            if other != seat:
                assert hands[other] == set(v.seats[other].revealed)
                assert not hands[other] & hands[seat]
    # Play a while: each response shows only the actor's own hand.
    rng = random.Random(5)
    for _ in range(10):
        seat, v = await keyed.to_move(game)
        result = (await keyed.submit(game, seat, rng.choice(v.legal_actions).id)).result
        game.version = result.version
        for s in result.view.seats:
            if s.seat != seat:
                assert list(s.hand) == list(s.revealed)
        for s in (await keyed.get(game)).view.seats:
            assert list(s.hand) == list(s.revealed)


async def test_acting_needs_a_seat_token(keyed: Api) -> None:
    game = await keyed.create(seed=2, metadata=key_md(API_KEY))
    req = pb.SubmitActionRequest(game_id=game.id, expected_version=1, action_id=0)
    await expect(keyed.stub.SubmitAction(req), UNAUTHENTICATED, "BAD_CREDENTIALS")
    await expect(keyed.stub.SubmitAction(req, metadata=OPERATOR), UNAUTHENTICATED, "BAD_CREDENTIALS")
    nxt = pb.StartNextRoundRequest(game_id=game.id, expected_version=1)
    await expect(keyed.stub.StartNextRound(nxt), UNAUTHENTICATED, "BAD_CREDENTIALS")
    assert (await keyed.get(game)).version == 1


async def test_a_seat_cannot_act_for_another(keyed: Api) -> None:
    game = await keyed.create(seed=2)
    seat, v = await keyed.to_move(game)
    other = 1 - seat
    move = v.legal_actions[0].id
    # The seat comes from the token: the other seat's request is its own action, out of turn.
    await expect(keyed.submit(game, other, move), grpc.StatusCode.FAILED_PRECONDITION, "NOT_YOUR_TURN")
    # Relabelling one's own token with the other seat breaks its signature.
    prefix, game_id, _, mac = game.tokens[other].split(".")
    relabelled = f"{prefix}.{game_id}.{seat}.{mac}"
    req = pb.SubmitActionRequest(game_id=game.id, expected_version=1, action_id=move)
    await expect(keyed.stub.SubmitAction(req, metadata=seat_md(relabelled)), UNAUTHENTICATED)
    await expect(keyed.stub.GetGame(pb.GetGameRequest(game_id=game.id), metadata=seat_md(relabelled)),
                 UNAUTHENTICATED)
    assert (await keyed.get(game)).version == 1


async def test_tokens_of_another_game_are_refused(keyed: Api) -> None:
    a = await keyed.create(seed=1)
    b = await keyed.create(seed=2)
    md = b.md(0)
    await expect(keyed.stub.GetGame(pb.GetGameRequest(game_id=a.id), metadata=md), DENIED, "WRONG_GAME")
    await expect(keyed.stub.SubmitAction(pb.SubmitActionRequest(game_id=a.id, expected_version=1, action_id=0),
                                         metadata=md), DENIED, "WRONG_GAME")
    await expect(keyed.stub.StartNextRound(pb.StartNextRoundRequest(game_id=a.id, expected_version=1),
                                           metadata=md), DENIED, "WRONG_GAME")
    await expect(keyed.stub.GetGameLog(pb.GetGameLogRequest(game_id=a.id), metadata=md + OPERATOR), DENIED,
                 "WRONG_GAME")
    # Even for a game that does not exist, the token's game decides first.
    await expect(keyed.stub.GetGame(pb.GetGameRequest(game_id="Unknown"), metadata=md), DENIED, "WRONG_GAME")
    assert (await keyed.get(a)).version == 1


def _tampered(token: str) -> list[str]:
    prefix, game_id, seat, mac = token.split(".")
    flipped = ("A" if mac[0] != "A" else "B") + mac[1:]
    # Another game id: its last character changed (game ids are random; one in 64 ends in "x").
    other_game = game_id[:-1] + ("x" if game_id[-1] != "x" else "y")
    return [
        f"{prefix}.{game_id}.{seat}.{flipped}",
        f"{prefix}.{game_id}.{seat}.{mac[:-1]}",
        f"{prefix}.{game_id}.{seat}.",
        f"{prefix}.{other_game}.{seat}.{mac}",
        f"{prefix}.{game_id}.{int(seat) + 10}.{mac}",
        f"{prefix}.{game_id}.-1.{mac}",
        f"gst2.{game_id}.{seat}.{mac}",
        f"{prefix}.{game_id}.{seat}",
        f"{prefix}.{game_id}.{seat}.{mac}.extra",
        "",
        "garbage",
        Authenticator(b"another-secret-of-16-bytes-or-more").issue(game_id, int(seat)),
    ]


async def test_tampered_tokens_are_refused(keyed: Api) -> None:
    game = await keyed.create(seed=3)
    req = pb.GetGameRequest(game_id=game.id)
    for bad in _tampered(game.tokens[0]):
        err = await expect(keyed.stub.GetGame(req, metadata=seat_md(bad)), UNAUTHENTICATED, "BAD_CREDENTIALS")
        assert bad == "" or bad not in err.message
    for header in (game.tokens[0], f"Basic {game.tokens[0]}", f"bearer {game.tokens[0]}"):
        await expect(keyed.stub.GetGame(req, metadata=(("authorization", header),)), UNAUTHENTICATED)
    assert (await keyed.get(game, 0)).view.viewer == 0


# ------------------------------------------------------------------------------------ logs


async def test_log_access(keyed: Api) -> None:
    game = await keyed.create("simple", seed=12, rounds=1)
    req = pb.GetGameLogRequest(game_id=game.id)
    await expect(keyed.stub.GetGameLog(req), DENIED, "LOG_NOT_AVAILABLE")
    await expect(keyed.stub.GetGameLog(req, metadata=key_md(API_KEY)), DENIED, "LOG_NOT_AVAILABLE")
    for seat in (0, 1):
        await expect(keyed.stub.GetGameLog(req, metadata=game.md(seat)), DENIED, "LOG_NOT_AVAILABLE")
    await expect(keyed.stub.GetGameLog(req, metadata=key_md("nope")), UNAUTHENTICATED)
    during = await keyed.log(game)
    assert len(during.entries) == 1 and during.seed == 12

    await keyed.play_round(game, random.Random(12))
    assert (await keyed.get(game)).view.match.finished
    full = await keyed.log(game)
    assert len(full.entries) == game.version
    for seat in (0, 1):
        assert await keyed.stub.GetGameLog(req, metadata=game.md(seat)) == full
    await expect(keyed.stub.GetGameLog(req), DENIED, "LOG_NOT_AVAILABLE")
    await expect(keyed.stub.GetGameLog(req, metadata=key_md(API_KEY)), DENIED, "LOG_NOT_AVAILABLE")
    assert await keyed.stub.GetGameLog(req, metadata=game.md(1) + OPERATOR) == full


async def test_log_of_an_open_ended_match_stays_operator_only(keyed: Api) -> None:
    game = await keyed.create("simple", seed=14, rounds=0)
    await keyed.play_round(game, random.Random(14))
    assert not (await keyed.get(game)).view.match.finished
    await expect(keyed.stub.GetGameLog(pb.GetGameLogRequest(game_id=game.id), metadata=game.md(0)), DENIED)
    assert len((await keyed.log(game)).entries) == game.version


async def test_tokens_are_hmac_signed_per_seat(keyed: Api) -> None:
    """One token per seat, each the HMAC of the game id and seat under the shared secret."""
    game = await keyed.create(seed=4)
    assert sorted(game.tokens) == [0, 1]
    auth = Authenticator(SECRET.encode())
    for seat, token in game.tokens.items():
        assert token == auth.issue(game.id, seat)


@pytest.mark.parametrize("seat", ["\u00b2", "\u0663", "1\u2070", "", " 1"])
def test_non_ascii_digit_seats_are_malformed_tokens(seat: str) -> None:
    """``str.isdigit`` accepts superscripts and other scripts' digits that ``int`` refuses."""
    auth = Authenticator(SECRET.encode())
    with pytest.raises(ServiceError) as caught:
        auth.caller((("authorization", f"Bearer gst1.game.{seat}.mac"),))
    assert caught.value.code is Code.UNAUTHENTICATED


def test_verified_tokens_are_remembered_within_a_bound() -> None:
    """A token's signature is checked once and remembered (a client sends it with every call);
    what is remembered is bounded, and a token that differs by one character is still refused."""
    from gostop.service import auth as auth_module

    auth = Authenticator(SECRET.encode())
    other = Authenticator(b"another secret of the same length!")
    tokens = [auth.issue(f"game{i}", i % 3) for i in range(auth_module._VERIFIED_MAX + 50)]
    for i, token in enumerate(tokens):
        for _ in range(2):  # verified, then remembered
            caller = auth.caller((("authorization", f"Bearer {token}"),))
            assert (caller.game_id, caller.seat) == (f"game{i}", i % 3)
        assert len(auth._verified) <= auth_module._VERIFIED_MAX
    for token in (tokens[-1], tokens[0]):
        for bad in (token[:-1] + ("A" if token[-1] != "A" else "B"), other.issue("game0", 0)):
            with pytest.raises(ServiceError) as caught:
                auth.caller((("authorization", f"Bearer {bad}"),))
            assert caught.value.code is Code.UNAUTHENTICATED
