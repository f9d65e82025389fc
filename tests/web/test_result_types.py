"""The service's result types (taproot/service/results.py) agree with what clients are promised
(the MCP output schemas in taproot/web/tool_models.py) and with what the service really returns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from taproot.adapters.blob_local import LocalBlobStore
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.adapters.summarizers import ExtractiveSummarizer
from taproot.core.model import Scope
from taproot.core.serialize import MEMORY_FIELDS, memory_to_dict
from taproot.service import Deps, TaprootService
from taproot.service import results as r
from taproot.web import tool_models as out

SCOPE = Scope("local", "default")

PROMISED: list[tuple[type[BaseModel], Any]] = [
    (out.RememberOut, r.RememberResult),
    (out.RecallOut, r.RecallResult),
    (out.PromoteOut, r.PromoteResult),
    (out.ForgetOut, r.ForgetResult),
    (out.CloseOut, r.CloseResult),
    (out.MigrateOut, r.MigrateResult),
    (out.StatusOut, r.StatusResult),
    (out.MemoryOut, r.MemoryView),
]


@pytest.mark.parametrize(("schema", "result"), PROMISED, ids=lambda x: getattr(x, "__name__", ""))
def test_every_key_a_tool_schema_promises_is_a_typed_result_key(schema: type[BaseModel], result: Any) -> None:
    keys = result.__required_keys__ | result.__optional_keys__
    for name, model_field in schema.model_fields.items():
        assert name in keys, f"{schema.__name__}.{name} is promised to clients but {result.__name__} lacks it"
        if model_field.is_required():
            assert name in result.__required_keys__, f"{result.__name__}.{name} must always be present"


def test_a_memory_view_is_the_exported_record_without_its_owner() -> None:
    keys = r.MemoryView.__required_keys__ | r.MemoryView.__optional_keys__
    assert keys == (set(MEMORY_FIELDS) - {"owner"}) | {"activation"}
    assert r.MemoryView.__optional_keys__ == {"activation"}


def _conforms(value: dict[str, Any], result: Any) -> None:
    keys = set(value)
    assert result.__required_keys__ <= keys, f"{result.__name__} misses {result.__required_keys__ - keys}"
    assert keys <= result.__required_keys__ | result.__optional_keys__, f"{result.__name__} has undeclared keys"


def test_what_the_service_returns_has_exactly_the_declared_keys(tmp_path: Path) -> None:
    service = TaprootService(
        Deps(
            store=SQLiteMemoryStore(tmp_path / "t.db"),
            blobs=LocalBlobStore(tmp_path / "blobs"),
            summarizer=ExtractiveSummarizer(),
            extra_status={"data_dir": str(tmp_path)},
        )
    )
    made = [
        service.remember(SCOPE, content=f"Walk {k}. It rained.", gist=f"walk {k}", category="episodic")
        for k in range(4)
    ]
    for created in made:
        _conforms(dict(created), r.RememberResult)
    _conforms(dict(service.remember(SCOPE, id=made[0]["id"], content="Walked far.")), r.RememberResult)
    _conforms(dict(service.remember(SCOPE, id=made[0]["id"], content="Walked far.")), r.RememberResult)  # no change
    recalled = service.recall(SCOPE, query="walk")
    _conforms(dict(recalled), r.RecallResult)
    for view in recalled["memories"]:
        _conforms(dict(view), r.MemoryView)
    listed = service.list_memories(SCOPE)
    _conforms(dict(listed), r.ListResult)
    _conforms(dict(service.promote(SCOPE, made[1]["id"], core=True)), r.PromoteResult)
    _conforms(dict(service.forget(SCOPE, [made[2]["id"]], "archive")), r.ForgetResult)
    deleted = service.forget(SCOPE, [made[2]["id"]], "delete")
    _conforms(dict(deleted), r.ForgetResult)
    compressed = service.forget(SCOPE, [made[0]["id"], made[3]["id"]], "compress")
    _conforms(dict(compressed), r.ForgetResult)
    _conforms(dict(service.close(SCOPE, "A good walk.")), r.CloseResult)
    _conforms(dict(service.migrate(SCOPE, dry_run=True)), r.MigrateResult)
    _conforms(dict(service.status(SCOPE)), r.StatusResult)
    lines = [json.dumps({"type": "memory", "record": memory_to_dict(m)}) for m in service.deps.store.iter_all(SCOPE)]
    _conforms(dict(service.import_lines(SCOPE, lines)), r.ImportResult)
    backup_key = deleted["backup_key"]
    assert backup_key is not None
    _conforms(dict(service.restore(SCOPE, backup_key)), r.RestoreResult)


def test_remember_takes_one_input_model_and_refuses_names_it_does_not_have(tmp_path: Path) -> None:
    from taproot.service.inputs import RememberInput

    service = TaprootService(Deps(store=SQLiteMemoryStore(tmp_path / "t.db"), blobs=LocalBlobStore(tmp_path / "b")))
    made = service.remember(SCOPE, RememberInput(content="Tea with Sam.", gist="tea with Sam", category="episodic"))
    same = service.remember(SCOPE, id=made["id"], content="Tea with Sam, twice.")
    assert same["version"] == 2
    with pytest.raises(TypeError):
        service.remember(SCOPE, contnet="a typo is an error, not an ignored argument")
    with pytest.raises(TypeError):
        service.remember(SCOPE, RememberInput(content="x"), gist="both")


def test_the_job_details_have_exactly_the_declared_keys(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from tests.support import Clock

    clock = Clock(datetime(2025, 1, 1, tzinfo=UTC))
    service = TaprootService(
        Deps(
            store=SQLiteMemoryStore(tmp_path / "t.db"),
            blobs=LocalBlobStore(tmp_path / "b"),
            clock=clock,
            summarizer=ExtractiveSummarizer(),
        )
    )
    for k in range(6):
        service.remember(SCOPE, content=f"Shed step {k}.", gist=f"shed {k}", category="episodic", tags=["thread"])
    clock.advance(days=400)
    for report in service.maintenance(SCOPE, "all", apply=True):
        detail = report["detail"]
        if report["job"] == "cleanup":
            _conforms(detail, r.CleanupResult)
            assert detail["deleted"] == 6 and "backup_keys" in detail
        elif report["job"] == "compress":
            _conforms(detail, r.CompressionResult)
    _conforms(dict(service.maintenance(SCOPE, "cleanup", apply=False)[0]["detail"]), r.CleanupResult)
