"""The web table in a real browser (Debian's chromium driven by Playwright) against ``gostop serve``.

- A person's clicks play a whole round against a bot seat: lobby, table, decisions, settlement;
  the settlement the page shows is GetGame's; a lost connection (cut by a proxy) and a reload
  mid-round resume the seat and the event stream, and the page's log ends with every event of the
  seat's stream exactly once; nothing the page received reveals another seat's hand or the stock
  (checked against the engine's replay of the game's full log).
- Each decision is a clear prompt, on a deal chosen for it: the two-card choice, 흔들기, 국진 with
  the score either way (the engine's), go/stop with the score a stop collects (the settlement's),
  by keys as well as clicks; the layout holds at a phone's width; Korean and English labels; a
  spectator's link shows no hand; the next round of the match.
- Invite links: one per person's seat, each seating its opener at that seat.
- The deck page: every card with the name people use, its kind, 띠 colour and 쌍피 value.
- One screen: at 390x844, 844x390 and 1280x800 every prompt of a scripted round fits the viewport,
  nothing scrolls and nothing overlaps (bounding boxes), with a mouse and on a touch screen.
- Rough edges a new user hit, each pinned: a restarted server's lost game, the API-key lobby, the
  invite page's warning, the rules select on a phone, floor cards of a month, the settlement's
  button, the last action's order.

Screenshots of the lobby, a mid-round table, the go/stop prompt, a phone-width table, the
settlement and every prompt at every size are saved under test-artifacts/web (docs/web-table.png,
docs/web-phone.png, docs/web-phone-landscape.png and docs/web-desktop.png are among them).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gostop.client import GostopClient
from gostop.engine import match_apply, new_match, next_round
from gostop.engine.cards import ALL_CARDS, CHEONGDAN, CHODAN, HONGDAN, KIND, PI_VALUE, Kind
from gostop.engine.render import card_name
from gostop.engine.scoring import score
from gostop.engine.state import State
from gostop.v1 import game_pb2 as pb
from gostop.wire import convert
from testkit.servers import OPERATOR_KEY, SECRET, rules_from_pb
from testkit.web import (
    CAPTURE_SCRIPT,
    DroppingProxy,
    WebServer,
    cards_in,
    chromium,
    decode_received,
    page_built,
    start_web_server,
)

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is in the [dev] extra")
from playwright.sync_api import Browser, Page, ViewportSize, sync_playwright  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "web"
CHROMIUM = chromium()

pytestmark = [
    pytest.mark.slow,  # not in make check: Chromium
    pytest.mark.skipif(not page_built(), reason="the web table is not built: make web"),
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium: make chromium (Debian's package)"),
]

WAIT_MS = 30_000
"""How long a step may take to show (a bot's turn, a reconnect): a bound on waiting, not a timed assertion."""

DESKTOP: ViewportSize = {"width": 1280, "height": 900}
PHONE: ViewportSize = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def open_server() -> Iterator[WebServer]:
    """A server that needs no key to create a game (as ``make run``)."""
    server = start_web_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def operator_server() -> Iterator[WebServer]:
    """A server with an operator key: the test deals the cards."""
    server = start_web_server(operator_key=True)
    try:
        yield server
    finally:
        server.stop()


def shot(page: Page, name: str, full_page: bool = False) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path), full_page=full_page)
    return path


def table_attr(page: Page, name: str) -> str:
    value = page.get_attribute("[data-testid=table]", f"data-{name}")
    assert value is not None
    return value


def wait_for_my_move(page: Page) -> None:
    """Until the page waits for this seat (an enabled choice or hand card) or shows the settlement."""
    page.wait_for_function(
        """() => {
          const t = document.querySelector('[data-testid=table]');
          return t && t.dataset.busy === '0' && (document.querySelector('[data-testid=settlement]') ||
            document.querySelector('[data-testid=choice]:not([disabled])') ||
            document.querySelector('[data-testid=hand-card]:not([disabled])'));
        }""",
        timeout=WAIT_MS,
    )


def wait_version_after(page: Page, version: str) -> None:
    page.wait_for_function(
        f"() => document.querySelector('[data-testid=table]')?.dataset.version !== '{version}'", timeout=WAIT_MS)


def my_token(page: Page, game_id: str) -> str:
    token = page.evaluate(f"() => sessionStorage.getItem('gostop.token.{game_id}')")
    assert isinstance(token, str) and token
    return token


def game_id_of(page: Page) -> str:
    match = re.search(r"#/g/([A-Za-z0-9_-]+)", page.url)
    assert match, page.url
    return match.group(1)


def received(page: Page) -> list[dict[str, Any]]:
    entries = page.evaluate("() => window.__gostopReceived")
    assert isinstance(entries, list)
    return entries


def play_one_decision(page: Page, use_keys: bool) -> None:
    """One decision as a person makes it: a prompt's first choice (stop at go/stop), or a playable
    hand card and then its confirmation; by keys or by clicks."""
    phase = table_attr(page, "phase")
    playable = page.locator("[data-testid=hand-card]:not([disabled])")
    if phase != "PLAY" or playable.count() == 0:  # a prompt, or a turn with only a 빈 내기 left
        choice = page.locator("[data-testid=choice]:not([disabled])")
        assert choice.count() >= 1, f"no choice in phase {phase}"
        target = page.locator("[data-testid=choice][data-action='231']") if phase == "GO_STOP" else choice.first
        if use_keys:
            page.keyboard.press(target.locator(".key").inner_text())
        else:
            target.click()
        return
    card = playable.first
    if use_keys:
        page.keyboard.press(card.locator(".key").inner_text())
    else:
        card.click()
    page.wait_for_selector("[data-testid=choice]:not([disabled])", timeout=WAIT_MS)
    # The selected card shows what it would take (the floor cards of its month are marked).
    assert page.locator("[data-testid=decision]").inner_text().strip()
    if use_keys:
        page.keyboard.press("Enter")
    else:
        page.locator("[data-testid=choice]:not([disabled])").first.click()


# ------------------------------------------------------------------------------- secrecy


def replay_states(log: pb.GetGameLogResponse) -> dict[int, State]:
    """The engine's state of the round after every version of the game, rebuilt from its full log."""
    deal = convert.deal_from_pb(log.deal) if log.HasField("deal") else None
    match, _ = new_match(rules_from_pb(log.rules), log.seed, log.rounds, deal=deal)
    states = {1: match.round}
    for entry in log.entries[1:]:
        if entry.HasField("action"):
            match, _ = match_apply(match, convert.action_from_pb(entry.action), entry.seat)
        else:
            match, _ = next_round(match)
        states[entry.version] = match.round
    return states


def hidden_from(state: State, viewer: int) -> set[int]:
    """What ``viewer`` may not know in ``state``: the stock, and the other hands but their 흔들기 cards."""
    hidden = set(state.stock)
    for seat, s in enumerate(state.seats):
        if seat != viewer:
            hidden |= set(s.hand) - set(s.revealed)
    return hidden


def version_of(method: str, message: Any) -> int | None:
    if method in ("GetGame", "CreateGame", "WatchGame"):
        return int(message.version)
    if method in ("SubmitAction", "StartNextRound"):
        return int(message.result.version)
    return None


def assert_nothing_hidden_received(entries: list[dict[str, Any]], log: pb.GetGameLogResponse, viewer: int) -> int:
    """Every message the page received, checked against the hidden cards at its version; how many."""
    states = replay_states(log)
    messages = decode_received(entries)
    assert {r.method for r in messages} >= {"GetGame", "WatchGame", "SubmitAction"}, {r.method for r in messages}
    assert "GetGameLog" not in {r.method for r in messages}
    checked = 0
    for r in messages:
        version = version_of(r.method, r.message)
        if version is None:
            continue
        leaked = cards_in(r.message) & hidden_from(states[version], viewer)
        assert not leaked, f"{r.method} at version {version} reveals {sorted(leaked)}: {r.message}"
        checked += 1
    return checked


# --------------------------------------------------------------------------- settlement


def assert_page_settlement_is(page: Page, s: pb.Settlement) -> None:
    """The settlement on the page, factor by factor, is ``s`` (GetGame's)."""
    box = page.locator("[data-testid=settlement]")
    assert box.get_attribute("data-outcome") == s.outcome
    assert box.get_attribute("data-winner") == str(s.winner)
    assert box.get_attribute("data-go-score") == str(s.go_score)
    assert box.get_attribute("data-points") == ",".join(str(p) for p in s.points)
    rows = page.locator("[data-testid=net] tbody tr")
    assert [rows.nth(i).get_attribute("data-points") for i in range(rows.count())] == [str(p) for p in s.points]
    if s.winner >= 0:
        assert page.locator("[data-testid=base]").inner_text() == str(s.base)
        categories = page.locator("[data-testid=categories] tr[data-category]")
        shown = {categories.nth(i).get_attribute("data-category"): categories.nth(i).get_attribute("data-value")
                 for i in range(categories.count())}
        expected = {name: str(getattr(s.score, name)) for name in
                    ("gwang", "yeol", "godori", "tti", "hongdan", "cheongdan", "chodan", "pi", "sseul")
                    if getattr(s.score, name)}
        assert shown == expected
        factors = page.locator("[data-testid=winner-factors] li")
        assert [(factors.nth(i).get_attribute("data-name"), factors.nth(i).get_attribute("data-value"))
                for i in range(factors.count())] == [(f.name, str(f.value)) for f in s.winner_factors]
        for i in range(factors.count()):
            assert factors.nth(i).inner_text().split("—", 1)[1].strip(), "a factor without its reason"
        bills = page.locator("[data-testid=bills] > li")
        assert bills.count() == len(s.bills)
        for i, bill in enumerate(s.bills):
            li = bills.nth(i)
            assert li.get_attribute("data-seat") == str(bill.seat)
            assert li.get_attribute("data-points") == str(bill.points)
            assert li.get_attribute("data-pays") == str(bill.pays)
            own = li.locator("ul.factors li")
            assert [(own.nth(k).get_attribute("data-name"), own.nth(k).get_attribute("data-value"))
                    for k in range(own.count())] == [(f.name, str(f.value)) for f in bill.factors]
            for k in range(own.count()):
                assert own.nth(k).inner_text().split("—", 1)[1].strip(), "a 박 without its reason"
    payments = page.locator("[data-testid=payments] li")
    assert [(payments.nth(i).get_attribute("data-payer"), payments.nth(i).get_attribute("data-payee"),
             payments.nth(i).get_attribute("data-points"), payments.nth(i).get_attribute("data-reason"))
            for i in range(payments.count())] == [(str(p.payer), str(p.payee), str(p.points), p.reason)
                                                  for p in s.payments]


# ------------------------------------------------------------------------------- the tests


def test_a_person_plays_a_round_against_a_bot_seat(browser: Browser, open_server: WebServer) -> None:
    # The page reaches the server through a proxy whose connections the test cuts once.
    proxy = DroppingProxy(open_server.http_port)
    context = browser.new_context(viewport=DESKTOP, locale="ko-KR")
    context.add_init_script(CAPTURE_SCRIPT)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        # The lobby: a 2-player standard game, seat 1 a greedy bot, one round.
        page.goto(proxy.url)
        page.wait_for_selector("[data-testid=create]:not([disabled])", timeout=WAIT_MS)
        page.select_option("[data-testid=preset]", "standard")
        page.select_option("[data-testid=players]", "2")
        page.select_option("[data-testid=seat-1]", "greedy")
        page.select_option("[data-testid=rounds]", "1")
        shot(page, "lobby.png")
        page.click("[data-testid=create]")
        page.wait_for_selector("[data-testid=table]", timeout=WAIT_MS)
        game_id = game_id_of(page)
        token = my_token(page, game_id)
        assert table_attr(page, "viewer") == "0"

        seen_before_reload: list[dict[str, Any]] = []
        decisions = 0
        dropped = reloaded = False
        while True:
            wait_for_my_move(page)
            if page.locator("[data-testid=settlement]").count():
                break
            # The opponent's hand is face down (but the cards a 흔들기 showed), with its count.
            opponent = page.locator("[data-testid=seat-1]")
            hand_size = int(opponent.get_attribute("data-hand-size") or "-1")
            shown = opponent.locator(".backs .card.face").count()
            assert opponent.locator(".backs .card.back").count() == min(hand_size - shown, 10)
            assert f"{hand_size}" in opponent.locator("[data-testid=hand-count-1]").inner_text()
            if decisions == 1 and not dropped:
                # The connection is lost (the event stream breaks mid-response): the page opens it
                # again by itself, from the last version it saw.
                reconnects = int(table_attr(page, "reconnects"))
                assert proxy.drop() > 0
                page.wait_for_function(
                    f"""() => {{ const t = document.querySelector('[data-testid=table]');
                      return Number(t.dataset.reconnects) > {reconnects} && t.dataset.connection === 'live'; }}""",
                    timeout=WAIT_MS)
                dropped = True
                continue
            if decisions == 2 and not reloaded:
                # Mid-round: the table as it is, then a reload resumes the same seat and its log.
                page.wait_for_selector("[data-testid=log] li", timeout=WAIT_MS)
                shot(page, "table.png")
                events_before = int(page.get_attribute("[data-testid=log]", "data-events") or "0")
                version = table_attr(page, "version")
                hand_before = sorted(page.locator("[data-testid=hand-card]").evaluate_all(
                    "cards => cards.map(c => c.dataset.card)"))
                seen_before_reload = received(page)
                page.reload()
                page.wait_for_selector("[data-testid=table]", timeout=WAIT_MS)
                page.wait_for_function(
                    "() => document.querySelector('[data-testid=table]')?.dataset.connection === 'live'",
                    timeout=WAIT_MS)
                assert table_attr(page, "viewer") == "0", "the reload did not resume the seat"
                assert int(table_attr(page, "version")) >= int(version)
                if table_attr(page, "version") == version:
                    assert sorted(page.locator("[data-testid=hand-card]").evaluate_all(
                        "cards => cards.map(c => c.dataset.card)")) == hand_before
                assert int(page.get_attribute("[data-testid=log]", "data-events") or "0") >= events_before
                reloaded = True
                continue
            before = table_attr(page, "version")
            play_one_decision(page, use_keys=decisions % 2 == 1)
            wait_version_after(page, before)
            decisions += 1
        assert dropped and reloaded, "the round ended before the connection was cut and the page reloaded"
        page.wait_for_timeout(300)  # let the settlement's entrance settle before the picture
        shot(page, "settlement.png")
        # The log shows the round as it happened, and the last action.
        assert page.locator("[data-testid=log] li").count() > 5
        assert page.locator("[data-testid=last-action] li").count() >= 1

        with GostopClient(open_server.target) as client:
            view = client.get_game(game_id, token=token)
            assert view.phase == pb.PHASE_OVER
            assert_page_settlement_is(page, view.settlement)
            log = client.log(game_id, token=token)  # a seat may read the log once the match is over
            # Through the lost connection and the reload, the page's log holds every event of the
            # seat's stream exactly once.
            stream = list(client.watch(game_id, 0, token=token))
        page.wait_for_function(
            f"() => Number(document.querySelector('[data-testid=log]').dataset.events) >= {len(stream)}",
            timeout=WAIT_MS)
        assert int(page.get_attribute("[data-testid=log]", "data-events") or "0") == len(stream)
        versions = page.locator("[data-testid=log] li").evaluate_all(
            "items => items.map(i => Number(i.dataset.version))")
        assert versions == sorted(versions) and set(versions) <= {item.version for item in stream}
        checked = assert_nothing_hidden_received(seen_before_reload + received(page), log, viewer=0)
        assert checked > 10
        assert errors == []
    finally:
        context.close()
        proxy.close()


def arcade_deal() -> pb.Deal:
    """A deal on which seat 0 meets each decision in turn (seat 1 plays its lowest legal action):
    turn 1, 1월 광 onto the two 1월 피 (the two-card choice); turn 2, 국진 onto 9월 피 (arcade
    decides 국진 at capture); turn 3, three 5월 cards in hand with none on the floor (흔들기 is
    offered), 3월 광 onto 3월 피; turn 4, 8월 광 onto 8월 피: three 광, 3 points, go/stop."""
    hands = [
        [0, 32, 8, 28, 16, 17, 18, 4, 12, 20],
        [5, 6, 13, 14, 24, 25, 26, 44, 45, 47],
    ]
    floor = [2, 3, 34, 10, 30, 41, 46, 37]
    stock = [21, 36, 42, 22, 43, 38, 39, 1, 7, 9, 11, 15, 19, 23, 27, 29, 31, 33, 35, 40]
    assert sorted([*hands[0], *hands[1], *floor, *stock]) == list(range(48))
    return pb.Deal(hands=[pb.Hand(cards=h) for h in hands], floor=floor, stock=stock, dealer=0)


def hand_key(page: Page, card: int) -> str:
    return page.locator(f"[data-testid=hand-card][data-card='{card}'] .key").inner_text()


def test_each_decision_is_a_clear_prompt(browser: Browser, operator_server: WebServer) -> None:
    with GostopClient(operator_server.target, operator_key=OPERATOR_KEY) as client:
        game = client.create_game("arcade", 2, deal=arcade_deal(), rounds=2)
        context = browser.new_context(viewport=PHONE, locale="en-US")
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))

        def opponent_moves() -> None:
            """Seat 1 plays its lowest legal action until it is seat 0's turn again."""
            while True:
                view = client.get_game(game, 1)
                if view.phase == pb.PHASE_OVER or view.to_move != 1:
                    return
                client.submit_action(game, 1, view.legal_actions[0].id, expected_version=view.version)

        def play(card: int) -> None:
            before = table_attr(page, "version")
            page.click(f"[data-testid=hand-card][data-card='{card}']")
            page.click(f"[data-testid=choice][data-action='{card}']")
            wait_version_after(page, before)

        try:
            # An invite link seats its opener (the token leaves the address bar at once).
            page.goto(f"{operator_server.url}#/g/{game.game_id}/0?t={game.token(0)}")
            page.wait_for_selector("[data-testid=hand-card]:not([disabled])", timeout=WAIT_MS)
            assert "?t=" not in page.url
            assert table_attr(page, "viewer") == "0"
            # A phone's width: nothing sticks out sideways.
            overflow = page.evaluate(
                "() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert overflow <= 0, f"the table is {overflow}px wider than a phone"
            shot(page, "table-phone.png", full_page=True)
            page.set_viewport_size(DESKTOP)
            # English labels, and Korean after a click.
            assert "Your turn" in page.locator("[data-testid=status]").inner_text()
            page.click("[data-testid=lang]")
            assert "내 차례" in page.locator("[data-testid=status]").inner_text()
            page.click("[data-testid=lang]")

            # Turn 1: 1월 광 captures (marked); choosing it shows what it would take; then the choice.
            light = page.locator("[data-testid=hand-card][data-card='0']")
            assert "captures" in (light.get_attribute("class") or "")
            iris = page.locator("[data-testid=hand-card][data-card='16']")
            assert "captures" not in (iris.get_attribute("class") or "")
            light.click()
            decision = page.locator("[data-testid=decision]").inner_text()
            assert "choose one of two" in decision and "1월 피" in decision
            assert page.locator(".month-group[data-month='1'].target").count() == 1
            before = table_attr(page, "version")
            page.keyboard.press("Enter")
            wait_version_after(page, before)
            assert table_attr(page, "phase") == "CHOOSE_HAND"
            options = page.locator("[data-testid=choice]")
            assert sorted(options.evaluate_all("b => b.map(x => x.dataset.action)")) == ["162", "163"]
            before = table_attr(page, "version")
            page.keyboard.press("1")
            wait_version_after(page, before)
            opponent_moves()

            # Turn 2: 국진 onto 9월 피, by keys; the 국진 prompt gives the score either way.
            wait_for_my_move(page)
            key = hand_key(page, 32)
            page.keyboard.press(key)
            before = table_attr(page, "version")
            page.keyboard.press(key)
            wait_version_after(page, before)
            page.wait_for_selector("[data-testid=gukjin-detail]", timeout=WAIT_MS)
            pile = list(client.get_game(game, 0).seats[0].captured)
            sseul = client.get_game(game, 0).seats[0].score.sseul_count
            keep_text = page.locator("[data-testid=gukjin-keep]").inner_text()
            convert_text = page.locator("[data-testid=gukjin-convert]").inner_text()
            assert f"score {score(pile, False, sseul).total}" in keep_text
            assert f"score {score(pile, True, sseul).total}" in convert_text
            assert f"피 {score(pile, True, sseul).pi_value}" in convert_text
            before = table_attr(page, "version")
            page.keyboard.press("2")  # make it a 쌍피
            wait_version_after(page, before)
            assert client.get_game(game, 0).gukjin == "converted"
            # The event is flashed on the table as it happens, and logged.
            page.wait_for_selector("[data-testid=flash] >> text=국진 → 쌍피", timeout=WAIT_MS)
            assert "국진" in page.locator("[data-testid=last-action]").inner_text()
            opponent_moves()

            # Turn 3: three 5월 cards, none on the floor: 흔들기 is offered; Esc takes it back.
            wait_for_my_move(page)
            page.click("[data-testid=hand-card][data-card='16']")
            shake = page.locator("[data-testid=choice][data-action='80']")
            assert shake.count() == 1 and "Shake" in shake.inner_text()
            assert page.locator("[data-testid=choice][data-action='16']").count() == 1
            page.keyboard.press("Escape")
            assert page.locator("[data-testid=choice][data-action='80']").count() == 0
            play(8)
            opponent_moves()

            # Turn 4: 8월 광 makes three 광: go or stop, with what a stop collects now.
            wait_for_my_move(page)
            play(28)
            page.wait_for_selector("[data-testid=gostop-detail]", timeout=WAIT_MS)
            assert table_attr(page, "phase") == "GO_STOP"
            assert page.locator("[data-testid=choice][data-action='230']").count() == 1
            stop_text = page.locator("[data-testid=stop-total]").inner_text()
            stop_total = int(re.match(r"\d+", stop_text.strip()).group(0))  # type: ignore[union-attr]
            shot(page, "go-stop.png")
            page.click("[data-testid=choice][data-action='231']")
            page.wait_for_selector("[data-testid=settlement]", timeout=WAIT_MS)
            settlement = client.get_game(game, 0).settlement
            assert settlement.winner == 0
            assert stop_total == sum(b.pays for b in settlement.bills), "the stop prompt promised another score"
            assert {f.name for b in settlement.bills for f in b.factors} >= {"pibak", "gwangbak"}
            assert_page_settlement_is(page, settlement)

            # A spectator's link shows the table with every hand face down.
            watcher = browser.new_page(viewport=DESKTOP)
            watcher.goto(f"{operator_server.url}#/g/{game.game_id}")
            watcher.wait_for_selector("[data-testid=settlement]", timeout=WAIT_MS)
            assert watcher.get_attribute("[data-testid=table]", "data-viewer") == "-1"
            assert watcher.locator("[data-testid=hand-card]").count() == 0
            assert watcher.locator("[data-testid=next-round]").count() == 0, "a spectator cannot deal"
            watcher.close()

            # Then the next round of the match, by its key.
            before = table_attr(page, "version")
            page.keyboard.press("1")
            wait_version_after(page, before)
            page.wait_for_selector("[data-testid=settlement]", state="detached", timeout=WAIT_MS)
            assert client.get_game(game, 0).match.round_no == 2
            assert "Round 2 of 2" in page.locator(".table-bar").inner_text()
            assert errors == []
        finally:
            context.close()


def test_the_cards_carry_the_names_people_use(browser: Browser, open_server: WebServer) -> None:
    """The deck page (#/cards) draws all 51 cards: each with engine/render.py's everyday name (똥광,
    비광, …), its kind, its 띠 colour and its 쌍피/쓰리피 value, as the engine has them."""
    page = browser.new_page(viewport=DESKTOP, locale="ko-KR")
    try:
        page.goto(f"{open_server.url}#/cards")
        page.wait_for_selector("[data-testid=deck] figure", timeout=WAIT_MS)
        figures = page.locator("[data-testid=deck] figure")
        assert figures.count() == ALL_CARDS
        ribbons = {**{c: "홍단" for c in HONGDAN}, **{c: "청단" for c in CHEONGDAN}, **{c: "초단" for c in CHODAN},
                   46: "비띠"}
        for i in range(ALL_CARDS):
            figure = figures.nth(i)
            card = int(figure.get_attribute("data-card") or "-1")
            svg = figure.locator("svg.card")
            assert figure.get_attribute("data-name") == card_name(card)
            assert svg.get_attribute("aria-label") == card_name(card)
            kind = {Kind.GWANG: "gwang", Kind.YEOL: "yeol", Kind.TTI: "tti", Kind.PI: "pi"}[KIND[card]]
            assert f"kind-{kind}" in (svg.get_attribute("class") or ""), card
            if KIND[card] is Kind.TTI:
                assert svg.locator(".mark-ribbon text").inner_html() == ribbons[card], card
            if card < 48 and PI_VALUE[card] >= 2:
                assert svg.locator(".mark-ssangpi").count() == 1, card
            if card >= 48:
                assert str(PI_VALUE[card]) in svg.inner_html()
        shot(page, "cards.png", full_page=True)
    finally:
        page.close()


def test_invite_links_seat_each_person(browser: Browser, open_server: WebServer) -> None:
    """A table of three with a person at seat 1 and a bot at seat 2: the lobby gives seat 1's invite
    link and a spectator link; seat 1's link seats its opener at seat 1 (in another browser)."""
    host = browser.new_context(viewport=DESKTOP, locale="en-US")
    guest = browser.new_context(viewport=DESKTOP, locale="en-US")
    try:
        page = host.new_page()
        page.goto(open_server.url)
        page.wait_for_selector("[data-testid=create]:not([disabled])", timeout=WAIT_MS)
        page.select_option("[data-testid=preset]", "standard")
        page.select_option("[data-testid=players]", "3")
        page.select_option("[data-testid=seat-1]", "person")
        page.select_option("[data-testid=seat-2]", "random")
        page.click("[data-testid=create]")
        page.wait_for_selector("[data-testid=created]", timeout=WAIT_MS)
        links = page.locator("[data-testid=created] .link-row input").evaluate_all("inputs => inputs.map(i => i.value)")
        assert len(links) == 2, links  # seat 1, and the spectators
        invite, spectate = links
        assert "/1?t=" in invite and "?t=" not in spectate
        page.click("[data-testid=sit-down]")
        page.wait_for_selector("[data-testid=table]", timeout=WAIT_MS)
        assert table_attr(page, "viewer") == "0"
        other = guest.new_page()
        other.goto(invite)
        other.wait_for_selector("[data-testid=table]", timeout=WAIT_MS)
        assert other.get_attribute("[data-testid=table]", "data-viewer") == "1"
        assert "?t=" not in other.url
        assert other.locator("[data-testid=seat-2]").inner_text().count("random") == 1
        # A token the server refuses (here a forged one) leaves the page watching, and says so.
        game_id = game_id_of(page)
        forged = browser.new_context(viewport=DESKTOP, locale="en-US")
        try:
            stranger = forged.new_page()
            stranger.goto(f"{open_server.url}#/g/{game_id}/0?t=gst1.{game_id}.0.forged")
            stranger.wait_for_selector("[data-testid=table]", timeout=WAIT_MS)
            assert stranger.get_attribute("[data-testid=table]", "data-viewer") == "-1"
            assert "no longer accepts" in stranger.locator(".toast").inner_text()
            assert stranger.evaluate(f"() => sessionStorage.getItem('gostop.token.{game_id}')") is None
        finally:
            forged.close()
    finally:
        host.close()
        guest.close()


# ------------------------------------------------------------------ one screen, every size

SIZES: dict[str, ViewportSize] = {
    "phone": {"width": 390, "height": 844},
    "phone-landscape": {"width": 844, "height": 390},
    "desktop": {"width": 1280, "height": 800},
}

BOXES_SCRIPT = """() => {
  const box = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const all = (sel) => [...document.querySelectorAll(sel)].filter((el) => el.getClientRects().length > 0);
  const regions = {};
  const name = (sel, el, i) => `${sel}#${i}`;
  for (const sel of ['.table-bar', '[data-testid=table] .opponent', '.floor-months', '[data-testid=stock]',
                     '[data-testid=mine-info]', '[data-testid=decision]', '[data-testid=hand]']) {
    all(sel).forEach((el, i) => { regions[name(sel, el, i)] = box(el); });
  }
  const inside = {};
  for (const sel of ['[data-testid=choice]', '[data-testid=choice-aux]', '[data-testid=hand-card]',
                     '[data-testid=next-round]', '[data-testid=settlement]', '[data-testid=settlement] .choices',
                     '[data-testid=show-settlement]', '[data-testid=leave]']) {
    all(sel).forEach((el, i) => { inside[name(sel, el, i)] = box(el); });
  }
  const floorCards = [...document.querySelectorAll('.month-group')]
    .map((g) => [...g.querySelectorAll('.card')].map(box));
  const d = document.documentElement;
  // A hand card's number badge against its card's top (the month is drawn in its top-left corner).
  const badges = [...document.querySelectorAll('[data-testid=hand-card]')]
    .filter((b) => b.querySelector('.key') && b.querySelector('.key').getClientRects().length > 0)
    .map((b) => b.querySelector('.key').getBoundingClientRect().bottom
                - b.querySelector('.card').getBoundingClientRect().top);
  const body = document.querySelector('.decision-body');
  return { regions, inside, floorCards, scroll: [d.scrollWidth - d.clientWidth, d.scrollHeight - d.clientHeight],
           hidden: body ? body.scrollHeight - body.clientHeight : 0, badges,
           viewport: [window.innerWidth, window.innerHeight] };
}"""


def overlap(a: list[float], b: list[float]) -> float:
    """The area two boxes share (0 when they only touch)."""
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def assert_fits(page: Page, where: str) -> None:
    """At every size: no scrolling (of the page or inside the prompt); the table's regions and the
    prompt's buttons inside the viewport; no two regions overlapping; no floor card covering another
    of its month."""
    for size_name, size in SIZES.items():
        page.set_viewport_size(size)
        page.wait_for_timeout(250)  # the layout and the hand's small transitions
        got = page.evaluate(BOXES_SCRIPT)
        shot(page, f"fit-{where}-{size_name}.png")
        at = f"{where} at {size_name}"
        assert got["scroll"][0] <= 0 and got["scroll"][1] <= 0, f"{at}: the page scrolls by {got['scroll']}"
        assert got["hidden"] <= 1, f"{at}: {got['hidden']}px of the prompt are scrolled out of view"
        assert all(into <= 1 for into in got["badges"]), f"{at}: a number badge covers its card's month"
        width, height = got["viewport"]
        modal = "[data-testid=settlement]#0" in got["inside"]
        boxes = {**({} if modal else got["regions"]), **got["inside"]}
        for label, (left, top, right, bottom) in boxes.items():
            assert left >= -1 and top >= -1 and right <= width + 1 and bottom <= height + 1, \
                f"{at}: {label} at {(left, top, right, bottom)} is outside {width}x{height}"
        if not modal:
            regions = list(got["regions"].items())
            for i, (a_name, a) in enumerate(regions):
                for b_name, b in regions[i + 1:]:
                    assert overlap(a, b) <= 1, f"{at}: {a_name} overlaps {b_name}"
        for group in got["floorCards"]:
            for i in range(1, len(group)):
                assert overlap(group[i - 1], group[i]) <= 1, f"{at}: a floor card covers the one before it"


def layout_deal() -> pb.Deal:
    """An arcade deal on which seat 0 meets every prompt (seat 1 plays its lowest legal action):
    turn 1, 1월 광 onto the two 1월 피 (the two-card choice); turn 2, 국진 onto 9월 피 (국진);
    turn 3, three 5월 cards and none on the floor (흔들기) and three 6월 cards with the fourth on
    the floor (폭탄), then 3월 광 onto 3월 피; turn 4, 8월 광 onto 8월 피: three 광, go/stop."""
    hands = [[0, 32, 8, 28, 16, 17, 18, 20, 21, 22], [5, 6, 13, 14, 24, 25, 26, 44, 45, 47]]
    floor = [2, 3, 34, 10, 30, 41, 46, 23]
    stock = [36, 42, 4, 43, 38, 39, 1, 7, 9, 11, 15, 19, 12, 27, 29, 31, 33, 35, 40, 37]
    assert sorted([*hands[0], *hands[1], *floor, *stock]) == list(range(48))
    return pb.Deal(hands=[pb.Hand(cards=h) for h in hands], floor=floor, stock=stock, dealer=0)


@pytest.mark.parametrize("touch", [False, True], ids=["mouse", "touch"])
def test_every_prompt_fits_one_screen(browser: Browser, operator_server: WebServer, touch: bool) -> None:
    """Phone upright (390x844), phone sideways (844x390) and desktop (1280x800): at every prompt of a
    scripted round — play, the two-card choice, 국진, 흔들기, 폭탄, go/stop, the settlement — the
    table and the prompt fit the viewport, nothing scrolls and nothing overlaps (bounding boxes).
    On a touch screen the prompts speak of taps, not number keys."""
    with GostopClient(operator_server.target, operator_key=OPERATOR_KEY) as client:
        game = client.create_game("arcade", 2, deal=layout_deal(), rounds=2)
        context = browser.new_context(viewport=SIZES["phone"], locale="ko-KR", has_touch=touch, is_mobile=touch)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        where = "touch" if touch else "mouse"

        def opponent_moves() -> None:
            while True:
                view = client.get_game(game, 1)
                if view.phase == pb.PHASE_OVER or view.to_move != 1:
                    return
                client.submit_action(game, 1, view.legal_actions[0].id, expected_version=view.version)

        def act(selector: str) -> None:
            before = table_attr(page, "version")
            page.click(selector)
            wait_version_after(page, before)

        def pick(card: int) -> None:
            page.click(f"[data-testid=hand-card][data-card='{card}']")
            page.wait_for_selector("[data-testid=choice]:not([disabled])", timeout=WAIT_MS)

        try:
            page.goto(f"{operator_server.url}#/g/{game.game_id}/0?t={game.token(0)}")
            page.wait_for_selector("[data-testid=hand-card]:not([disabled])", timeout=WAIT_MS)
            prompt = page.locator("[data-testid=decision]").inner_text()
            if touch:
                assert "누르세요" in prompt and "숫자" not in prompt, prompt
                assert not page.locator("[data-testid=hand-card] .key").first.is_visible()
            else:
                assert "숫자 키" in prompt, prompt
            assert_fits(page, f"{where}-play")
            pick(0)
            assert_fits(page, f"{where}-picked")
            act("[data-testid=choice][data-action='0']")
            assert table_attr(page, "phase") == "CHOOSE_HAND"
            assert_fits(page, f"{where}-choose")
            act("[data-testid=choice][data-action='162']")
            opponent_moves()
            wait_for_my_move(page)
            # The last-action panel reads top-down in the order things happened: my play, then seat 1's.
            page.wait_for_function(
                "() => document.querySelectorAll('[data-testid=last-action] .action-group').length === 2")
            versions = page.locator("[data-testid=last-action] .action-group").evaluate_all(
                "groups => groups.map(g => Number(g.dataset.version))")
            assert versions == sorted(versions), versions
            pick(32)
            act("[data-testid=choice][data-action='32']")
            page.wait_for_selector("[data-testid=gukjin-detail]", timeout=WAIT_MS)
            assert_fits(page, f"{where}-gukjin")
            act("[data-testid=choice][data-action='221']")
            opponent_moves()
            wait_for_my_move(page)
            pick(16)
            assert page.locator("[data-testid=choice][data-action='80']").count() == 1  # 흔들기
            assert_fits(page, f"{where}-shake")
            pick(20)
            assert page.locator("[data-testid=choice][data-action='134']").count() == 1  # 폭탄 (6월)
            assert_fits(page, f"{where}-bomb")
            pick(8)
            act("[data-testid=choice][data-action='8']")
            opponent_moves()
            wait_for_my_move(page)
            pick(28)
            act("[data-testid=choice][data-action='28']")
            page.wait_for_selector("[data-testid=gostop-detail]", timeout=WAIT_MS)
            assert_fits(page, f"{where}-gostop")
            act("[data-testid=choice][data-action='231']")
            page.wait_for_selector("[data-testid=settlement]", timeout=WAIT_MS)
            page.wait_for_timeout(300)
            assert_fits(page, f"{where}-settlement")
            # Closed, the settlement leaves a button in the bar that covers nothing.
            page.click("[data-testid=settlement] header button")
            page.wait_for_selector("[data-testid=show-settlement]", timeout=WAIT_MS)
            assert_fits(page, f"{where}-over")
            # The button that reopens the settlement covers neither the lobby link nor the keys' hint.
            for size in SIZES.values():
                page.set_viewport_size(size)
                button = page.locator("[data-testid=show-settlement]").bounding_box()
                assert button is not None
                for other in ("[data-testid=leave]", "[data-testid=keys]"):
                    if page.locator(other).is_visible():
                        box = page.locator(other).bounding_box()
                        assert box is not None
                        assert overlap([button["x"], button["y"], button["x"] + button["width"],
                                        button["y"] + button["height"]],
                                       [box["x"], box["y"], box["x"] + box["width"], box["y"] + box["height"]]) == 0, \
                            f"the settlement's button covers {other}"
            assert errors == []
        finally:
            context.close()


# ------------------------------------------------------------------ rough edges a new user hit

API = "/gostop.v1.GameService/"


def test_after_a_server_restart_the_page_says_the_game_is_gone_and_stops_calling(browser: Browser) -> None:
    """A restarted memory store has lost the game and signs tokens with a new secret: the page says
    the game no longer exists, offers the lobby, no longer offers cards, and stops calling the
    server (BAD_CREDENTIALS and NOT_FOUND are not retried)."""
    first = start_web_server()
    proxy = DroppingProxy(first.http_port)
    second: WebServer | None = None
    context = browser.new_context(viewport=PHONE, locale="en-US")
    calls: list[str] = []
    try:
        with GostopClient(first.target) as client:
            game = client.create_game("standard", 2)
        page = context.new_page()
        page.on("request", lambda r: calls.append(r.url) if API in r.url else None)
        page.goto(f"{proxy.url}#/g/{game.game_id}/0?t={game.token(0)}")
        page.wait_for_selector("[data-testid=table][data-connection=live] [data-testid=hand-card]", timeout=WAIT_MS)
        first.stop()
        proxy.drop()
        second = start_web_server(GOSTOP_TOKEN_SECRET=SECRET + "-after-a-restart")
        proxy.upstream_port = second.http_port
        page.wait_for_selector("[data-testid=gone]", timeout=WAIT_MS)
        assert "no longer exists" in page.locator("[data-testid=gone]").inner_text()
        assert page.locator("[data-testid=hand-card]").count() == 0
        assert page.locator(".toast.error").count() == 0
        settled = len(calls)
        page.wait_for_timeout(6000)
        assert len(calls) == settled, f"the page kept calling: {calls[settled:]}"
        page.click("[data-testid=to-lobby]")
        page.wait_for_selector("[data-testid=create]", timeout=WAIT_MS)
    finally:
        context.close()
        proxy.close()
        first.stop()
        if second is not None:
            second.stop()


def test_create_game_on_a_server_with_api_keys_points_to_the_key_field(browser: Browser) -> None:
    """A server that wants an API key: "Create game" says so in words (not the raw error) and opens
    the field where the key goes; with the key, the game is created."""
    server = start_web_server(GOSTOP_API_KEYS="a-web-test-key")
    page = browser.new_page(viewport=PHONE, locale="en-US")
    try:
        page.goto(server.url)
        page.wait_for_selector("[data-testid=create]:not([disabled])", timeout=WAIT_MS)
        assert not page.locator("[data-testid=api-key]").is_visible()
        page.click("[data-testid=create]")
        error = page.locator("[data-testid=lobby-error]")
        error.wait_for(timeout=WAIT_MS)
        assert "needs an API key" in error.inner_text() and "Advanced" in error.inner_text()
        assert "BAD_CREDENTIALS" not in error.inner_text()
        key = page.locator("[data-testid=api-key]")
        assert key.is_visible()
        shot(page, "lobby-needs-key.png")
        assert page.evaluate("() => document.activeElement?.dataset.testid") == "api-key"
        key.fill("a-web-test-key")
        page.click("[data-testid=create]")
        page.wait_for_selector("[data-testid=table]", timeout=WAIT_MS)
    finally:
        page.close()
        server.stop()


def test_invite_page_says_a_link_is_a_seat_secret(browser: Browser, open_server: WebServer) -> None:
    page = browser.new_page(viewport=PHONE, locale="en-US")
    try:
        page.goto(open_server.url)
        page.wait_for_selector("[data-testid=create]:not([disabled])", timeout=WAIT_MS)
        page.select_option("[data-testid=seat-1]", "person")
        page.click("[data-testid=create]")
        page.wait_for_selector("[data-testid=created]", timeout=WAIT_MS)
        warning = page.locator("[data-testid=invite-secret]").inner_text()
        assert "secret" in warning and "only" in warning
        shot(page, "invite-phone.png")
    finally:
        page.close()


def test_lobby_rules_are_not_cut_off_on_a_phone(browser: Browser, open_server: WebServer) -> None:
    """Every preset's option fits the select on a phone; what the preset is reads in full below it."""
    page = browser.new_page(viewport=PHONE, locale="en-US")
    try:
        page.goto(open_server.url)
        page.wait_for_selector("[data-testid=create]:not([disabled])", timeout=WAIT_MS)
        overflow = page.evaluate("""() => {
          const select = document.querySelector('[data-testid=preset]');
          const style = getComputedStyle(select);
          const ctx = document.createElement('canvas').getContext('2d');
          ctx.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
          const room = select.clientWidth - 40;  // the arrow and the padding
          return [...select.options].map((o) => ctx.measureText(o.text).width - room).filter((x) => x > 0);
        }""")
        assert overflow == [], f"options wider than the select by {overflow} px"
        for preset in ("standard", "simple", "classic", "house", "arcade"):
            page.select_option("[data-testid=preset]", preset)
            text = page.locator("[data-testid=preset-text]")
            assert text.inner_text().strip()
            box = text.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
            assert text.evaluate("e => e.scrollWidth <= e.clientWidth")
        shot(page, "lobby-phone.png")
    finally:
        page.close()


def box_of(page: Page, selector: str) -> list[float]:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, selector
    return [box["x"], box["y"], box["x"] + box["width"], box["y"] + box["height"]]


def test_floor_cards_of_a_month_do_not_cover_each_other(browser: Browser, operator_server: WebServer) -> None:
    """Two floor cards of a month lie side by side: the second covers neither the first's badge nor its name."""
    with GostopClient(operator_server.target, operator_key=OPERATOR_KEY) as client:
        game = client.create_game("arcade", 2, deal=layout_deal())
    for size in SIZES.values():
        page = browser.new_page(viewport=size, locale="ko-KR")
        try:
            page.goto(f"{operator_server.url}#/g/{game.game_id}/0?t={game.token(0)}")
            page.wait_for_selector(".month-group[data-month='1'] .card", timeout=WAIT_MS)
            first = box_of(page, ".month-group[data-month='1'] .card:nth-child(1)")
            second = box_of(page, ".month-group[data-month='1'] .card:nth-child(2)")
            assert overlap(first, second) == 0, f"at {size}: the second 1월 card covers the first"
        finally:
            page.close()


def test_show_settlement_covers_neither_the_keys_nor_the_lobby_link(
        browser: Browser, operator_server: WebServer) -> None:
    """A finished round, its settlement closed: the button that reopens it covers nothing, and the
    last-action panel reads top-down in the order things happened."""
    with GostopClient(operator_server.target, operator_key=OPERATOR_KEY) as client:
        game = client.create_game("arcade", 2, deal=layout_deal(), rounds=2)
        while True:  # both seats play their lowest legal action, 스톱 at go/stop
            view = client.get_game(game, 0)
            if view.phase == pb.PHASE_OVER:
                break
            seat = view.to_move
            mine = client.get_game(game, seat)
            ids = [a.id for a in mine.legal_actions]
            client.submit_action(game, seat, 231 if 231 in ids else ids[0], expected_version=mine.version)
    page = browser.new_page(viewport={"width": 1280, "height": 800}, locale="en-US")
    try:
        page.goto(f"{operator_server.url}#/g/{game.game_id}/0?t={game.token(0)}")
        page.wait_for_selector("[data-testid=settlement]", timeout=WAIT_MS)
        page.click("[data-testid=settlement] header button")
        button = page.locator("button", has_text="Show settlement")
        button.wait_for(timeout=WAIT_MS)
        reopen = button.bounding_box()
        assert reopen is not None
        shown = [reopen["x"], reopen["y"], reopen["x"] + reopen["width"], reopen["y"] + reopen["height"]]
        for text in ("Keys:", "Lobby"):
            other = page.locator(f"text={text}").first
            if other.is_visible():
                box = other.bounding_box()
                assert box is not None
                assert overlap(shown, [box["x"], box["y"], box["x"] + box["width"], box["y"] + box["height"]]) == 0, \
                    f"the settlement's button covers {text}"
        page.wait_for_function(
            "() => document.querySelectorAll('[data-testid=last-action] .action-group').length === 2")
        groups = page.locator("[data-testid=last-action] .action-group")
        firsts = [groups.nth(i).locator("li").first.inner_text().strip() for i in range(2)]
        log = [line.strip() for line in page.locator("[data-testid=log] li").all_inner_texts()]
        assert log.index(firsts[0]) < log.index(firsts[1]), firsts
    finally:
        page.close()
