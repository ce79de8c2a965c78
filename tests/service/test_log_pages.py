"""Every page of a paged ``GetGameLog`` carries the game's deal proof: the explicit deal of an
operator's game, the deal commitment and, once the seats may read the log, the reveal. A page after
the first is read from a later version, but the proof is the first entry's."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import pytest

from gostop.engine import Deal, Rules, new_round
from gostop.engine.events import Redealt
from gostop.v1 import game_pb2 as pb
from gostop.wire import convert
from testkit.servers import API_KEY, OPERATOR, Api, Game, Metadata, config, key_md, running_server


@pytest.fixture
async def keyed(store_url: str) -> AsyncIterator[Api]:
    async with running_server(config(store_url, api_keys=API_KEY)) as api:
        yield api


def _explicit_deal(rules: Rules, seed: int) -> Deal:
    """A valid explicit deal that the engine plays as dealt (no redeal)."""
    rng = random.Random(seed)
    while True:
        cards = list(range(rules.deck_size))
        rng.shuffle(cards)
        size = rules.hand_size
        hands = tuple(tuple(sorted(cards[i * size:(i + 1) * size])) for i in range(rules.players))
        pos = rules.players * size
        floor = tuple(cards[pos:pos + rules.floor_size])
        deal = Deal(hands, floor, tuple(cards[pos + rules.floor_size:]), dealer=0)
        _, events = new_round(rules, 0, deal=deal)
        if not any(isinstance(e, Redealt) for e in events):
            return deal


async def _pages(api: Api, game: Game, size: int, metadata: Metadata) -> list[pb.GetGameLogResponse]:
    """The log of ``game`` read page by page, ``size`` entries at a time."""
    pages: list[pb.GetGameLogResponse] = []
    after = 0
    while True:
        page: pb.GetGameLogResponse = await api.stub.GetGameLog(
            pb.GetGameLogRequest(game_id=game.id, after_version=after, page_size=size), metadata=metadata)
        pages.append(page)
        after = page.next_after_version
        if not after:
            return pages


async def test_every_log_page_carries_the_explicit_deal_and_its_commitment(keyed: Api) -> None:
    deal = _explicit_deal(Rules.preset("standard"), 11)
    wire = convert.deal_to_pb(deal)
    game = await keyed.create("standard", seed=None, deal=wire, metadata=OPERATOR)
    rng = random.Random(11)
    for _ in range(6):
        seat, view = await keyed.to_move(game)
        game.version = (await keyed.submit(game, seat, rng.choice(view.legal_actions).id)).result.version
    assert game.version == 7
    pages = await _pages(keyed, game, 2, OPERATOR)
    assert [[e.version for e in p.entries] for p in pages] == [[1, 2], [3, 4], [5, 6], [7]]
    for page in pages:
        assert page.deal == wire, f"the page after version {page.entries[0].version - 1} lost the deal"
        assert page.deal_commitment.source == pb.DEAL_SOURCE_OPERATOR_DEAL
        assert page.deal_commitment.scheme == "gostop-fair-v1"
        assert not page.HasField("deal_reveal")


async def test_every_log_page_carries_the_server_deal_commitment_and_reveal(keyed: Api) -> None:
    game = await keyed.create("simple", seed=None, metadata=key_md(API_KEY))
    commitment = game.created.deal_commitment
    assert commitment.source == pb.DEAL_SOURCE_SERVER and len(commitment.server_seed_sha256) == 32
    await keyed.play_round(game, random.Random(3))
    assert (await keyed.get(game)).view.match.finished
    pages = await _pages(keyed, game, 4, game.md(0))
    assert len(pages) == -(-game.version // 4) >= 3
    first = pages[0]
    assert len(first.deal_reveal.server_seed) == 32
    for page in pages:
        assert page.deal_commitment == commitment, f"the page after version {page.entries[0].version - 1}"
        assert page.deal_reveal == first.deal_reveal
        assert not page.HasField("deal")
        assert page.seed == first.seed
