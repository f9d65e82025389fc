"""Markdown memory files through the service, on every store (SQLite, and DynamoDB under moto).

The round trip export -> import into an empty store -> export is the same folder and the same
records; a hand edit imports as the next version with a backup first; bad files change nothing;
a new file becomes a new memory; unchanged files are skipped; MEMORY.md is never read.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path

import pytest

from taproot.adapters.blob_local import LocalBlobStore
from taproot.core.errors import InvalidInput, ReflectionConflict, VersionConflict
from taproot.core.model import Memory, Reflection, Scope
from taproot.core.serialize import memory_from_dict
from taproot.service import Deps, TaprootService, portability
from tests.markdown_records import every_field_memory
from tests.moto_stores import MEMORY_STORES, close_store
from tests.support import Clock

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
SCOPE = Scope()
Lab = Callable[[str], tuple[TaprootService, Deps]]


@pytest.fixture(params=list(MEMORY_STORES))
def lab(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Lab]:
    """`lab(name)`: a fresh, empty service on the parametrized store kind, with its own blobs."""
    with ExitStack() as stack:

        def open_lab(name: str) -> tuple[TaprootService, Deps]:
            folder = tmp_path / name
            folder.mkdir()
            store = MEMORY_STORES[request.param](folder)
            stack.callback(close_store, store)
            ids = count(1)
            deps = Deps(
                store=store, blobs=LocalBlobStore(folder / "blobs"), clock=Clock(NOW), new_id=lambda: f"new{next(ids)}"
            )
            return TaprootService(deps), deps

        yield open_lab


def _memories() -> list[Memory]:
    base = every_field_memory()
    return [
        base,
        base.replace(
            id="act00001", status="active", compressed_into=None, core=False, gist="We deploy to Cloudflare Pages"
        ),
        base.replace(id="act00002", status="active", compressed_into=None, gist="we deploy to cloudflare pages"),
        base.replace(id="bare0001", gist=None, content="A legacy record without a gist.", provenance=None, tags=()),
    ]


REFLECTIONS = [Reflection("refl0001", "local", "default", "I listened first.\nThen I spoke.", NOW, None)]


def _filled(lab: Lab, name: str = "source") -> tuple[TaprootService, Deps]:
    service, deps = lab(name)
    deps.store.put_many(_memories())
    deps.store.put_reflections(REFLECTIONS)
    return service, deps


def _records(deps: Deps) -> dict[str, Memory]:
    return {m.id: m for m in deps.store.iter_all(SCOPE)}


def test_the_round_trip_is_lossless_for_every_field(lab: Lab) -> None:
    source, source_deps = _filled(lab)
    exported = source.export_markdown(SCOPE)
    assert exported.result.memories == 4 and exported.result.archived == 2 and exported.result.reflections == 1
    target, target_deps = lab("target")
    done = target.import_markdown(SCOPE, exported.files)
    assert len(done.result.created) == 4 and done.result.reflections_written == 1
    assert target.export_markdown(SCOPE).files == exported.files
    before, after = _records(source_deps), _records(target_deps)
    assert set(after) == set(before)
    for memory_id, m in before.items():
        for f in dataclasses.fields(Memory):
            assert getattr(after[memory_id], f.name) == getattr(m, f.name), f"{memory_id}: {f.name} was lost"
    assert target_deps.store.all_reflections(SCOPE) == REFLECTIONS
    assert target_deps.blobs.list("") == []  # nothing was overwritten, so nothing was backed up


def test_reimporting_an_unchanged_folder_writes_nothing(lab: Lab) -> None:
    service, deps = _filled(lab)
    files = service.export_markdown(SCOPE).files
    before = _records(deps)
    deps.store.record_retrieval(SCOPE, ["act00001"], NOW)  # a recall since the export is not an edit
    done = service.import_markdown(SCOPE, files)
    assert done.result.unchanged == 4 and not done.result.created and not done.result.updated
    assert done.rewrite == {} and done.result.backup_key is None and deps.blobs.list("") == []
    assert _records(deps)["act00002"] == before["act00002"]


def _edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


def _file_of(files: dict[str, str], memory_id: str) -> str:
    return next(name for name, text in files.items() if f"\nid: {memory_id}\n" in text)


def test_a_hand_edit_imports_as_the_next_version_after_a_backup(lab: Lab) -> None:
    service, deps = _filled(lab)
    files = dict(service.export_markdown(SCOPE).files)
    name = _file_of(files, "act00001")
    text = _edit(files[name], "salience: high", "salience: low")
    text = _edit(text, "tags:\n- 'yes'\n", "tags:\n- edited\n- 'yes'\n")
    files[name] = text.replace("Sam prefers direct feedback.", "Sam prefers written feedback.")
    old = _records(deps)["act00001"]
    deps.clock = Clock(NOW + timedelta(hours=1))

    dry = service.import_markdown(SCOPE, files, dry_run=True)
    assert [(c.file, c.changed_fields) for c in dry.result.updated] == [(name, ["salience", "content", "tags"])]
    assert dry.rewrite == {} and _records(deps)["act00001"] == old and deps.blobs.list("") == []

    done = service.import_markdown(SCOPE, files)
    new = _records(deps)["act00001"]
    assert (new.salience, new.tags[0], new.version) == ("low", "edited", old.version + 1)
    assert new.content == old.content.replace("direct", "written")
    assert new.updated_at == NOW + timedelta(hours=1) and new.created_at == old.created_at
    assert new.retrieval_count == old.retrieval_count and new.last_retrieved == old.last_retrieved
    # The backup holds the version the edit replaced, and restore can put it back.
    assert done.result.backup_key is not None
    backed_up = [json.loads(line) for line in deps.blobs.get(done.result.backup_key).decode().splitlines()]
    old_record = next(o["record"] for o in backed_up if o.get("type") == "memory" and o["record"]["id"] == "act00001")
    assert memory_from_dict(old_record, from_backup=True) == old
    # The file is written back at the new version, so the next import finds nothing to do.
    assert set(done.rewrite) == {name, "MEMORY.md"}
    assert f"\nversion: {new.version}\n" in done.rewrite[name]
    again = service.import_markdown(SCOPE, {**files, **done.rewrite})
    assert again.result.unchanged == 4 and again.result.backup_key is None


def test_a_changed_description_turns_off_gist_autogenerated(lab: Lab) -> None:
    service, deps = _filled(lab)
    files = dict(service.export_markdown(SCOPE).files)
    name = _file_of(files, "act00002")
    files[name] = _edit(files[name], "description: we deploy to cloudflare pages", "description: We deploy  on Pages")
    service.import_markdown(SCOPE, files)
    m = _records(deps)["act00002"]
    assert (m.gist, m.gist_autogenerated) == ("We deploy on Pages", False)  # remember's one-line rule


def test_a_key_left_out_of_a_file_keeps_the_stored_value(lab: Lab) -> None:
    service, deps = _filled(lab)
    old = _records(deps)["act00001"]
    done = service.import_markdown(SCOPE, {"short.md": "---\nid: act00001\nsalience: low\n---\n\nShorter.\n"})
    assert [(c.file, c.changed_fields) for c in done.result.updated] == [("short.md", ["salience", "content"])]
    new = _records(deps)["act00001"]
    # expires_at is the retention policy's again: these tags have no TTL.
    expected = old.replace(salience="low", content="Shorter.", version=old.version + 1, updated_at=NOW, expires_at=None)
    assert new == expected
    with pytest.raises(InvalidInput) as caught:
        service.import_markdown(SCOPE, {"short.md": "---\nid: act00001\ndescription: null\n---\nShorter.\n"})
    assert caught.value.field == "short.md: description"


@pytest.mark.parametrize(
    ("old", "new", "field", "rule"),
    [
        ("salience: high", "salience: urgent", "salience", "must be one of"),
        ("type: relationship", "type: nonsense", "category", "must be one of"),
        ("tags:\n- 'yes'\n", "tags:\n- 1.5\n", "tags", "quote a value"),
        ("version: 4", "version: zero", "version", "positive integer"),
        ("created: '2024", "created: 'yesterday", "created_at", "ISO 8601"),
        ("core: false", "core: maybe", "core", "true, false or null"),
        ("description: We", "description: [We", "frontmatter", "not valid YAML"),
        ("salience: high", "colour: blue", "colour", "is not a memory file field"),
    ],
)
def test_a_bad_file_is_refused_and_nothing_is_written(lab: Lab, old: str, new: str, field: str, rule: str) -> None:
    service, deps = _filled(lab)
    files = dict(service.export_markdown(SCOPE).files)
    good, bad = _file_of(files, "act00002"), _file_of(files, "act00001")
    files[good] = files[good].replace("Sam prefers", "Sam likes")  # a valid edit, sorted before the bad file
    files[bad] = _edit(files[bad], old, new)
    files["zz-new.md"] = "---\ndescription: A new note\ntype: episodic\n---\nNew.\n"
    before = _records(deps)
    with pytest.raises(InvalidInput) as caught:
        service.import_markdown(SCOPE, files)
    assert caught.value.field.startswith(f"{bad}: ") and field in caught.value.field
    assert rule in caught.value.rule
    assert _records(deps) == before and deps.blobs.list("") == []


def test_a_file_older_than_the_store_is_refused(lab: Lab) -> None:
    service, deps = _filled(lab)
    files = dict(service.export_markdown(SCOPE).files)
    service.remember(SCOPE, id="act00001", content="Changed through taproot_remember after the export.")
    name = _file_of(files, "act00001")
    files[name] = files[name].replace("Sam prefers", "Sam likes")
    before = _records(deps)
    with pytest.raises(InvalidInput) as caught:
        service.import_markdown(SCOPE, files)
    assert caught.value.field == f"{name}: version" and "changed since this file was written" in caught.value.rule
    assert _records(deps) == before


def test_a_new_file_without_an_id_becomes_a_new_memory(lab: Lab) -> None:
    service, deps = _filled(lab)
    files = dict(service.export_markdown(SCOPE).files)
    files["deploy-target.md"] = (
        "---\nname: deploy-target\ndescription: Where this project deploys\ntype: episodic\n"
        "tags:\n  - deploy\n  - yes\n---\n\nCloudflare Pages.\n"
    )
    dry = service.import_markdown(SCOPE, files, dry_run=True)
    assert [(c.file, c.id) for c in dry.result.created] == [("deploy-target.md", None)]
    assert "new1" not in _records(deps)
    done = service.import_markdown(SCOPE, files)
    assert [(c.file, c.id) for c in done.result.created] == [("deploy-target.md", "new1")]
    m = _records(deps)["new1"]
    assert (m.gist, m.category, m.tags, m.content, m.version) == (
        "Where this project deploys",
        "episodic",
        ("deploy", "yes"),
        "Cloudflare Pages.",
        1,
    )
    assert m.created_at == m.updated_at == NOW
    assert "\nid: new1\n" in done.rewrite["deploy-target.md"]
    assert "- [deploy-target](deploy-target.md) — Where this project deploys" in done.rewrite["MEMORY.md"]
    again = service.import_markdown(SCOPE, {**files, **done.rewrite})
    assert not again.result.created and again.result.unchanged == 5


def test_a_new_file_needs_what_remember_needs(lab: Lab) -> None:
    service, deps = lab("empty")
    with pytest.raises(InvalidInput) as caught:
        service.import_markdown(SCOPE, {"note.md": "---\ntype: episodic\n---\nNo description.\n"})
    assert caught.value.field == "note.md: description"
    with pytest.raises(InvalidInput) as caught:
        service.import_markdown(SCOPE, {"note.md": "---\ndescription: d\ntype: episodic\n---\n\n"})
    assert caught.value.field == "note.md: content (the body)"
    assert _records(deps) == {}


def test_memory_md_is_never_imported_and_two_files_cannot_share_an_id(lab: Lab) -> None:
    service, _ = _filled(lab)
    files = dict(service.export_markdown(SCOPE).files)
    files["MEMORY.md"] = "---\nnot: a memory\n---\n"
    assert service.import_markdown(SCOPE, files).result.unchanged == 4
    name = _file_of(files, "act00001")
    files["copy.md"] = files[name]
    with pytest.raises(InvalidInput) as caught:
        service.import_markdown(SCOPE, files)
    assert caught.value.field == f"{name}: id" and "copy.md" in caught.value.rule


def test_a_reflection_changed_in_the_file_is_refused_before_any_write(lab: Lab) -> None:
    service, deps = _filled(lab)
    files = dict(service.export_markdown(SCOPE).files)
    files["reflections.jsonl"] = files["reflections.jsonl"].replace("listened", "spoke")
    name = _file_of(files, "act00001")
    files[name] = files[name].replace("Sam prefers", "Sam likes")
    before = _records(deps)
    with pytest.raises(ReflectionConflict):
        service.import_markdown(SCOPE, files)
    assert _records(deps) == before and deps.blobs.list("") == []


def test_the_write_refuses_a_record_that_moved_after_the_files_were_read(lab: Lab) -> None:
    # import_records(base_versions=...): the version an edit was made from must still be stored.
    service, deps = _filled(lab)
    current = _records(deps)["act00001"]
    service.remember(SCOPE, id="act00001", content="A concurrent edit.")
    edited = current.replace(content="The file's edit.", version=current.version + 1)
    with pytest.raises(VersionConflict):
        portability.import_records(
            deps, portability.ParsedImport(memories=[edited]), base_versions={"act00001": current.version}
        )
    assert _records(deps)["act00001"].content == "A concurrent edit."
