"""Golden transcripts: whole seeded rounds rendered as text, compared with ``tests/golden/``.

The rounds are rendered by ``testkit.golden`` (which ``make golden`` runs), so the test and
``make golden`` can never disagree on what a transcript is.
"""

from __future__ import annotations

import difflib

import pytest

from testkit.configs import CONFIGS
from testkit.golden import GOLDEN_CASES, GOLDEN_DIR, golden_name, render_round


def case_id(case: tuple[str, int, int]) -> str:
    return golden_name(*case).removesuffix(".txt")


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=case_id)
def test_transcript_matches_golden(case: tuple[str, int, int]) -> None:
    path = GOLDEN_DIR / golden_name(*case)
    assert path.exists(), f"{path} is missing: run `make golden` to create it"
    expected = path.read_text(encoding="utf-8")
    actual = render_round(*case)
    if actual != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True), actual.splitlines(keepends=True),
                fromfile=f"golden/{path.name}", tofile="engine now", n=2,
            )
        )
        pytest.fail(
            f"transcript {path.name} changed. If (and only if) the change is intended, "
            f"run `make golden` and commit the new transcripts.\n{diff}",
            pytrace=False,
        )


def test_every_configuration_has_transcripts() -> None:
    for preset, players in CONFIGS:
        seeds = [s for p, n, s in GOLDEN_CASES if (p, n) == (preset, players)]
        assert len(seeds) == 2, f"{preset} {players}p needs two golden rounds, has {seeds}"


def test_no_stale_transcripts() -> None:
    wanted = {golden_name(*case) for case in GOLDEN_CASES}
    stale = sorted(p.name for p in GOLDEN_DIR.glob("*.txt") if p.name not in wanted)
    assert not stale, f"golden files no case renders: {stale}; run `make golden` to remove them"


def test_transcripts_show_the_special_events() -> None:
    """The golden set keeps covering the rare moves (so that a change to them is seen)."""
    text = "".join(render_round(*case) for case in GOLDEN_CASES)
    for needle in (
        "뻑!", "recaptures", "쪽 month", "따닥 month", "쓸 by seat", "폭탄 month", "흔들기 month",
        "uses a 빈 내기", "converts 국진", "keeps 국진", " goes (", "나가리 (", "sits out (forced)",
        "sits out\n", "sells ", "wins at once: chongtong", "wins at once: three_ppeok",
        "wins at once: heodang", "loses at once: three_ppeok", "(first_ppeok)", "(first_ttadak)",
        "redeal:",
    ):
        assert needle in text, f"no golden transcript shows {needle!r}: pick seeds that do"
