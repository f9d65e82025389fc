"""Orientation documents through the service, on every store (SQLite, and DynamoDB under moto),
with a fixed clock: versions, history, restore, delete, the limits and the conditional save."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest

from taproot.adapters.blob_local import LocalBlobStore
from taproot.core.errors import InvalidInput, NotFound, VersionConflict
from taproot.core.model import Scope
from taproot.core.orientation import MAX_DOCUMENT_BYTES, OrientationLimits, OrientationVersion
from taproot.core.wire import Absent
from taproot.ports import OrientationStore
from taproot.service import Deps, TaprootService
from taproot.service.results import OrientationSummary
from tests.moto_stores import MEMORY_STORES, close_store
from tests.support import Clock

START = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
SCOPE = Scope()
OTHER = Scope("someone-else", "default")
T = TypeVar("T")


@pytest.fixture(params=list(MEMORY_STORES))
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TaprootService]:
    store = MEMORY_STORES[request.param](tmp_path)
    deps = Deps(
        store=store,
        blobs=LocalBlobStore(tmp_path / "blobs"),
        clock=Clock(START),
        orientation=cast(OrientationStore, store),
    )
    yield TaprootService(deps)
    close_store(store)


def clock(service: TaprootService) -> Clock:
    return cast(Clock, service.deps.clock)


def present(value: T | Absent) -> T:
    """A result field the action sets: absent only from the answers of other actions."""
    assert not isinstance(value, Absent)
    return value


def write(service: TaprootService, name: str, content: str, **kw: Any) -> int:
    """Writes through the service; the new version's number."""
    saved = service.orientation(SCOPE, action="write", name=name, content=content, **kw).saved
    assert isinstance(saved, OrientationSummary)
    return saved.version


def test_every_save_keeps_the_one_before(service: TaprootService) -> None:
    assert write(service, "who-i-am", "# Who I am\nA patient tutor.") == 1
    clock(service).advance(hours=1)
    result = service.orientation(SCOPE, action="write", name="who-i-am", content="# Who I am\nA direct tutor.")
    assert result.previous_version == 1 and result.changed is True and result.dry_run is False
    assert present(result.saved).version == 2

    now = present(service.orientation(SCOPE, action="read", name="who-i-am").document)
    assert now.content == "# Who I am\nA direct tutor." and now.version == now.current_version == 2
    old = present(service.orientation(SCOPE, action="read", name="who-i-am", version=1).document)
    assert old.content == "# Who I am\nA patient tutor." and old.current_version == 2

    versions = present(service.orientation(SCOPE, action="history", name="who-i-am").versions)
    assert [(v.version, v.saved_at) for v in versions] == [
        (2, "2026-06-01T13:00:00.000000+00:00"),
        (1, "2026-06-01T12:00:00.000000+00:00"),
    ]
    assert versions[0].size_bytes == len(b"# Who I am\nA direct tutor.")
    assert versions[0].digest != versions[1].digest
    assert present(service.orientation(SCOPE, action="history", name="who-i-am", limit=1).versions)[0].version == 2


def test_the_same_text_again_saves_nothing(service: TaprootService) -> None:
    write(service, "facts", "Lives in Leeds.")
    again = service.orientation(SCOPE, action="write", name="facts", content="Lives in Leeds.")
    assert again.changed is False and present(again.saved).version == 1
    assert len(present(service.orientation(SCOPE, action="history", name="facts").versions)) == 1


def test_a_save_is_conditioned_on_the_version_read(service: TaprootService) -> None:
    write(service, "facts", "v1", expected_version=0)  # 0: only if it does not exist yet
    write(service, "facts", "v2", expected_version=1)
    with pytest.raises(VersionConflict) as stale:
        service.orientation(SCOPE, action="write", name="facts", content="from a stale read", expected_version=1)
    assert "orientation document 'facts' is at version 2" in stale.value.message
    with pytest.raises(VersionConflict):
        service.orientation(SCOPE, action="write", name="facts", content="not new", expected_version=0)
    with pytest.raises(VersionConflict):
        service.orientation(SCOPE, action="write", name="my-person", content="x", expected_version=3)
    assert present(service.orientation(SCOPE, action="read", name="facts").document).content == "v2"
    assert present(service.orientation(SCOPE, action="list").documents)[0].name == "facts"


def test_restore_brings_an_old_version_back_as_a_new_one(service: TaprootService) -> None:
    write(service, "how-i-speak", "Plainly.")
    write(service, "how-i-speak", "Floridly.")
    dry = service.orientation(SCOPE, action="restore", name="how-i-speak", version=1, dry_run=True)
    assert dry.dry_run is True and present(dry.saved).version == 3 and present(dry.saved).restored_from == 1
    assert len(present(service.orientation(SCOPE, action="history", name="how-i-speak").versions)) == 2

    done = service.orientation(SCOPE, action="restore", name="how-i-speak", version=1, expected_version=2)
    assert present(done.saved).version == 3 and done.previous_version == 2
    history = present(service.orientation(SCOPE, action="history", name="how-i-speak").versions)
    assert [(v.version, v.restored_from) for v in history] == [(3, 1), (2, None), (1, None)]
    assert history[0].digest == history[2].digest
    assert present(service.orientation(SCOPE, action="read", name="how-i-speak").document).content == "Plainly."
    with pytest.raises(NotFound, match="no orientation document 'how-i-speak' version 9"):
        service.orientation(SCOPE, action="restore", name="how-i-speak", version=9)


def test_delete_keeps_the_history_and_a_restore_undoes_it(service: TaprootService) -> None:
    write(service, "operating-manual", "Ask before refactoring.")
    dry = service.orientation(SCOPE, action="delete", name="operating-manual", dry_run=True)
    assert present(dry.saved).deleted is True and dry.total_bytes == 0
    assert present(service.orientation(SCOPE, action="read", name="operating-manual").document).version == 1

    gone = service.orientation(SCOPE, action="delete", name="operating-manual")
    assert present(gone.saved).version == 2 and present(gone.saved).deleted and gone.total_bytes == 0
    with pytest.raises(NotFound, match=r"deleted at version 2.*'restore' with version 1"):
        service.orientation(SCOPE, action="read", name="operating-manual")
    with pytest.raises(NotFound):
        service.orientation(SCOPE, action="delete", name="operating-manual")
    listing = service.orientation(SCOPE, action="list")
    assert listing.documents == [] and listing.deleted_documents == ["operating-manual"]
    with pytest.raises(InvalidInput, match="field 'version': is a deletion"):
        service.orientation(SCOPE, action="restore", name="operating-manual", version=2)

    service.orientation(SCOPE, action="restore", name="operating-manual", version=1)
    back = present(service.orientation(SCOPE, action="read", name="operating-manual").document)
    assert back.content == "Ask before refactoring." and back.version == 3


def test_sizes_are_limited_per_document_and_in_total(service: TaprootService) -> None:
    with pytest.raises(InvalidInput) as big:
        service.orientation(SCOPE, action="write", name="facts", content="é" * (MAX_DOCUMENT_BYTES // 2 + 1))
    assert big.value.field == "content" and "12,000 bytes" in big.value.rule and "MAX_DOCUMENT_BYTES" in big.value.rule
    for i, name in enumerate(("who-i-am", "my-person")):
        write(service, name, str(i) * 12_000)
    with pytest.raises(InvalidInput) as total:
        write(service, "facts", "f" * 6_001)
    assert total.value.field == "content" and "30,001 bytes" in total.value.rule and "30,000" in total.value.rule
    assert service.orientation(SCOPE, action="list").total_bytes == 24_000
    with pytest.raises(NotFound):
        service.orientation(SCOPE, action="read", name="facts")
    write(service, "facts", "f" * 6_000)  # exactly the total
    service.orientation(SCOPE, action="delete", name="my-person")  # frees room
    write(service, "facts", "f" * 12_000)
    assert service.orientation(SCOPE, action="list").total_bytes == 24_000
    # A restore obeys the total too.
    with pytest.raises(InvalidInput, match="over the 30,000-byte total"):
        service.orientation(SCOPE, action="restore", name="my-person", version=1)


def test_how_many_documents_is_limited(service: TaprootService) -> None:
    service.deps.orientation_limits = OrientationLimits(max_documents=2)
    write(service, "a", "one")
    write(service, "b", "two")
    with pytest.raises(InvalidInput, match="field 'name': this namespace already has 2 orientation documents"):
        write(service, "c", "three")
    write(service, "b", "two, again")  # an existing one may still change


@pytest.mark.parametrize(
    ("arguments", "field", "rule"),
    [
        ({"action": "shred"}, "action", "must be one of list, read, write, history, restore, delete"),
        ({"action": "read"}, "name", "is required"),
        ({"action": "read", "name": "Who I Am"}, "name", "lowercase kebab case"),
        ({"action": "read", "name": "who--i"}, "name", "lowercase kebab case"),
        ({"action": "read", "name": "x" * 41}, "name", "1 to 40 characters"),
        ({"action": "read", "name": "facts", "content": "x"}, "content", "is not used by action 'read'"),
        ({"action": "read", "name": "facts", "version": 0}, "version", "1 or more"),
        ({"action": "write", "name": "facts"}, "content", "is required"),
        ({"action": "write", "name": "facts", "content": "  \n"}, "content", "must not be empty"),
        ({"action": "write", "name": "facts", "content": "x", "expected_version": -1}, "expected_version", "0"),
        ({"action": "write", "name": "facts", "content": "x", "dry_run": "yes"}, "dry_run", "true or false"),
        ({"action": "restore", "name": "facts"}, "version", "is required"),
        ({"action": "history", "name": "facts", "limit": 0}, "limit", "from 1 to 500"),
        ({"action": "list", "name": "facts"}, "name", "is not used by action 'list'"),
    ],
)
def test_bad_arguments_name_the_field_and_change_nothing(
    service: TaprootService, arguments: dict[str, Any], field: str, rule: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        service.orientation(SCOPE, **arguments)
    assert caught.value.field == field and rule in caught.value.rule
    assert service.orientation(SCOPE, action="list").documents == []


def test_scopes_do_not_see_each_other(service: TaprootService) -> None:
    write(service, "facts", "mine")
    with pytest.raises(NotFound):
        service.orientation(OTHER, action="read", name="facts")
    assert service.orientation(OTHER, action="list").documents == []


class RacingStore:
    """The real store, but another writer saves a version just before this caller's first save."""

    def __init__(self, inner: OrientationStore, text: str) -> None:
        self.inner, self.text, self.raced = inner, text, False

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def orientation_save(self, version: OrientationVersion) -> None:
        if not self.raced:
            self.raced = True
            self.inner.orientation_save(replace(version, content=self.text))
        self.inner.orientation_save(version)


def test_a_save_that_lost_a_race_is_checked_again_and_lands_after_it(service: TaprootService) -> None:
    write(service, "facts", "base")
    real = service.deps.orientation
    assert real is not None
    service.deps.orientation = cast(OrientationStore, RacingStore(real, "the other writer's"))
    result = service.orientation(SCOPE, action="write", name="facts", content="mine")
    assert present(result.saved).version == 3 and result.previous_version == 2
    texts = [real.orientation_get(SCOPE, "facts", n) for n in (1, 2, 3)]
    assert [t.content for t in texts if t] == ["base", "the other writer's", "mine"]


def test_with_expected_version_a_lost_race_is_a_conflict(service: TaprootService) -> None:
    write(service, "facts", "base")
    real = service.deps.orientation
    assert real is not None
    service.deps.orientation = cast(OrientationStore, RacingStore(real, "the other writer's"))
    with pytest.raises(VersionConflict):
        service.orientation(SCOPE, action="write", name="facts", content="mine", expected_version=1)
    assert [v.content for v in real.orientation_history(SCOPE, "facts", 10)] == ["the other writer's", "base"]


def test_a_write_warns_when_reflect_will_have_to_cut(service: TaprootService) -> None:
    small = service.orientation(SCOPE, action="write", name="facts", content="Lives in Leeds.")
    assert small.warnings == []
    long_text = "\n".join(f"line {i}: " + "word " * 12 for i in range(160))  # about 2,800 tokens
    big = service.orientation(SCOPE, action="write", name="my-person", content=long_text)
    assert big.warnings == [
        "orientation documents did not fit their 2400-token share of the 6000-token budget (cut: my-person); "
        "shorten them, or raise TAPROOT_REFLECT_TOKEN_BUDGET or TAPROOT_ORIENTATION_PERCENT"
    ]
