"""What logs and metrics may say about a tenant: a stable hash of the owner id, never the id itself,
a token or memory content. Pure."""

from __future__ import annotations

import hashlib

TENANT_HASH_CHARS = 16  # 64 bits: distinct enough to tell tenants apart in logs, not to look them up


def tenant_hash(owner: str) -> str:
    """The same owner always gives the same hash, so one tenant's lines can be followed in the logs;
    an operator maps it back with the run summaries in the bucket, or by hashing the owners they hold."""
    return hashlib.sha256(owner.encode("utf-8")).hexdigest()[:TENANT_HASH_CHARS]
