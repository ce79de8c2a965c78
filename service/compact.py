"""Compact stored forms: what the service writes to its store (snapshots, log entries, stored
responses), deflated against a preset dictionary per kind, and read back whatever form they were
written in. The format and why it is shaped so: docs/service.md#compact-stored-forms.
"""

from __future__ import annotations

import hashlib
import zlib
from functools import cache
from importlib import resources
from typing import Final, Literal

Kind = Literal["snap", "entry", "resp"]
KINDS: Final[tuple[Kind, ...]] = ("snap", "entry", "resp")
MAGIC: Final = 0xFF
VERSION: Final = 1
LEVEL: Final = 6
WBITS: Final = 13
"""The compressor's window, 2**13 = 8,192 bytes: the dictionaries' size (``unpack`` reads with 2**15)."""
MEM_LEVEL: Final = 5
"""zlib's memLevel: hash tables of 2**12 entries and a 2,048-symbol block buffer, enough for a value
of a few kB (a smaller buffer splits a snapshot into more blocks: larger and slower)."""
MAX_INFLATED: Final = 16 << 20
"""The most a stored value may inflate to (a corrupt or hostile value cannot exhaust memory)."""

DICTIONARY_SHA256: Final[dict[tuple[int, Kind], str]] = {
    (1, "snap"): "011689624d332d895388b01ae415a902529b7f2259f33be75cc8f2ca6da1a3b8",
    (1, "entry"): "5467884cec4ebffccb1a529c00274d8c05d5f44cef3a37654090113b59df66b9",
    (1, "resp"): "1adaa537a91d0cb9404af9d854fe949bd89374c1d2e4c0a6e5dbf8a076f7e67f",
}
"""The fixed dictionaries' digests: a test checks the shipped files against them."""


class CompactError(ValueError):
    """A stored value that cannot be inflated (corrupt, or of a dictionary this code lacks)."""


@cache
def dictionary(version: int, kind: Kind) -> bytes:
    try:
        return (resources.files("gostop.service") / "dictionaries" / f"v{version}-{kind}.bin").read_bytes()
    except FileNotFoundError:
        raise CompactError(f"no dictionary {kind} version {version}") from None


@cache
def _primed(kind: Kind) -> zlib._Compress:
    """A compressor that has read the current dictionary: copied per value (priming costs more than
    compressing a small value)."""
    return zlib.compressobj(LEVEL, zlib.DEFLATED, -WBITS, MEM_LEVEL, zlib.Z_DEFAULT_STRATEGY,
                            dictionary(VERSION, kind))


def pack(kind: Kind, data: bytes) -> bytes:
    """``data`` in the compact stored form."""
    compressor = _primed(kind).copy()
    return bytes((MAGIC, VERSION)) + compressor.compress(data) + compressor.flush()


def unpack(kind: Kind, stored: bytes) -> bytes:
    """The value ``pack`` was given; a value in the older plain form as it is; ``CompactError`` for
    one that cannot be read."""
    if not stored or stored[0] != MAGIC:
        return stored
    if len(stored) < 2:
        raise CompactError("a compact value without its dictionary version")
    try:
        inflater = zlib.decompressobj(-15, zdict=dictionary(stored[1], kind))
        data = inflater.decompress(stored[2:], MAX_INFLATED)
    except zlib.error as exc:
        raise CompactError(f"cannot inflate a stored {kind}: {exc}") from None
    if inflater.unconsumed_tail or not inflater.eof:
        raise CompactError(f"a stored {kind} is truncated or larger than {MAX_INFLATED} bytes")
    return data


def digest(text: str) -> str:
    """The request fingerprint's stored digest: the first 128 bits of SHA-256, in hex (enough to tell
    a retry from another request under the same id, in half the bytes of the whole digest)."""
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def same_digest(stored: str, computed: str) -> bool:
    """Whether a stored fingerprint is ``computed`` (stored before as the whole 64-digit digest, or
    now as its 32-digit prefix)."""
    return stored[:32] == computed and len(stored) in (32, 64)
