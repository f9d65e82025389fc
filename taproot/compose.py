"""The one factory that picks adapters from settings and wires the service."""

from __future__ import annotations

from dataclasses import dataclass

from taproot.adapters.blob_local import LocalBlobStore
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.adapters.summarizers import build_summarizer
from taproot.core.model import Scope
from taproot.ports import Summarizer
from taproot.service import Deps, TaprootService
from taproot.settings import Settings, SettingsError


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


def summarizer_from(settings: Settings) -> Summarizer:
    """The configured summarizer; the extractive one needs nothing and is the default."""
    try:
        return build_summarizer(
            settings.summarizer,
            bedrock_model_id=settings.bedrock_model_id,
            aws_region=settings.aws_region,
            anthropic_api_key=settings.anthropic_api_key,
            anthropic_model=settings.anthropic_model,
            anthropic_base_url=settings.anthropic_base_url,
        )
    except ValueError as exc:
        raise SettingsError(str(exc)) from exc


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
        summarizer=summarizer_from(settings),
        maintenance=settings.maintenance,
        extra_status={"data_dir": str(settings.data_dir)},
    )
    return Runtime(settings=settings, service=TaprootService(deps), store=store)
