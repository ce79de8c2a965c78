"""Connected seats on the web table (docs/clock.md "Connected seats", docs/web.md "The clock"), in
a real browser against ``gostop serve`` on the memory store with a short presence grace (500 ms).

Two people at a clocked table, one browser context each, with a long decision time (nobody times
out meanwhile): seat 1's page shows seat 0 connected (a dot); seat 0's page closes and, once the
grace has passed, seat 1's page shows seat 0 disconnected (a badge, a log line, the phone layout
still on one screen); seat 0's link opened again brings it back (the dot, "다시 연결됨"). A
spectator reads the same in English. Screenshots are saved under test-artifacts/web
(docs/web-presence.png is one of them).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testkit.web import WebServer, chromium, start_web_server

pytest.importorskip("playwright.sync_api", reason="playwright is in the [dev] extra")
from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright

from testkit.clocked_tables import (
    DESKTOP,
    SIZES,
    WAIT_MS,
    clocked,
    create_clocked,
    log_line,
    needs_page,
    shot,
    token_of,
)

pytestmark = pytest.mark.slow  # not in make check: Chromium

GRACE_MS = 500


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium())
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def server() -> Iterator[WebServer]:
    """A server whose seats count as disconnected half a second after their last stream ends."""
    started = start_web_server(GOSTOP_PRESENCE_GRACE_MS=str(GRACE_MS))
    try:
        yield started
    finally:
        started.stop()


def seat_link(server: WebServer, game_id: str, seat: int, token: str) -> str:
    return f"{server.url}#/g/{game_id}/{seat}?t={token}"


def open_page(context: BrowserContext, url: str) -> Page:
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector("[data-testid=table][data-connection=live]", timeout=WAIT_MS)
    return page


def presence(page: Page, seat: int, connected: bool) -> None:
    """Until the page shows ``seat`` connected (its dot) or disconnected (its badge)."""
    flag = "1" if connected else "0"
    page.wait_for_selector(f"[data-testid=presence-{seat}][data-connected='{flag}']", timeout=WAIT_MS)


def assert_phone_fits(page: Page) -> None:
    """Upright and sideways on a phone: nothing scrolls, the disconnected badge is in the window."""
    for name in ("phone", "phone-landscape"):
        page.set_viewport_size(SIZES[name])
        page.wait_for_timeout(200)
        if page.locator("[data-testid=side].open").count() and page.locator("[data-testid=log-toggle]").is_visible():
            page.keyboard.press("l")  # the log's drawer, open from the wide window: closed
            page.wait_for_timeout(300)
        got = page.evaluate("""() => {
          const d = document.documentElement;
          const r = document.querySelector('[data-testid=presence-0]').getBoundingClientRect();
          return { scroll: [d.scrollWidth - d.clientWidth, d.scrollHeight - d.clientHeight],
                   badge: [r.left, r.top, r.right, r.bottom], viewport: [innerWidth, innerHeight] };
        }""")
        shot(page, f"presence-{name}.png")
        assert got["scroll"][0] <= 0 and got["scroll"][1] <= 0, f"{name}: the page scrolls by {got['scroll']}"
        left, top, right, bottom = got["badge"]
        width, height = got["viewport"]
        assert left >= -1 and top >= -1 and right <= width + 1 and bottom <= height + 1, \
            f"{name}: the badge at {got['badge']} is outside {width}x{height}"
    page.set_viewport_size(DESKTOP)


@needs_page
def test_a_seat_whose_page_closes_shows_disconnected_and_comes_back_with_its_link(
        browser: Browser, server: WebServer) -> None:
    game = create_clocked(server, clocked(decision_ms=60_000, bank_ms=0))
    link_a = seat_link(server, game.game_id, 0, token_of(game, 0))
    context_a = browser.new_context(viewport=DESKTOP, locale="ko-KR")
    context_b = browser.new_context(viewport=DESKTOP, locale="ko-KR")
    context_c = browser.new_context(viewport=DESKTOP, locale="en-US")
    errors: list[str] = []
    try:
        page_b = open_page(context_b, seat_link(server, game.game_id, 1, token_of(game, 1)))
        page_b.on("pageerror", lambda e: errors.append(str(e)))
        # Seat 0's person has not come yet; seat 1's own page shows no presence of its own.
        presence(page_b, 0, connected=False)
        assert page_b.locator("[data-testid=presence-1]").count() == 0

        page_a = open_page(context_a, link_a)
        presence(page_b, 0, connected=True)
        log_line(page_b, "자리 0: 접속").first.wait_for(timeout=WAIT_MS)
        assert page_b.locator("[data-testid=presence-0]").inner_text() == ""
        spectator = open_page(context_c, f"{server.url}#/g/{game.game_id}")
        presence(spectator, 0, connected=True)
        presence(spectator, 1, connected=True)
        shot(page_b, "presence-connected.png")

        # Seat 0's page closes: after the grace, seat 1 sees it disconnected.
        page_a.close()
        presence(page_b, 0, connected=False)
        assert page_b.locator("[data-testid=presence-0]").inner_text() == "연결 끊김"
        gone = log_line(page_b, "자리 0: 연결 끊김")
        gone.first.wait_for(timeout=WAIT_MS)
        assert "special" in (gone.first.get_attribute("class") or "")
        presence(spectator, 0, connected=False)
        log_line(spectator, "Seat 0 disconnected").first.wait_for(timeout=WAIT_MS)
        assert spectator.locator("[data-testid=presence-0]").inner_text() == "disconnected"
        shot(page_b, "presence-disconnected.png")
        assert_phone_fits(page_b)

        # The same seat link again: seat 0 is back.
        page_a = open_page(context_a, link_a)
        presence(page_b, 0, connected=True)
        log_line(page_b, "자리 0: 다시 연결됨").first.wait_for(timeout=WAIT_MS)
        log_line(spectator, "Seat 0 is back online").first.wait_for(timeout=WAIT_MS)
        # The last-action panel tells moves, not comings and goings.
        assert "연결" not in page_b.locator("[data-testid=last-action]").inner_text()
        shot(page_b, "presence-back.png")
        assert errors == []
    finally:
        for context in (context_a, context_b, context_c):
            context.close()
