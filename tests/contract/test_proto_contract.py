"""Contract hygiene of ``proto/``: ``buf lint`` and ``buf breaking`` against the committed baseline.

``proto/baseline/gostop-v1.binpb`` is a ``buf build`` image of the released contract (``make
proto-baseline`` rebuilds it, for an intended break only). ``make test`` runs ``buf breaking proto
--against proto/baseline/gostop-v1.binpb``; these tests run it too, and show that it catches a
breaking edit of a copy of the proto while letting a compatible one through.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Final

import pytest

# Not in make check: the buf CLI.
pytestmark = pytest.mark.slow

ROOT: Final = Path(__file__).resolve().parents[2]
BUF: Final = ROOT / ".tools" / "node_modules" / ".bin" / "buf"
BASELINE: Final = ROOT / "proto" / "baseline" / "gostop-v1.binpb"
PROTO: Final = Path("gostop") / "v1" / "game.proto"


def buf(*args: str | Path) -> subprocess.CompletedProcess[str]:
    if not BUF.exists():
        pytest.fail(f"{BUF} is missing: run `make test` (its $(BUF) rule installs the buf CLI from npm)",
                    pytrace=False)
    return subprocess.run([str(BUF), *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=False)


def edited_copy(tmp_path: Path, old: str, new: str) -> Path:
    """A copy of the proto module (buf.yaml and the .proto files) with one edit of game.proto."""
    module = tmp_path / "proto"
    module.mkdir()
    shutil.copy(ROOT / "proto" / "buf.yaml", module / "buf.yaml")
    shutil.copytree(ROOT / "proto" / "gostop", module / "gostop")
    text = (module / PROTO).read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} must occur exactly once in {PROTO}"
    (module / PROTO).write_text(text.replace(old, new), encoding="utf-8")
    return module


def violations(result: subprocess.CompletedProcess[str]) -> set[str]:
    """The rule ids of ``--error-format json`` output (one JSON object a line)."""
    return {json.loads(line)["type"] for line in result.stdout.splitlines() if line.strip()}


def test_baseline_is_committed() -> None:
    assert BASELINE.is_file() and BASELINE.stat().st_size > 0


def test_lint_passes() -> None:
    result = buf("lint", "proto")
    assert result.returncode == 0, result.stdout + result.stderr


def test_current_proto_has_no_breaking_change() -> None:
    result = buf("breaking", "proto", "--against", BASELINE)
    assert result.returncode == 0, (
        f"{result.stdout}{result.stderr}\nthe proto breaks the released contract; if the break is intended, "
        "run `make proto-baseline` and say so in the change"
    )


@pytest.mark.parametrize(
    ("old", "new", "rule"),
    [
        ("int32 page_size = 3;", "int32 page_size = 8;", "FIELD_NO_DELETE"),  # renumbered
        ("int32 page_size = 3;", "int32 page_limit = 3;", "FIELD_SAME_NAME"),  # renamed (JSON name too)
        ("string label = 3;", "bytes label = 3;", "FIELD_SAME_TYPE"),
        ("  PHASE_OVER = 8;\n", "", "ENUM_VALUE_NO_DELETE"),
    ],
    ids=["renumbered-field", "renamed-field", "changed-type", "deleted-enum-value"],
)
def test_breaking_edit_is_detected(tmp_path: Path, old: str, new: str, rule: str) -> None:
    module = edited_copy(tmp_path, old, new)
    result = buf("breaking", module, "--against", BASELINE, "--error-format", "json")
    assert result.returncode != 0, "buf breaking accepted a breaking change"
    assert rule in violations(result), result.stdout + result.stderr


def test_compatible_edit_passes(tmp_path: Path) -> None:
    module = edited_copy(tmp_path, "int32 page_size = 3;", "int32 page_size = 3;\n  // A new field.\n  bool extra = 8;")
    result = buf("breaking", module, "--against", BASELINE)
    assert result.returncode == 0, result.stdout + result.stderr
