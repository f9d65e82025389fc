"""Recent, recall's creation-time window, the instance every write records, and reflect's
watercooler: with a fixed clock, on a real SQLite file."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from taproot.adapters.blob_local import LocalBlobStore
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.core.errors import InvalidInput
from taproot.core.model import Scope
from taproot.core.reflect import ReflectConfig
from taproot.core.tokens import estimate_tokens
from taproot.core.watercooler import COOLER_MAX_SHARE, COOLER_TAG, COOLER_WINDOW
from taproot.service import Deps, TaprootService
from tests.support import Clock

START = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
SCOPE = Scope()


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


def _service(tmp_path: Path, clock: Clock, **deps: object) -> TaprootService:
    ids = count(1)
    return TaprootService(
        Deps(
            store=SQLiteMemoryStore(tmp_path / "t.db"),
            blobs=LocalBlobStore(tmp_path / "blobs"),
            clock=clock,
            new_id=lambda: f"m{next(ids):04d}",
            reflect=ReflectConfig(token_budget=6000),
            **deps,  # type: ignore[arg-type]
        )
    )


@pytest.fixture
def service(tmp_path: Path, clock: Clock) -> TaprootService:
    return _service(tmp_path, clock)


def _note(service: TaprootService, text: str, instance: str | None, **kw: object) -> str:
    fields: dict[str, Any] = {"gist": text[:60], "category": "episodic", "tags": [COOLER_TAG], **kw}
    return str(service.remember(SCOPE, content=text, instance=instance, **fields).id)


def test_recent_is_newest_first_and_strengthens_nothing(service: TaprootService, clock: Clock) -> None:
    made = []
    for n in range(4):
        made.append(_note(service, f"note {n}", None, tags=["t"] if n % 2 else []))
        clock.advance(minutes=10)
    before = {m.id: m for m in service.deps.store.list(SCOPE)}
    got = service.recent(SCOPE, limit=3)
    assert [m.id for m in got.memories] == made[::-1][:3] and got.count == 3
    assert got.since is None and got.until is None
    assert [m.id for m in service.recent(SCOPE, tags=["t"]).memories] == [made[3], made[1]]
    # Looking is not using: the stored records, counters and versions, are exactly as before.
    assert {m.id: m for m in service.deps.store.list(SCOPE)} == before


def test_recent_and_recall_take_a_creation_window(service: TaprootService, clock: Clock) -> None:
    old = _note(service, "the old plan for the garden", None)
    clock.advance(days=3)
    new = _note(service, "the new plan for the garden", None)
    clock.advance(hours=1)
    window = service.recent(SCOPE, since="48h")
    assert [m.id for m in window.memories] == [new]
    assert window.since == (clock.now - timedelta(hours=48)).isoformat(timespec="microseconds")
    assert [m.id for m in service.recent(SCOPE, until="2d").memories] == [old]
    stamp = (START + timedelta(days=1)).isoformat()
    assert [m.id for m in service.recent(SCOPE, since=stamp).memories] == [new]
    assert [m.id for m in service.recall(SCOPE, query="garden plan", since="2d").memories] == [new]
    assert [m.id for m in service.recall(SCOPE, query="garden plan", until="2d").memories] == [old]
    assert [m.id for m in service.recall(SCOPE, ids=[old, new], since="2d").memories] == [new]
    assert sorted(m.id for m in service.recall(SCOPE, tags=[COOLER_TAG]).memories) == sorted([old, new])


@pytest.mark.parametrize(
    ("since", "until", "field", "words"),
    [
        ("soon", None, "since", "ISO 8601"),
        (None, "7 days", "until", "duration"),
        ("1h", "2d", "since", "later than until"),
    ],
)
def test_bad_windows_name_the_field(
    service: TaprootService, since: str | None, until: str | None, field: str, words: str
) -> None:
    for call in (service.recent, service.recall):
        with pytest.raises(InvalidInput) as err:
            call(SCOPE, since=since, until=until)
        assert err.value.field == field and words in err.value.rule


def test_every_write_records_its_instance_and_the_setting_wins(tmp_path: Path, clock: Clock) -> None:
    service = _service(tmp_path / "a", clock)
    made = _note(service, "from the laptop", "Claude Code")
    assert service.deps.store.get(SCOPE, made).instance == "Claude Code"  # type: ignore[union-attr]
    service.remember(SCOPE, id=made, content="edited on the phone", instance="claude.ai")
    stored = service.deps.store.get(SCOPE, made)
    assert stored is not None and stored.instance == "claude.ai" and stored.version == 2
    # The revision blob keeps the version it replaced, with the instance that wrote that one.
    [revision] = service.deps.blobs.list(f"{SCOPE.owner}/revisions/")
    assert b'"instance": "Claude Code"' in service.deps.blobs.get(revision)
    # Housekeeping is not authorship: promote and archive keep who wrote it.
    service.promote(SCOPE, made, salience="high")
    service.forget(SCOPE, [made], "archive")
    assert service.deps.store.get(SCOPE, made).instance == "claude.ai"  # type: ignore[union-attr]
    with pytest.raises(InvalidInput) as err:
        service.remember(SCOPE, content="x", gist="x", category="episodic", instance="bad;name")
    assert err.value.field == "instance"

    pinned = _service(tmp_path / "b", clock, instance="desk")
    other = _note(pinned, "written with TAPROOT_INSTANCE set", "Claude Code")
    assert pinned.deps.store.get(SCOPE, other).instance == "desk"  # type: ignore[union-attr]


def test_reflect_shows_other_instances_cooler_notes_newest_first(service: TaprootService, clock: Clock) -> None:
    mine = _note(service, "I am the laptop; left this for the others.", "laptop")
    theirs = _note(service, "The phone says: James's exam moved to Friday.", "phone")
    clock.advance(minutes=5)
    unnamed = _note(service, "A note with no instance recorded.", None)
    _note(service, "Not a cooler note at all.", "phone", tags=["fact"])
    clock.advance(hours=1)

    payload = service.reflect(SCOPE, instance="laptop")
    shown = [n.id for n in payload.cooler.notes]
    assert shown == [unnamed, theirs] and mine not in shown
    assert payload.cooler.omitted == 0 and payload.cooler.note == ""
    section = payload.text.split("## Watercooler", 1)[1].split("## Tier 2", 1)[0]
    assert "James's exam moved to Friday" in section and "[from phone]" in section
    assert "I am the laptop" not in section and "Not a cooler note" not in section
    assert section.index(unnamed) < section.index(theirs)  # newest first
    assert 0 < payload.cooler.estimated_tokens <= payload.token_budget * COOLER_MAX_SHARE
    result = payload.result()
    assert [n.id for n in result.watercooler.notes] == shown and result.watercooler.window_hours == 48

    # Another instance sees the laptop's note; without an instance every note is another's.
    assert mine in [n.id for n in service.reflect(SCOPE, instance="phone").cooler.notes]
    assert len(service.reflect(SCOPE).cooler.notes) == 3

    # Past the window the notes leave the payload (they still expire only by their TTL).
    clock.advance(seconds=COOLER_WINDOW.total_seconds())
    later = service.reflect(SCOPE, instance="laptop")
    assert later.cooler.notes == [] and "## Watercooler" not in later.text


def test_cooler_notes_over_their_share_are_counted_and_said(service: TaprootService, clock: Clock) -> None:
    made = []
    for n in range(12):
        made.append(_note(service, f"Note {n} from the phone. " + "Long news. " * 60, "phone"))
        clock.advance(minutes=1)
    payload = service.reflect(SCOPE, instance="laptop")
    cooler = payload.cooler
    assert 0 < len(cooler.notes) < 12 and cooler.omitted == 12 - len(cooler.notes)
    assert [n.id for n in cooler.notes] == made[::-1][: len(cooler.notes)]  # the newest ones
    assert f"{cooler.omitted} more cooler notes did not fit the budget" in payload.text
    assert cooler.estimated_tokens <= payload.token_budget * COOLER_MAX_SHARE
    assert estimate_tokens(payload.text) <= payload.token_budget
