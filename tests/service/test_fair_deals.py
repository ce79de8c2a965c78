"""Fair deals: a caller without an operator key cannot choose (or so know) a deal, and every seat can
check afterwards, against a commitment it held from the start, that the deal was not chosen against it.

Regression: ``seed`` was accepted from anyone who may create a game and the shuffle is a public
function of it, so a player could search seeds offline (seed 169 deals the dealer four 광) and sit at a
table whose every hidden card they knew.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import random
from collections.abc import AsyncIterator

import pytest

from gostop.engine import Rules, new_match
from gostop.v1 import game_pb2 as pb
from testkit.servers import (
    API_KEY,
    OPERATOR,
    Api,
    config,
    events_pb,
    key_md,
    rules_from_pb,
    running_server,
)

PLAYER = key_md(API_KEY)
"""A creator with an API key, not an operator key."""


@pytest.fixture
async def keyed(store_url: str) -> AsyncIterator[Api]:
    async with running_server(config(store_url, api_keys=API_KEY)) as api:
        yield api


def _predicted(seed: int) -> tuple[list[int], list[int]]:
    """What an attacker computes offline for ``seed``: the dealer's hand and the floor."""
    match, _ = new_match(Rules.preset("standard"), seed)
    state = match.round
    return sorted(state.seats[state.dealer].hand), sorted(state.floor)


async def _seen(api: Api, game_id: str, token: str, seat: int) -> tuple[list[int], list[int]]:
    got = await api.stub.GetGame(pb.GetGameRequest(game_id=game_id), metadata=(("authorization", f"Bearer {token}"),))
    return sorted(got.view.seats[seat].hand), sorted(got.view.floor)


async def test_a_non_operator_seed_does_not_choose_the_deal(keyed: Api) -> None:
    predicted_hand, predicted_floor = _predicted(169)
    deals = set()
    for _ in range(3):
        created = await keyed.stub.CreateGame(pb.CreateGameRequest(preset="standard", seed=169), metadata=PLAYER)
        assert created.deal_commitment.source == pb.DEAL_SOURCE_SERVER
        dealer = created.view.dealer
        hand, floor = await _seen(keyed, created.game_id, created.seats[dealer].token, dealer)
        assert (hand, floor) != (predicted_hand, predicted_floor), "the caller's seed chose the deal"
        deals.add((tuple(hand), tuple(floor)))
    assert len(deals) == 3, "the same client seed gave the same deal twice"


async def test_an_operator_seed_replays_exactly(keyed: Api) -> None:
    created = await keyed.stub.CreateGame(pb.CreateGameRequest(preset="standard", seed=169), metadata=OPERATOR)
    assert created.deal_commitment.source == pb.DEAL_SOURCE_OPERATOR_SEED
    assert not created.deal_commitment.server_seed_sha256
    match, _ = new_match(Rules.preset("standard"), 169)
    dealer = match.round.dealer
    assert created.view.dealer == dealer
    assert await _seen(keyed, created.game_id, created.seats[dealer].token, dealer) == _predicted(169)


def _check_like_a_player(game_id: str, commitment: pb.DealCommitment, log: pb.GetGameLogResponse) -> None:
    """What a seat does after the match, with nothing but hashlib, hmac and the engine."""
    assert log.deal_commitment == commitment, "the log's commitment is not the one given at creation"
    assert commitment.scheme == "gostop-fair-v1"
    server_seed = log.deal_reveal.server_seed
    assert len(server_seed) == 32
    digest = hashlib.sha256(server_seed).digest()
    assert digest == commitment.server_seed_sha256
    assert base64.urlsafe_b64encode(digest).decode()[:16] == game_id, "the game id does not commit to the seed"
    client = str(log.deal_reveal.client_seed) if log.deal_reveal.HasField("client_seed") else ""
    mac = hmac.new(server_seed, f"gostop-fair-v1|{client}".encode(), hashlib.sha256).digest()
    seed = int.from_bytes(mac[:8], "big")
    assert seed == log.seed
    _, events = new_match(rules_from_pb(log.rules), seed, log.rounds)
    assert events_pb(events) == list(log.entries[0].events), "the logged deal is not the committed one"


@pytest.mark.parametrize("client_seed", [None, 169])
async def test_the_reveal_proves_the_deal(keyed: Api, client_seed: int | None) -> None:
    game = await keyed.create("standard", seed=client_seed, metadata=PLAYER)
    commitment = game.created.deal_commitment
    assert commitment.source == pb.DEAL_SOURCE_SERVER and len(commitment.server_seed_sha256) == 32
    await keyed.play_round(game, random.Random(1))
    log = await keyed.log(game, metadata=game.md(0))
    assert log.deal_reveal.HasField("client_seed") == (client_seed is not None)
    _check_like_a_player(game.id, commitment, log)


async def test_a_forged_reveal_fails_the_check(keyed: Api) -> None:
    """The player's check is not vacuous: another server seed, or a deal from another seed, fails it."""
    game = await keyed.create("standard", seed=None, metadata=PLAYER)
    await keyed.play_round(game, random.Random(2))
    log = await keyed.log(game, metadata=game.md(1))
    forged = pb.GetGameLogResponse()
    forged.CopyFrom(log)
    forged.deal_reveal.server_seed = bytes(32)
    with pytest.raises(AssertionError):
        _check_like_a_player(game.id, game.created.deal_commitment, forged)
    other = await keyed.create("standard", seed=None, metadata=PLAYER)
    with pytest.raises(AssertionError):
        _check_like_a_player(other.id, other.created.deal_commitment, log)


async def test_operator_deals_say_so_in_the_log(keyed: Api) -> None:
    game = await keyed.create("standard", seed=5, metadata=OPERATOR)
    log = await keyed.log(game)
    assert log.deal_commitment.source == pb.DEAL_SOURCE_OPERATOR_SEED
    assert not log.deal_reveal.server_seed and log.seed == 5
