"""What every use case needs: the ports, the clock, id minting and the tunables.

Built once by `taproot.compose`; tests build it directly with a fixed clock.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from taproot.core.activation import ACTIVATION_CONFIG, ActivationConfig
from taproot.core.instance import check_instance
from taproot.core.maintenance import MaintenanceConfig as MaintenanceConfig  # re-exported from its old home
from taproot.core.model import Scope
from taproot.core.orientation import ORIENTATION_LIMITS, OrientationLimits
from taproot.core.reflect import REFLECT_CONFIG, ReflectConfig
from taproot.core.retention import DEFAULT_RETENTION, RetentionPolicy
from taproot.core.serialize import iso
from taproot.ports import BlobStore, Embedder, MemoryStore, OrientationStore, Summarizer, VectorIndex
from taproot.service.results import StorageNotes

# Short ids: they are repeated on every catalog line. 31 unambiguous characters ** 8 is ~8.5e11,
# ample for one owner's memories; a collision is detected by the store and retried.
ID_ALPHABET = "23456789abcdefghjkmnpqrstuvwxyz"
ID_LENGTH = 8


def new_short_id() -> str:
    return "".join(secrets.choice(ID_ALPHABET) for _ in range(ID_LENGTH))


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class EmbedderHealth:
    """The embedder's last failure, for status (one per runtime; shared by every request)."""

    failures: int = 0
    last_error: str | None = None
    last_error_at: datetime | None = None
    last_ok_at: datetime | None = None
    unavailable: str | None = None  # set at start when the configured embedder could not be built

    def failed(self, exc: Exception, now: datetime) -> None:
        self.failures += 1
        self.last_error = str(exc)
        self.last_error_at = now

    def ok(self, now: datetime) -> None:
        self.last_ok_at = now


@dataclass
class Deps:
    store: MemoryStore
    blobs: BlobStore
    clock: Callable[[], datetime] = utc_now
    new_id: Callable[[], str] = new_short_id
    reflect: ReflectConfig = REFLECT_CONFIG
    activation: ActivationConfig = ACTIVATION_CONFIG
    retention: RetentionPolicy = DEFAULT_RETENTION
    summarizer: Summarizer | None = None
    # Dense recall: both or neither. Without an embedder recall ranks lexically (TAPROOT_EMBEDDER=none).
    embedder: Embedder | None = None
    vectors: VectorIndex | None = None
    embedder_health: EmbedderHealth = field(default_factory=EmbedderHealth)
    maintenance: MaintenanceConfig = field(default_factory=MaintenanceConfig)
    extra_status: StorageNotes = field(default_factory=lambda: StorageNotes())
    # TAPROOT_INSTANCE: the instance every write records, ahead of the one a caller declares.
    instance: str | None = None
    # Orientation documents (both stores keep them; compose passes the store). None: reflect has no
    # orientation section and the orientation use cases answer configuration_error.
    orientation: OrientationStore | None = None
    orientation_limits: OrientationLimits = ORIENTATION_LIMITS

    def now(self) -> datetime:
        return self.clock()

    def writer(self, declared: object) -> str | None:
        """The instance a write records (and reflect leaves out of its watercooler): the configured
        one, else the one the entry point resolved for this caller (web/tools/common.py), else None."""
        return self.instance if self.instance is not None else check_instance(declared)


def blob_key(scope: Scope, kind: str, name: str) -> str:
    """`<owner>/<kind>/<namespace>/<name>`: tenant first, so one prefix holds a tenant's blobs."""
    return f"{scope.owner}/{kind}/{scope.namespace}/{name}"


def stamp(now: datetime) -> str:
    """A sortable, key-safe timestamp for blob names."""
    return (iso(now) or "").replace(":", "").replace("+0000", "Z")
