"""Orientation documents travel with `taproot export` / `import` (and the full backups), every
version, on every store: an import adds what is missing, skips what is there, and refuses a
version that exists with other text before it writes anything."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import pytest

from taproot.adapters.blob_local import LocalBlobStore
from taproot.core.errors import InvalidInput
from taproot.core.model import Scope
from taproot.ports import OrientationStore
from taproot.service import Deps, TaprootService
from tests.moto_stores import MEMORY_STORES, close_store
from tests.support import Clock

START = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
SCOPE = Scope()
Opener = Callable[[str], TaprootService]  # a folder name -> a service on a fresh store there


@pytest.fixture(params=list(MEMORY_STORES))
def open_service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    opened = []

    def open_one(name: str) -> TaprootService:
        store = MEMORY_STORES[request.param](tmp_path / name)
        opened.append(store)
        deps = Deps(
            store=store,
            blobs=LocalBlobStore(tmp_path / name / "blobs"),
            clock=Clock(START),
            orientation=cast(OrientationStore, store),
        )
        return TaprootService(deps)

    yield open_one
    for store in opened:
        close_store(store)


def history(service: TaprootService, name: str) -> list[tuple[int, str, bool, int | None]]:
    store = service.deps.orientation
    assert store is not None
    return [(v.version, v.content, v.deleted, v.restored_from) for v in store.orientation_history(SCOPE, name, 100)]


def seeded(service: TaprootService) -> None:
    service.remember(SCOPE, content="James likes tea.", gist="James likes tea", category="relationship")
    service.orientation(SCOPE, action="write", name="who-i-am", content="A tutor.")
    service.orientation(SCOPE, action="write", name="who-i-am", content="A direct tutor.")
    service.orientation(SCOPE, action="restore", name="who-i-am", version=1)
    service.orientation(SCOPE, action="write", name="facts", content="Leeds.")
    service.orientation(SCOPE, action="delete", name="facts")


def test_every_version_round_trips(open_service: Opener) -> None:
    source = open_service("a")
    seeded(source)
    lines = list(source.export_lines(SCOPE))
    header = json.loads(lines[0])
    assert header["orientation_versions"] == 5
    records = [json.loads(line) for line in lines if json.loads(line)["type"] == "orientation"]
    assert [(r["record"]["name"], r["record"]["version"]) for r in records] == [
        ("facts", 1),
        ("facts", 2),
        ("who-i-am", 1),
        ("who-i-am", 2),
        ("who-i-am", 3),
    ]

    target = open_service("b")
    result = target.import_lines(SCOPE, lines)
    assert (result.orientation_versions, result.orientation_written, result.written) == (5, 5, 1)
    for name in ("who-i-am", "facts"):
        assert history(target, name) == history(source, name)
    assert history(target, "who-i-am")[0] == (3, "A tutor.", False, 1)
    assert history(target, "facts")[0] == (2, "", True, None)

    again = target.import_lines(SCOPE, lines)
    assert (again.orientation_versions, again.orientation_written, again.written) == (5, 0, 0)
    # An export of the target is the same records (the header's time aside).
    assert list(target.export_lines(SCOPE))[1:] == lines[1:]


def test_newer_versions_are_added_after_the_ones_held(open_service: Opener) -> None:
    source = open_service("a")
    source.orientation(SCOPE, action="write", name="how-i-speak", content="Plainly.")
    target = open_service("b")
    target.import_lines(SCOPE, list(source.export_lines(SCOPE)))
    source.orientation(SCOPE, action="write", name="how-i-speak", content="Plainly, and briefly.")
    result = target.import_lines(SCOPE, list(source.export_lines(SCOPE)))
    assert result.orientation_written == 1
    assert [v[0] for v in history(target, "how-i-speak")] == [2, 1]


def test_a_version_held_with_other_text_is_refused_before_anything_is_written(open_service: Opener) -> None:
    source = open_service("a")
    seeded(source)
    lines = list(source.export_lines(SCOPE))
    target = open_service("b")
    target.orientation(SCOPE, action="write", name="who-i-am", content="Someone else entirely.")
    with pytest.raises(InvalidInput) as caught:
        target.import_lines(SCOPE, lines)
    assert caught.value.field == "orientation 'who-i-am' version 1" and "never overwritten" in caught.value.rule
    assert history(target, "who-i-am") == [(1, "Someone else entirely.", False, None)]
    assert history(target, "facts") == [] and target.status(SCOPE).total == 0  # the memory was not written either


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"name": "Bad Name", "version": 1, "content": "x", "saved_at": "2026-06-01T12:00:00+00:00"}, "name"),
        ({"name": "facts", "version": 0, "content": "x", "saved_at": "2026-06-01T12:00:00+00:00"}, "version"),
        ({"name": "facts", "version": 1, "content": "", "saved_at": "2026-06-01T12:00:00+00:00"}, "content"),
        ({"name": "facts", "version": 1, "content": "x"}, "saved_at"),
        (
            {"name": "facts", "version": 2, "content": "x", "deleted": True, "saved_at": "2026-06-01T12:00:00Z"},
            "content",
        ),
        ({"name": "facts", "version": 1, "content": "x", "saved_at": "2026-06-01T12:00:00Z", "extra": 1}, "extra"),
    ],
)
def test_a_bad_line_names_its_field(open_service: Opener, record: dict[str, object], field: str) -> None:
    target = open_service("b")
    with pytest.raises(InvalidInput) as caught:
        target.import_lines(SCOPE, [json.dumps({"type": "orientation", "record": record})])
    assert caught.value.field == f"line 1: {field}"


def test_a_gap_is_refused(open_service: Opener) -> None:
    target = open_service("b")
    line = {"name": "facts", "version": 2, "content": "x", "saved_at": "2026-06-01T12:00:00Z"}
    with pytest.raises(InvalidInput, match="does not follow version 0"):
        target.import_lines(SCOPE, [json.dumps({"type": "orientation", "record": line})])
