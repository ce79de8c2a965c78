"""Fair deals: a server-dealt game's id commits to a secret server seed that the match seed is
derived from, and the game's log reveals the seed once the game is over (docs/reliability.md#fair-deals)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from typing import Any

from gostop.v1 import game_pb2 as pb

FAIR_SCHEME = "gostop-fair-v1"

_SOURCES = {"server": pb.DEAL_SOURCE_SERVER, "operator_seed": pb.DEAL_SOURCE_OPERATOR_SEED,
            "operator_deal": pb.DEAL_SOURCE_OPERATOR_DEAL}


def fair_game_id(server_seed: bytes) -> str:
    """The game id of a server-dealt game: the first 16 characters (96 bits) of the unpadded
    base64url of SHA-256(server seed), so the id every seat holds commits to the seed."""
    return base64.urlsafe_b64encode(hashlib.sha256(server_seed).digest()).decode()[:16]


def fair_match_seed(server_seed: bytes, client_seed: int | None) -> int:
    """The match seed of a server-dealt game: HMAC-SHA256 keyed by the server seed over the scheme
    and the creator's seed (if any), its first 8 bytes big-endian. Without the server seed nobody
    can choose or predict it, whatever client seed they send."""
    message = f"{FAIR_SCHEME}|{'' if client_seed is None else client_seed}".encode()
    return int.from_bytes(hmac.new(server_seed, message, hashlib.sha256).digest()[:8], "big")


def choose_seed(operator: bool, explicit_deal: bool, client_seed: int | None, commitment: pb.DealCommitment,
                first_entry: dict[str, Any]) -> tuple[str, int]:
    """A new game's id and match seed; fills ``commitment`` and what the game's first log entry
    keeps of the deal's source. An operator's seed is the match seed (a replay) and an operator's
    deal is used as given; any other game is server-dealt."""
    if operator and (explicit_deal or client_seed is not None):
        commitment.source = pb.DEAL_SOURCE_OPERATOR_DEAL if explicit_deal else pb.DEAL_SOURCE_OPERATOR_SEED
        first_entry["source"] = "operator_deal" if explicit_deal else "operator_seed"
        return secrets.token_urlsafe(12), client_seed if client_seed is not None else secrets.randbits(64)
    server_seed = secrets.token_bytes(32)
    commitment.source = pb.DEAL_SOURCE_SERVER
    commitment.server_seed_sha256 = hashlib.sha256(server_seed).digest()
    first_entry["source"] = "server"
    first_entry["fair"] = {"server_seed": server_seed.hex(), "client_seed": client_seed}
    return fair_game_id(server_seed), fair_match_seed(server_seed, client_seed)


def reveal(first: dict[str, Any], out: pb.GetGameLogResponse) -> None:
    """The deal commitment and its reveal, from the game's first log entry (a game created before
    the scheme has no source there, and its log says nothing of one)."""
    source = _SOURCES.get(first.get("source", ""))
    if source is None:
        return
    out.deal_commitment.scheme = FAIR_SCHEME
    out.deal_commitment.source = source
    fair = first.get("fair")
    if source == pb.DEAL_SOURCE_SERVER and fair is not None:
        server_seed = bytes.fromhex(fair["server_seed"])
        out.deal_commitment.server_seed_sha256 = hashlib.sha256(server_seed).digest()
        out.deal_reveal.server_seed = server_seed
        if fair["client_seed"] is not None:
            out.deal_reveal.client_seed = fair["client_seed"]
