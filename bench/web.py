"""The web table's first load: bytes transferred and time to interactive in headless
Chromium (Debian's, as the browser tests use), on loopback and on an emulated phone network.

Usage: ``PYTHONPATH=tests python -m bench.web [--runs N] [--profiles loopback,4g] [--json PATH]``.

Starts a ``gostop serve`` process (memory store) serving the built page (``make web``) and, for each
network profile, loads two pages ``--runs`` times, each in a fresh browser context (an empty
cache, as a first visit):

- the lobby (``/``): interactive when the "create" button is enabled (the script ran, the rule
  sets came back, the form is drawn);
- a table (an invite link of a new game against a greedy bot seat): interactive when the hand
  cards can be clicked (GetGame answered, the event stream opened, the cards drawn).

For each it prints the medians (min-max) of: bytes transferred (response headers and bodies as
Chromium counts them; by kind: the page and script, styles, fonts, the API), requests, the first
contentful paint, DOMContentLoaded, time to interactive and when the fonts were ready. Figures
are measurements, not assertions: the tests check behaviour, this shows the cost.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page, Request, sync_playwright

from gostop.client import GostopClient
from testkit.web import WebServer, chromium, page_built, start_web_server

# Chromium DevTools' "Slow 4G"-like profile: what a phone on a weak signal gets.
PROFILES: dict[str, dict[str, Any] | None] = {
    "loopback": None,
    "4g": {"offline": False, "latency": 150, "downloadThroughput": 1_600_000 / 8, "uploadThroughput": 750_000 / 8},
}

READY = {
    "lobby": "() => { const b = document.querySelector('[data-testid=create]'); return b !== null && !b.disabled; }",
    "table": "() => document.querySelector('[data-testid=hand-card]:not([disabled])') !== null",
}


@dataclass
class Load:
    """One page load's figures."""

    bytes_by_kind: dict[str, int] = field(default_factory=dict)
    requests: int = 0
    fcp_ms: float = 0.0
    dcl_ms: float = 0.0
    tti_ms: float = 0.0
    fonts_ms: float = 0.0

    @property
    def total_bytes(self) -> int:
        return sum(self.bytes_by_kind.values())


def kind_of(request: Request) -> str:
    url = request.url
    if "/gostop.v1.GameService/" in url:
        return "api"
    if url.endswith(".woff2"):
        return "fonts"
    if url.endswith(".css"):
        return "styles"
    return "page+script"


def load_once(browser: Browser, url: str, ready: str, profile: dict[str, Any] | None) -> Load:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="ko-KR")
    page: Page = context.new_page()
    result = Load()
    finished: list[Request] = []
    page.on("requestfinished", lambda request: finished.append(request))
    if profile is not None:
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send("Network.emulateNetworkConditions", profile)
    try:
        page.goto(url, wait_until="commit")
        page.wait_for_function(
            f"() => {{ if (({ready})()) {{ window.__tti = window.__tti ?? performance.now(); return true; }}"
            " return false; }",
            polling="raf", timeout=120_000)
        page.evaluate("() => document.fonts.ready.then(() => { window.__fonts = performance.now(); })")
        page.wait_for_function("() => window.__fonts !== undefined", timeout=120_000)
        timings = page.evaluate("""() => ({
            tti: window.__tti, fonts: window.__fonts,
            fcp: (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || 0,
            dcl: performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd })""")
        page.wait_for_load_state("load")
        page.wait_for_timeout(500)  # late requests (a font piece for text drawn last); an open stream never idles
        for request in finished:
            sizes = request.sizes()
            size = int(sizes["responseBodySize"]) + int(sizes["responseHeadersSize"])
            kind = kind_of(request)
            result.bytes_by_kind[kind] = result.bytes_by_kind.get(kind, 0) + size
        result.requests = len(finished)
        result.tti_ms, result.fonts_ms = float(timings["tti"]), float(timings["fonts"])
        result.fcp_ms, result.dcl_ms = float(timings["fcp"]), float(timings["dcl"])
        # A stream still open (the table's WatchGame) is not a finished request: counted by what arrived.
        return result
    finally:
        context.close()


def table_url(server: WebServer) -> str:
    with GostopClient(server.target) as client:
        game = client.create_game("standard", 2, bot_seats={1: "greedy"})
    return f"{server.url}#/g/{game.game_id}/0?t={game.token(0)}"


def spread(values: list[float], unit: str = "") -> str:
    med = statistics.median(values)
    if unit == "KiB":
        return f"{med / 1024:.1f} ({min(values) / 1024:.1f}-{max(values) / 1024:.1f})"
    return f"{med:.0f} ({min(values):.0f}-{max(values):.0f})"


def report(name: str, profile: str, loads: list[Load]) -> dict[str, Any]:
    kinds = sorted({k for load in loads for k in load.bytes_by_kind})
    rows = [("transferred, KiB", spread([float(x.total_bytes) for x in loads], "KiB"))]
    rows += [(f"  {kind}, KiB", spread([float(x.bytes_by_kind.get(kind, 0)) for x in loads], "KiB")) for kind in kinds]
    rows += [
        ("requests", spread([float(x.requests) for x in loads])),
        ("first contentful paint, ms", spread([x.fcp_ms for x in loads])),
        ("DOMContentLoaded, ms", spread([x.dcl_ms for x in loads])),
        ("time to interactive, ms", spread([x.tti_ms for x in loads])),
        ("fonts ready, ms", spread([x.fonts_ms for x in loads])),
    ]
    print(f"\n{name} ({profile}, {len(loads)} cold loads): median (min-max)")
    for label, value in rows:
        print(f"  {label:<30} {value}")
    return {
        "page": name, "profile": profile, "runs": len(loads),
        "bytes": statistics.median(x.total_bytes for x in loads),
        "bytes_by_kind": {k: statistics.median(x.bytes_by_kind.get(k, 0) for x in loads) for k in kinds},
        "requests": statistics.median(x.requests for x in loads),
        "fcp_ms": statistics.median(x.fcp_ms for x in loads),
        "tti_ms": statistics.median(x.tti_ms for x in loads),
        "fonts_ms": statistics.median(x.fonts_ms for x in loads),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="cold loads per page and profile (default 5)")
    parser.add_argument("--profiles", default="loopback,4g", help=f"network profiles: {', '.join(PROFILES)}")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    if not page_built():
        raise SystemExit("the web table is not built: make web")
    executable = chromium()
    if executable is None:
        raise SystemExit("no chromium: make chromium (Debian's package)")
    profiles = [p.strip() for p in args.profiles.split(",") if p.strip()]
    unknown = set(profiles) - set(PROFILES)
    if unknown:
        raise SystemExit(f"unknown profiles {sorted(unknown)}; known: {', '.join(PROFILES)}")
    server = start_web_server()
    results: list[dict[str, Any]] = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=executable)
            try:
                version = browser.version
                print(f"web table first load: chromium {version}, {shutil.which('chromium')}")
                for profile in profiles:
                    for name in ("lobby", "table"):
                        loads = [load_once(browser, server.url if name == "lobby" else table_url(server), READY[name],
                                           PROFILES[profile]) for _ in range(args.runs)]
                        results.append(report(name, profile, loads))
            finally:
                browser.close()
    finally:
        server.stop()
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
