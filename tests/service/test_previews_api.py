"""The previews in the API's views (``engine.previews`` through ``gostop.wire.convert``): the stop
preview is in the deciding seat's view only and equals the settlement the stop then brings; every
play carries its capture hint and nothing else does; every view has every seat's sets within reach,
alike for every viewer; the wire values read back equal the engine's."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from gostop.engine.previews import capture_hints, gukjin_preview, reach, stop_preview
from gostop.v1 import game_pb2 as pb
from gostop.wire.convert import (
    capture_hints_from_pb,
    gukjin_preview_from_pb,
    reach_from_pb,
    stop_preview_from_pb,
    view_from_pb,
)
from testkit.connect import running_http_server
from testkit.servers import Api, Game, config, running_server

PROTOCOLS = ["grpc", "connect"]
PLAYS = ("play_card", "bomb", "flip_only")


@pytest.fixture(params=PROTOCOLS, name="api")
async def api_fixture(request: pytest.FixtureRequest) -> AsyncIterator[Api]:
    if request.param == "grpc":
        async with running_server(config("")) as api:
            yield api
    else:
        async with running_http_server(config(""), request.param) as api:
            yield api


def check_wire(v: pb.GameView) -> None:
    """The view's previews read back equal the engine's of the same view."""
    engine_view = view_from_pb(v)
    assert stop_preview_from_pb(v) == stop_preview(engine_view)
    assert gukjin_preview_from_pb(v) == gukjin_preview(engine_view)
    assert capture_hints_from_pb(v) == capture_hints(engine_view)
    assert reach_from_pb(v) == reach(engine_view)
    for legal in v.legal_actions:
        assert legal.HasField("capture") == (legal.action.WhichOneof("kind") in PLAYS), legal.label


async def check_views(api: Api, game: Game, seat: int, own: pb.GameView) -> None:
    """Every other viewer sees the same reach and no preview."""
    check_wire(own)
    reaches = [list(s.reach for s in own.seats)]
    for other in [None, *game.tokens]:
        if other == seat:
            continue
        v = (await api.get(game, other)).view
        assert not v.HasField("stop_preview") and not v.HasField("gukjin_preview")
        assert not v.legal_actions
        reaches.append(list(s.reach for s in v.seats))
    assert all(r == reaches[0] for r in reaches)


@pytest.mark.parametrize(("preset", "players", "seed"), [("standard", 3, 4), ("standard", 2, 5), ("house", 3, 7)])
async def test_previews_through_the_api(api: Api, preset: str, players: int, seed: int) -> None:
    game = await api.create(preset, players=players, seed=seed)
    stops = gos = 0
    seat, v = await api.to_move(game)
    while v.phase != pb.PHASE_OVER:
        await check_views(api, game, seat, v)
        ids = {legal.action.WhichOneof("kind"): legal.id for legal in v.legal_actions}
        if v.phase == pb.PHASE_GO_STOP:
            assert v.HasField("stop_preview")
            preview = v.stop_preview
            assert preview.next_go.gos == preview.now.gos + 1
            assert preview.settlement.winner == seat and preview.settlement.go_score == preview.now.go_score
            if gos < 1 and not preview.HasField("go_settlement"):
                gos += 1
                result = (await api.submit(game, seat, ids["go"])).result
            else:
                result = (await api.submit(game, seat, ids["stop"])).result
                assert result.settlement == preview.settlement
                stops += 1
        else:
            assert not v.HasField("stop_preview")
            assert v.HasField("gukjin_preview") == (v.phase == pb.PHASE_GUKJIN)
            result = (await api.submit(game, seat, v.legal_actions[0].id)).result
        game.version = result.version
        seat, v = await api.to_move(game)
    assert stops == 1, "the round reached a go/stop decision and stopped"
