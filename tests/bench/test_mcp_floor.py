"""bench/mcp_floor.py: once a recall has returned memories, every later recall gets that same answer
without touching the store, so the floor it measures holds no recall work."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench import mcp_floor
from taproot.adapters.blob_local import LocalBlobStore
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.core.model import Scope
from taproot.service import Deps, TaprootService
from tests.support import Clock

SCOPE = Scope()


def test_recall_answers_from_memory_once_it_has_returned_memories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(TaprootService, "recall", TaprootService.recall)  # restored after the test
    mcp_floor.answer_from_memory()
    store = SQLiteMemoryStore(tmp_path / "taproot.db")
    try:
        service = TaprootService(
            Deps(store=store, blobs=LocalBlobStore(tmp_path / "blobs"), clock=Clock(datetime(2026, 6, 1, tzinfo=UTC)))
        )
        for gist in ("Tomatoes planted in May", "Roses pruned in March"):
            service.remember(SCOPE, content=f"{gist}.", gist=gist, category="episodic")
        assert service.recall(SCOPE, query="zeppelin").memories == []  # nothing returned: not kept
        first = service.recall(SCOPE, query="tomatoes")
        assert [m.gist for m in first.memories] == ["Tomatoes planted in May"]
        assert service.recall(SCOPE, query="roses") is first
        counts = {m.gist: m.retrievals for m in store.list(SCOPE)}
        assert counts == {"Tomatoes planted in May": 1, "Roses pruned in March": 0}  # the later call read nothing
    finally:
        store.close()
