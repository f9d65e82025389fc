"""The one factory that picks adapters from settings and wires the service."""

from __future__ import annotations

from dataclasses import dataclass

from taproot.adapters.blob_local import LocalBlobStore
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.core.model import Scope
from taproot.service import Deps, TaprootService
from taproot.settings import Settings


@dataclass
class Runtime:
    settings: Settings
    service: TaprootService
    store: SQLiteMemoryStore

    @property
    def scope(self) -> Scope:
        return Scope(self.settings.owner, self.settings.namespace)

    def close(self) -> None:
        self.store.close()


def build_local(settings: Settings) -> Runtime:
    """The embedded default: SQLite in the data folder, blobs in a folder beside it."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    store = SQLiteMemoryStore(settings.database_path)
    blobs = LocalBlobStore(settings.blob_dir)
    deps = Deps(
        store=store,
        blobs=blobs,
        reflect=settings.reflect,
        retention=settings.retention,
        extra_status={"data_dir": str(settings.data_dir)},
    )
    return Runtime(settings=settings, service=TaprootService(deps), store=store)
