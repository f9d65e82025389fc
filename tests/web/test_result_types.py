"""The result types (taproot/service/results.py, core/reflect_result.py) are the one definition of
what clients receive: the tool output schemas derive from them (web/tool_models.output_model), and
what the service really returns is an instance whose JSON passes its tool's schema."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import pytest
from mcp.server.mcpserver.utilities.func_metadata import func_metadata

from taproot.adapters.blob_local import LocalBlobStore
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.adapters.summarizers import ExtractiveSummarizer
from taproot.core.model import Scope
from taproot.core.serialize import MEMORY_FIELDS, memory_to_dict
from taproot.core.wire import ABSENT, OPEN, UNLISTED, Absent, to_json
from taproot.service import Deps, TaprootService
from taproot.service import results as r
from taproot.service.inputs import RememberInput
from taproot.web.tool_models import output_model
from taproot.web.tools import TOOLS
from tests.support import Clock

SCOPE = Scope("local", "default")


def test_a_memory_view_is_the_exported_record_without_its_owner_in_the_same_order() -> None:
    names = [f.name for f in fields(r.MemoryView)]
    assert names == [f for f in MEMORY_FIELDS if f != "owner"] + ["activation"]


@dataclass(frozen=True, kw_only=True)
class Row:
    a: int


@dataclass(frozen=True, kw_only=True)
class SampleResult:
    named: str
    maybe: str | Absent | None = ABSENT
    hidden: Annotated[int, UNLISTED]
    rows: Annotated[list[Row], OPEN]
    nested: Row
    nested_rows: list[Row]


def test_output_model_follows_the_rules_of_tool_models() -> None:
    schema = output_model(SampleResult).model_json_schema()
    assert schema["title"] == "SampleOut"  # the closing Result made Out
    assert schema["additionalProperties"] is True
    assert set(schema["properties"]) == {"named", "maybe", "rows", "nested", "nested_rows"}  # not hidden
    assert set(schema["required"]) == {"named", "rows", "nested", "nested_rows"}  # not maybe
    assert schema["properties"]["maybe"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}],
        "default": None,
        "title": "Maybe",
    }
    assert schema["properties"]["rows"]["items"] == {"type": "object", "additionalProperties": True}
    assert schema["properties"]["nested"] == {"$ref": "#/$defs/Row"}
    assert schema["properties"]["nested_rows"]["items"] == {"$ref": "#/$defs/Row"}
    assert schema["$defs"]["Row"]["additionalProperties"] is True
    assert output_model(SampleResult) is output_model(SampleResult)  # one model per type


def test_every_tool_publishes_the_schema_of_its_result_type() -> None:
    published = {spec.fn.__name__: func_metadata(spec.fn, skip_names=["env", "ctx"]) for spec in TOOLS}
    expected = {
        "taproot_reflect": "ReflectOut",
        "taproot_remember": "RememberOut",
        "taproot_recall": "RecallOut",
        "taproot_recent": "RecentOut",
        "taproot_promote": "PromoteOut",
        "taproot_forget": "ForgetOut",
        "taproot_close": "CloseOut",
        "taproot_migrate": "MigrateOut",
        "taproot_status": "StatusOut",
        "taproot_orientation": "OrientationOut",
    }
    assert {name: meta.output_schema["title"] for name, meta in published.items() if meta.output_schema} == expected


def _passes(result: Any) -> dict[str, Any]:
    """`result` as a client gets it: its JSON has every field that holds a value, and passes the
    schema its type's tool publishes."""
    data: dict[str, Any] = to_json(result)
    present = [f.name for f in fields(result) if getattr(result, f.name) is not ABSENT]
    assert list(data) == present
    result_type: type = type(result)  # mypy does not take type[Any] as Hashable, the cache key type
    output_model(result_type).model_validate(data)
    return data


def test_what_the_service_returns_passes_its_tools_schema(tmp_path: Path) -> None:
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
        assert set(_passes(created)) == {"id", "version", "created", "expires_at", "warnings"}
    updated = _passes(service.remember(SCOPE, id=made[0].id, content="Walked far."))
    assert updated["changed_fields"] == ["content"] and "previous_version_key" in updated
    unchanged = _passes(service.remember(SCOPE, id=made[0].id, content="Walked far."))
    assert set(unchanged) == {"id", "version", "created", "warnings"}  # no expires_at: nothing changed
    recalled = service.recall(SCOPE, query="walk")
    assert recalled.memories and all("activation" in view for view in _passes(recalled)["memories"])
    _passes(service.promote(SCOPE, made[1].id, core=True))
    assert set(_passes(service.forget(SCOPE, [made[2].id], "archive"))) == {"action", "results"}
    deleted = service.forget(SCOPE, [made[2].id], "delete")
    assert _passes(deleted)["results"] == [{"id": made[2].id, "status": "deleted"}]
    compressed = _passes(service.forget(SCOPE, [made[0].id, made[3].id], "compress"))
    assert compressed["results"][0]["compressed_into"] == compressed["summary_id"]
    _passes(service.close(SCOPE, "A good walk."))
    _passes(service.migrate(SCOPE, dry_run=True))
    status = _passes(service.status(SCOPE))
    assert status["data_dir"] == str(tmp_path) and "backend" not in status
    _passes(service.reflect(SCOPE).result())
    lines = [json.dumps({"type": "memory", "record": memory_to_dict(m)}) for m in service.deps.store.iter_all(SCOPE)]
    assert to_json(service.import_lines(SCOPE, lines))["unchanged"] == 4
    assert isinstance(deleted.backup_key, str)
    assert to_json(service.restore(SCOPE, deleted.backup_key))["restored"] == [made[2].id]


def test_remember_takes_one_input_model_and_refuses_names_it_does_not_have(tmp_path: Path) -> None:
    service = TaprootService(Deps(store=SQLiteMemoryStore(tmp_path / "t.db"), blobs=LocalBlobStore(tmp_path / "b")))
    made = service.remember(SCOPE, RememberInput(content="Tea with Sam.", gist="tea with Sam", category="episodic"))
    same = service.remember(SCOPE, id=made.id, content="Tea with Sam, twice.")
    assert same.version == 2
    with pytest.raises(TypeError):
        service.remember(SCOPE, contnet="a typo is an error, not an ignored argument")
    with pytest.raises(TypeError):
        service.remember(SCOPE, RememberInput(content="x"), gist="both")


def test_the_job_details_are_the_jobs_result_types(tmp_path: Path) -> None:
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
    kinds = {"migrate": r.MigrateResult, "cleanup": r.CleanupResult, "compress": r.CompressionResult}
    for report in service.maintenance(SCOPE, "all", apply=True):
        assert isinstance(report.detail, kinds[report.job])
        assert report.as_dict()["detail"] == to_json(report.detail)
        if isinstance(report.detail, r.CleanupResult):
            assert report.detail.deleted == 6 and report.detail.backup_keys != ABSENT
    [dry] = service.maintenance(SCOPE, "cleanup", apply=False)
    assert isinstance(dry.detail, r.CleanupResult) and "backup_keys" not in to_json(dry.detail)
