"""The locks our own environments install from are what ``make lock`` makes of their manifests.

One lock per ecosystem: requirements.lock (Python, every extra and dependency group, with hashes),
each npm package's package-lock.json, and the Go client's go.sum. A lock edited by hand, or a
manifest changed without ``make lock``, fails here with the command that repairs it.
"""

from __future__ import annotations

import difflib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
NPM_PACKAGES = ("clients/typescript", "clients/web")
DEPENDENCY_KINDS = ("dependencies", "devDependencies", "optionalDependencies", "peerDependencies")


def test_python_lock_is_what_make_lock_makes(tmp_path: Path) -> None:
    """Resolving pyproject.toml again (as PyPI stood on the lock's date) gives the lock, byte for byte."""
    fresh = tmp_path / "requirements.lock"
    result = subprocess.run(["make", "--no-print-directory", "-s", "python-lock", f"LOCK_OUT={fresh}"],
                            cwd=ROOT, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, f"make python-lock failed:\n{result.stdout}{result.stderr}"
    locked = (ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines(keepends=True)
    wanted = fresh.read_text(encoding="utf-8").splitlines(keepends=True)
    diff = "".join(difflib.unified_diff(locked, wanted, "requirements.lock", "make lock", n=1))
    assert not diff, f"requirements.lock is not what make lock makes of pyproject.toml; run make lock:\n{diff[:4000]}"


def test_python_lock_pins_every_package_with_hashes() -> None:
    """Every entry is ``name==version`` with at least one hash: an install in hash-checking mode."""
    entries = [line for line in (ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines()
               if line and not line.startswith((" ", "#"))]
    assert entries, "requirements.lock lists no package"
    for entry in entries:
        assert "==" in entry and entry.endswith("\\"), f"not pinned with hashes: {entry}"


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("package", NPM_PACKAGES)
def test_npm_lock_root_matches_package_json(package: str) -> None:
    """What npm ci checks before it installs: the lock's root entry declares package.json's dependencies."""
    manifest = _json(ROOT / package / "package.json")
    lock = _json(ROOT / package / "package-lock.json")
    root = lock["packages"][""]
    assert lock["lockfileVersion"] == 3
    assert (lock["name"], lock["version"]) == (manifest["name"], manifest["version"])
    for kind in DEPENDENCY_KINDS:
        assert root.get(kind, {}) == manifest.get(kind, {}), f"{package}: {kind} differ; run make lock"


@pytest.mark.slow
@pytest.mark.parametrize("package", NPM_PACKAGES)
def test_npm_lock_is_what_make_lock_makes(package: str, tmp_path: Path) -> None:
    """npm, asked to bring a copy of the lock up to date with package.json, changes nothing in it."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is needed (the TypeScript client and the web table are built with it)")
    for each in NPM_PACKAGES:  # the web table's lock links the TypeScript client by its relative path
        (tmp_path / each).mkdir(parents=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(ROOT / each / name, tmp_path / each / name)
    result = subprocess.run([npm, "install", "--package-lock-only", "--ignore-scripts", "--no-audit", "--no-fund"],
                            cwd=tmp_path / package, capture_output=True, text=True, timeout=300,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 0, f"{package}: npm install --package-lock-only failed\n{result.stderr}"
    locked = (ROOT / package / "package-lock.json").read_text(encoding="utf-8").splitlines(keepends=True)
    wanted = (tmp_path / package / "package-lock.json").read_text(encoding="utf-8").splitlines(keepends=True)
    diff = "".join(difflib.unified_diff(locked, wanted, "package-lock.json", "make lock", n=1))
    assert not diff, f"{package}/package-lock.json is not what make lock makes of package.json:\n{diff[:4000]}"


@pytest.mark.slow
def test_go_sum_is_what_go_mod_tidy_makes() -> None:
    """go.sum and go.mod need nothing added or removed, and the module cache matches go.sum."""
    go = shutil.which("go")
    if go is None:
        pytest.fail("the Go toolchain is needed (make test builds the Go client)")
    for command in ([go, "mod", "tidy", "-diff"], [go, "mod", "verify"]):
        result = subprocess.run(command, cwd=ROOT / "clients" / "go", capture_output=True, text=True,
                                timeout=600, stdin=subprocess.DEVNULL)
        assert result.returncode == 0, f"{' '.join(command[1:])}: run make lock\n{result.stdout}{result.stderr}"
