"""What the browser tests of clocked tables share: the clock settings of a test table, a game of
two people with a clock, the page sizes, screenshots and the log's lines."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import pytest

from gostop.v1 import game_pb2 as pb
from testkit.servers import stub as game_stub
from testkit.web import WebServer, chromium, page_built

if TYPE_CHECKING:
    from playwright.sync_api import Page, ViewportSize

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "web"
CHROMIUM = chromium()

needs_page = pytest.mark.skipif(not page_built() or CHROMIUM is None,
                                reason="needs the built web table (make web) and chromium (make chromium)")

WAIT_MS = 30_000
"""How long a step may take to show (a deadline, a bot's turn): a bound on waiting, not a timed assertion."""

DESKTOP: ViewportSize = {"width": 1280, "height": 800}
SIZES: dict[str, ViewportSize] = {
    "phone": {"width": 390, "height": 844},
    "phone-landscape": {"width": 844, "height": 390},
    "desktop": DESKTOP,
}


def shot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path))
    return path


def clocked(decision_ms: int, bank_ms: int = 0, away_after: int = 2, auto_pause_ms: int = 1000) -> pb.ClockSettings:
    return pb.ClockSettings(decision_ms=decision_ms, bank_ms=bank_ms, away_after=away_after,
                            auto_pause_ms=auto_pause_ms)


def create_clocked(server: WebServer, clock: pb.ClockSettings) -> pb.CreateGameResponse:
    """A standard 2-player game of two people with ``clock``, whose first round is played (a deal
    that ends the round at once is dealt again)."""
    with grpc.insecure_channel(server.target) as channel:
        stub = game_stub(channel)  # (a blocking channel: the same stub class)
        for _ in range(20):
            game: pb.CreateGameResponse = stub.CreateGame(
                pb.CreateGameRequest(preset="standard", players=2, rounds=1, clock=clock), timeout=10)
            if game.view.phase != pb.PHASE_OVER:
                return game
    raise AssertionError("no deal with a round to play")


def token_of(game: pb.CreateGameResponse, seat: int) -> str:
    return next(s.token for s in game.seats if s.seat == seat)


def log_line(page: Page, text: str) -> Any:
    return page.locator("[data-testid=log] li", has_text=text)
