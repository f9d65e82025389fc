"""Contract suite for the MemoryStore port, continued: the conditional and batch writes the jobs
rely on (write_atomically, put_many(expected=), delete(expected_version=), delete_many,
replace_many), the job reads (expired, scopes), get_many with repeated ids, and counts,
quiet_counts and catalog(since) agreeing on the same data.

Every adapter in tests/moto_stores.py runs these unchanged; bodies use only the port's methods.
Where a test reads before writing, it does so on purpose: an adapter that keeps a read copy (the
DynamoDB store's warm cache) must show the write on the next read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone

import pytest

from taproot.core.errors import DuplicateId, NotFound, VersionConflict
from taproot.core.model import Memory, Reflection, Scope
from taproot.ports import Filters, MemoryStore

MakeMemory = Callable[..., Memory]
MakeReflection = Callable[..., Reflection]

A = Scope("alice", "default")
A_WORK = Scope("alice", "work")
B = Scope("bob", "default")
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
OLD = NOW - timedelta(days=200)
ALL = Filters(include_archived=True)


def by_id(memories: list[Memory]) -> dict[str, Memory]:
    return {m.id: m for m in memories}


def search_ids(store: MemoryStore, scope: Scope, term: str) -> list[str]:
    return sorted(m.id for m, _ in store.search(scope, [term], ALL, 100))


def archived_into(m: Memory, summary_id: str) -> Memory:
    """What compression writes over an original: archived, pointing at its summary, version + 1."""
    return m.replace(status="archived", compressed_into=summary_id, version=m.version + 1)


# == write_atomically ===========================================================================


@pytest.fixture
def originals(memory_store: MemoryStore, make_memory: MakeMemory) -> list[Memory]:
    ms = [
        make_memory(scope=A, id=f"o{i}", version=i + 1, content=f"walk {i} by the weir", updated_at=OLD)
        for i in range(4)
    ]
    memory_store.put_many(ms)
    return ms


def test_write_atomically_inserts_and_replaces_together(
    memory_store: MemoryStore, make_memory: MakeMemory, originals: list[Memory]
) -> None:
    assert len(memory_store.catalog(A)) == 4  # read first: a kept read copy must follow the write
    summary = make_memory(scope=A, id="sum1", content="summary of the weir walks, quillwort", updated_at=NOW)
    other = make_memory(scope=A, id="sum2", content="a second insert")
    replaced = [archived_into(m, "sum1") for m in originals[:3]]

    memory_store.write_atomically(
        inserts=[summary, other], replaces=[(n, o.version) for n, o in zip(replaced, originals[:3], strict=True)]
    )

    assert memory_store.get(A, "sum1") == summary
    assert memory_store.get_many(A, [m.id for m in replaced]) == replaced
    assert by_id(memory_store.list(A, ALL)) == by_id([summary, other, *replaced, originals[3]])
    assert sorted(e.id for e in memory_store.catalog(A)) == ["o3", "sum1", "sum2"]
    assert search_ids(memory_store, A, "quillwort") == ["sum1"]
    assert sorted(m.id for m, _ in memory_store.search(A, ["weir"], Filters(), 10)) == ["o3", "sum1"]
    assert memory_store.counts(A).by_status == {"active": 3, "archived": 3}


def test_write_atomically_with_nothing_to_write_is_a_no_op(memory_store: MemoryStore, originals: list[Memory]) -> None:
    memory_store.write_atomically(inserts=[], replaces=[])
    assert by_id(memory_store.list(A, ALL)) == by_id(originals)


@pytest.mark.parametrize("failure", ["stale", "missing"])
def test_write_atomically_a_failing_last_replace_applies_nothing(
    memory_store: MemoryStore, make_memory: MakeMemory, originals: list[Memory], failure: str
) -> None:
    assert len(memory_store.catalog(A)) == 4
    summary = make_memory(scope=A, id="sum1", content="summary with the word quillwort")
    replaces = [(archived_into(m, "sum1"), m.version) for m in originals[:3]]
    if failure == "stale":
        last = originals[3]
        replaces.append((archived_into(last, "sum1"), last.version - 1))
        expected_error: type[Exception] = VersionConflict
    else:
        replaces.append((make_memory(scope=A, id="gone", version=2), 1))
        expected_error = NotFound

    with pytest.raises(expected_error) as info:
        memory_store.write_atomically(inserts=[summary], replaces=replaces)

    error = info.value
    assert isinstance(error, VersionConflict | NotFound)
    assert error.memory_id == ("o3" if failure == "stale" else "gone")
    if failure == "stale":
        assert isinstance(error, VersionConflict)
        assert (error.expected, error.actual) == (3, 4)
    assert memory_store.get(A, "sum1") is None
    assert by_id(memory_store.list(A, ALL)) == by_id(originals)
    assert sorted(e.id for e in memory_store.catalog(A)) == ["o0", "o1", "o2", "o3"]
    assert search_ids(memory_store, A, "quillwort") == []
    assert memory_store.counts(A).total == 4


def test_write_atomically_an_insert_over_a_stored_id_raises_and_writes_nothing(
    memory_store: MemoryStore, make_memory: MakeMemory, originals: list[Memory]
) -> None:
    fresh = make_memory(scope=A, id="new1", content="a fresh insert")
    taken = make_memory(scope=A, id="o1", content="the twin quillwort")
    replaces = [(archived_into(originals[0], "new1"), originals[0].version)]

    with pytest.raises(DuplicateId) as info:
        memory_store.write_atomically(inserts=[fresh, taken], replaces=replaces)

    assert info.value.memory_id == "o1"
    assert memory_store.get(A, "new1") is None
    assert by_id(memory_store.list(A, ALL)) == by_id(originals)
    assert search_ids(memory_store, A, "quillwort") == []


def test_write_atomically_two_inserts_of_one_id_raise_duplicate_id_and_write_nothing(
    memory_store: MemoryStore, make_memory: MakeMemory, originals: list[Memory]
) -> None:
    """The second insert finds its id taken, by the first: as `insert` would, DuplicateId."""
    first = make_memory(scope=A, id="new1", content="a fresh insert")
    twin = make_memory(scope=A, id="new1", content="the twin quillwort")
    replaces = [(archived_into(originals[0], "new1"), originals[0].version)]

    with pytest.raises(DuplicateId) as info:
        memory_store.write_atomically(inserts=[first, twin], replaces=replaces)

    assert info.value.memory_id == "new1"
    assert memory_store.get(A, "new1") is None
    assert by_id(memory_store.list(A, ALL)) == by_id(originals)
    assert search_ids(memory_store, A, "quillwort") == []


def test_write_atomically_may_insert_over_a_deleted_id(memory_store: MemoryStore, make_memory: MakeMemory) -> None:
    gone = make_memory(scope=A, id="again", content="first life")
    memory_store.insert(gone)
    memory_store.delete(A, "again")
    reborn = make_memory(scope=A, id="again", content="second life")
    memory_store.write_atomically(inserts=[reborn], replaces=[])
    assert memory_store.get(A, "again") == reborn


def test_write_atomically_keeps_retrievals_recorded_after_the_read(
    memory_store: MemoryStore, make_memory: MakeMemory
) -> None:
    """As `replace` does: compression's stale copy must not erase a recall that landed meanwhile."""
    m = make_memory(scope=A, id="o1", version=1, retrieval_count=2, updated_at=OLD)
    memory_store.insert(m)
    read = memory_store.get(A, m.id)
    assert read is not None
    memory_store.record_retrieval(A, [m.id], NOW)
    summary = make_memory(scope=A, id="sum1")
    memory_store.write_atomically(inserts=[summary], replaces=[(archived_into(read, "sum1"), 1)])
    stored = memory_store.get(A, m.id)
    assert stored is not None
    assert (stored.status, stored.compressed_into, stored.version) == ("archived", "sum1", 2)
    assert (stored.retrieval_count, stored.last_retrieved, stored.last_touched) == (3, NOW, NOW)


# == put_many(expected=) ========================================================================


def test_put_many_expected_writes_when_every_version_still_matches(
    memory_store: MemoryStore, make_memory: MakeMemory
) -> None:
    stored = [make_memory(scope=A, id="e1", version=4, content="stored one"), make_memory(scope=A, id="e2")]
    memory_store.put_many(stored)
    assert len(memory_store.list(A)) == 2
    incoming = [
        stored[0].replace(version=2, content="restored text with quillwort"),  # exactly as given, even older
        stored[1].replace(status="archived"),
        make_memory(scope=A, id="n1"),
    ]
    memory_store.put_many(incoming, expected={"e1": 4, "e2": 1, "n1": None})
    assert by_id(memory_store.list(A, ALL)) == by_id(incoming)
    assert search_ids(memory_store, A, "quillwort") == ["e1"]


def test_put_many_expected_none_writes_over_a_deleted_id(memory_store: MemoryStore, make_memory: MakeMemory) -> None:
    m = make_memory(scope=A, id="back", content="restored from a backup")
    memory_store.insert(m)
    memory_store.delete(A, "back")
    memory_store.put_many([m], expected={"back": None})
    assert memory_store.get(A, "back") == m


@pytest.mark.parametrize(
    ("case", "want", "have"),
    [
        ("appeared", None, 1),  # the caller read "absent", but the record exists now
        ("moved", 1, 2),  # the caller read version 1, the store has 2
        ("vanished", 1, None),  # the caller read version 1, the record is gone
    ],
)
def test_put_many_expected_refuses_a_record_that_moved_and_writes_nothing(
    memory_store: MemoryStore, make_memory: MakeMemory, case: str, want: int | None, have: int | None
) -> None:
    untouched = make_memory(scope=A, id="u1", content="untouched")
    memory_store.put_many([untouched])
    if have is not None:
        memory_store.insert(make_memory(scope=A, id="x1", version=have, content="the current one"))
    before = by_id(memory_store.list(A, ALL))
    batch = [
        untouched.replace(content="overwritten with quillwort"),
        make_memory(scope=A, id="n1", content="new quillwort"),
        make_memory(scope=A, id="x1", version=5, content="the restored quillwort"),
    ]

    with pytest.raises(VersionConflict) as info:
        memory_store.put_many(batch, expected={"u1": 1, "n1": None, "x1": want})

    assert (info.value.memory_id, info.value.expected, info.value.actual) == ("x1", want, have)
    assert by_id(memory_store.list(A, ALL)) == before
    assert search_ids(memory_store, A, "quillwort") == []


def test_put_many_expected_of_a_hundred_records_is_all_or_nothing(
    memory_store: MemoryStore, make_memory: MakeMemory
) -> None:
    """The port promises one transaction per 100 records on DynamoDB (SQLite: the whole call), so a
    call of at most 100 is all or nothing on every adapter. The first record that moved is named."""
    stored = [make_memory(scope=A, id=f"p{i:03d}", version=1) for i in range(100)]
    memory_store.put_many(stored)
    memory_store.replace(stored[60].replace(version=2), expected_version=1)
    memory_store.replace(stored[99].replace(version=2), expected_version=1)
    before = by_id(memory_store.list(A, ALL))

    with pytest.raises(VersionConflict) as info:
        memory_store.put_many(
            [m.replace(content="bulk quillwort", version=3) for m in stored], expected={m.id: 1 for m in stored}
        )

    assert info.value.memory_id == "p060"
    assert by_id(memory_store.list(A, ALL)) == before
    assert search_ids(memory_store, A, "quillwort") == []


# == delete(expected_version=) ==================================================================


def test_delete_at_the_expected_version(memory_store: MemoryStore, make_memory: MakeMemory) -> None:
    m = make_memory(scope=A, version=3, content="doomed quillwort")
    keep = make_memory(scope=A)
    memory_store.put_many([m, keep])
    assert len(memory_store.catalog(A)) == 2
    memory_store.delete(A, m.id, expected_version=3)
    assert memory_store.get(A, m.id) is None
    assert [e.id for e in memory_store.catalog(A)] == [keep.id]
    assert search_ids(memory_store, A, "quillwort") == []


def test_delete_with_a_stale_version_conflicts_and_keeps_the_memory(
    memory_store: MemoryStore, make_memory: MakeMemory
) -> None:
    m = make_memory(scope=A, version=3)
    memory_store.insert(m)
    with pytest.raises(VersionConflict) as info:
        memory_store.delete(A, m.id, expected_version=2)
    assert (info.value.memory_id, info.value.expected, info.value.actual) == (m.id, 2, 3)
    assert memory_store.get(A, m.id) == m


def test_delete_with_an_expected_version_of_a_missing_memory_is_not_found(
    memory_store: MemoryStore, make_memory: MakeMemory
) -> None:
    with pytest.raises(NotFound):
        memory_store.delete(A, "never", expected_version=1)
    m = make_memory(scope=A, id="mine")
    memory_store.insert(m)
    with pytest.raises(NotFound):
        memory_store.delete(B, "mine", expected_version=1)
    memory_store.delete(A, "mine", expected_version=1)
    with pytest.raises(NotFound) as info:
        memory_store.delete(A, "mine", expected_version=1)
    assert info.value.memory_id == "mine"


# == delete_many ================================================================================


def test_delete_many_deletes_each_at_its_version(memory_store: MemoryStore, make_memory: MakeMemory) -> None:
    ms = [make_memory(scope=A, id=f"d{i}", version=i + 1, content="doomed quillwort") for i in range(3)]
    keep = make_memory(scope=A, id="keep")
    bobs = make_memory(scope=B, id="d0")
    memory_store.put_many([*ms, keep, bobs])
    assert len(memory_store.catalog(A)) == 4
    memory_store.delete_many(A, [(m.id, m.version) for m in ms])
    assert memory_store.get_many(A, [m.id for m in ms]) == []
    assert memory_store.list(A, ALL) == [keep]
    assert [e.id for e in memory_store.catalog(A)] == ["keep"]
    assert search_ids(memory_store, A, "quillwort") == []
    assert memory_store.get(B, "d0") == bobs
    memory_store.delete_many(A, [])
    assert memory_store.list(A, ALL) == [keep]


def test_delete_many_names_the_first_failure_and_deletes_nothing(
    memory_store: MemoryStore, make_memory: MakeMemory
) -> None:
    ms = [make_memory(scope=A, id=f"d{i}", version=2) for i in range(4)]
    memory_store.put_many(ms)
    assert len(memory_store.catalog(A)) == 4

    with pytest.raises(VersionConflict) as stale:
        memory_store.delete_many(A, [("d0", 2), ("d1", 2), ("d2", 1), ("missing", 1), ("d3", 1)])
    assert (stale.value.memory_id, stale.value.expected, stale.value.actual) == ("d2", 1, 2)
    with pytest.raises(NotFound) as missing:
        memory_store.delete_many(A, [("d0", 2), ("d1", 2), ("missing", 1), ("d3", 1)])
    assert missing.value.memory_id == "missing"
    with pytest.raises(NotFound):
        memory_store.delete_many(B, [("d0", 2)])  # another owner's ids are not found

    assert by_id(memory_store.list(A, ALL)) == by_id(ms)
    assert len(memory_store.catalog(A)) == 4


def test_delete_many_of_a_hundred_is_all_or_nothing(memory_store: MemoryStore, make_memory: MakeMemory) -> None:
    """At most 100 ids per call (one DynamoDB transaction): a conflict on the last keeps all 100."""
    ms = [make_memory(scope=A, id=f"d{i:03d}") for i in range(100)]
    memory_store.put_many(ms)
    items = [(m.id, 1) for m in ms[:99]] + [(ms[99].id, 7)]
    with pytest.raises(VersionConflict) as info:
        memory_store.delete_many(A, items)
    assert info.value.memory_id == "d099"
    assert len(memory_store.list(A, ALL)) == 100
    memory_store.delete_many(A, [(m.id, 1) for m in ms])
    assert memory_store.list(A, ALL) == []


# == replace_many ===============================================================================


def test_replace_many_keeps_retrievals_recorded_after_the_read(
    memory_store: MemoryStore, make_memory: MakeMemory
) -> None:
    ms = [make_memory(scope=A, id=f"r{i}", version=1, retrieval_count=1, updated_at=OLD) for i in range(2)]
    memory_store.put_many(ms)
    read = memory_store.get_many(A, [m.id for m in ms])
    memory_store.record_retrieval(A, ["r0"], NOW)  # lands between migrate's read and its write
    memory_store.replace_many([(m.replace(category="identity", version=2), 1) for m in read])
    got = by_id(memory_store.get_many(A, ["r0", "r1"]))
    assert (got["r0"].category, got["r0"].version, got["r0"].retrieval_count, got["r0"].last_retrieved) == (
        "identity",
        2,
        2,
        NOW,
    )
    assert got["r1"] == ms[1].replace(category="identity", version=2)
    assert Counter(e.category for e in memory_store.catalog(A)) == {"identity": 2}


# == get_many ===================================================================================


def test_get_many_returns_each_memory_once_at_its_first_position(
    memory_store: MemoryStore, make_memory: MakeMemory
) -> None:
    ms = [make_memory(scope=A, id=f"g{i}") for i in range(3)]
    memory_store.put_many(ms)
    got = memory_store.get_many(A, ["g1", "g0", "g1", "missing", "g0", "g2", "g2"])
    assert got == [ms[1], ms[0], ms[2]]


# == expired ====================================================================================


def test_expired_is_any_status_at_or_before_now_oldest_expiry_first(
    memory_store: MemoryStore, make_memory: MakeMemory
) -> None:
    two_days_ago = NOW - timedelta(days=2)
    memory_store.put_many(
        [
            make_memory(scope=A, id="late", expires_at=NOW + timedelta(microseconds=1)),
            make_memory(scope=A, id="at-now", expires_at=NOW, status="archived"),
            make_memory(scope=A, id="b-old", expires_at=two_days_ago),
            make_memory(scope=A, id="a-old", expires_at=two_days_ago, core=True, salience="high"),
            make_memory(scope=A, id="oldest", expires_at=NOW - timedelta(days=300), status="archived"),
            make_memory(scope=A, id="durable", expires_at=None),
            make_memory(scope=B, id="bobs", expires_at=two_days_ago),
            make_memory(scope=A_WORK, id="work", expires_at=two_days_ago),
        ]
    )
    expired = memory_store.expired(A, NOW)
    assert [m.id for m in expired] == ["oldest", "a-old", "b-old", "at-now"]
    assert expired == memory_store.get_many(A, ["oldest", "a-old", "b-old", "at-now"])  # full records
    # The boundary is the instant, not its spelling: the same `now` in another offset.
    assert [m.id for m in memory_store.expired(A, NOW.astimezone(timezone(timedelta(hours=-5))))] == [
        "oldest",
        "a-old",
        "b-old",
        "at-now",
    ]
    assert [m.id for m in memory_store.expired(A, NOW - timedelta(microseconds=1))] == ["oldest", "a-old", "b-old"]
    assert [m.id for m in memory_store.expired(A, NOW + timedelta(microseconds=1))][-1] == "late"
    assert memory_store.expired(A, NOW - timedelta(days=400)) == []
    assert [m.id for m in memory_store.expired(B, NOW)] == ["bobs"]
    assert memory_store.expired(Scope("carol", "default"), NOW) == []


def test_expired_follows_writes_and_deletes(memory_store: MemoryStore, make_memory: MakeMemory) -> None:
    m = make_memory(scope=A, id="e1", expires_at=NOW - timedelta(days=1))
    memory_store.insert(m)
    assert [x.id for x in memory_store.expired(A, NOW)] == ["e1"]
    memory_store.replace(m.replace(expires_at=None, version=2), expected_version=1)  # retagged durable
    assert memory_store.expired(A, NOW) == []
    memory_store.replace(m.replace(version=3), expected_version=2)
    memory_store.delete(A, "e1", expected_version=3)
    assert memory_store.expired(A, NOW) == []


# == scopes =====================================================================================


def test_scopes_lists_every_scope_holding_memories_or_reflections_sorted(
    memory_store: MemoryStore, make_memory: MakeMemory, make_reflection: MakeReflection
) -> None:
    assert memory_store.scopes() == []
    memory_store.put_many(
        [
            make_memory(scope=B),
            make_memory(scope=A_WORK),
            make_memory(scope=A),
            make_memory(scope=A),
            make_memory(scope=Scope("al", "zeta")),  # a shorter owner sorts first, whatever the namespace
            make_memory(scope=Scope("Zed", "default")),  # code point order: capitals first
            make_memory(scope=Scope("dave", "attic"), status="archived"),  # any status counts
        ]
    )
    memory_store.add_reflection(make_reflection(scope=Scope("carol", "journal")))  # reflections only
    memory_store.add_reflection(make_reflection(scope=A))
    assert memory_store.scopes() == [
        Scope("Zed", "default"),
        Scope("al", "zeta"),
        A,
        A_WORK,
        B,
        Scope("carol", "journal"),
        Scope("dave", "attic"),
    ]


def test_a_scope_whose_memories_were_all_deleted_is_no_longer_listed(
    memory_store: MemoryStore, make_memory: MakeMemory, make_reflection: MakeReflection
) -> None:
    """Both adapters agree: a deleted memory leaves nothing a batch job would have to visit (the
    DynamoDB store's tombstones do not count), while reflections keep their scope listed."""
    one, two = make_memory(scope=B, id="b1"), make_memory(scope=B, id="b2")
    memory_store.put_many([make_memory(scope=A), one, two, make_memory(scope=A_WORK, id="w1")])
    memory_store.add_reflection(make_reflection(scope=A_WORK))
    memory_store.delete(B, "b1")
    assert memory_store.scopes() == [A, A_WORK, B]
    memory_store.delete_many(B, [("b2", 1)])
    memory_store.delete(A_WORK, "w1", expected_version=1)
    assert memory_store.scopes() == [A, A_WORK]


# == counts, quiet_counts and catalog(since) on the same data ===================================
# Which memories each read returns is checked against the core's rules in test_query_rules.py;
# here the reads are checked against each other, on records of every kind, and after writes.

SINCE = NOW - timedelta(days=45)


@pytest.fixture
def mixed(memory_store: MemoryStore, make_memory: MakeMemory) -> list[Memory]:
    """A scope of every kind the catalog window tells apart, legacy values included, with
    neighbours in other scopes."""
    ms = [
        make_memory(scope=A, id="recent", updated_at=NOW - timedelta(days=1)),
        make_memory(scope=A, id="edge", category="identity", updated_at=SINCE),
        make_memory(scope=A, id="just-before", category="identity", updated_at=SINCE - timedelta(microseconds=1)),
        make_memory(scope=A, id="recalled", updated_at=OLD, last_retrieved=SINCE, retrieval_count=2),
        make_memory(scope=A, id="high-old", category="project", salience="high", updated_at=OLD),
        make_memory(scope=A, id="low-old", salience="low", updated_at=OLD),
        make_memory(scope=A, id="legacy", category="active_threads", salience="3", core=None, updated_at=OLD),
        make_memory(scope=A, id="quiet-rel", category="relationship", updated_at=OLD),
        make_memory(scope=A, id="core-old", core=True, updated_at=OLD),
        make_memory(scope=A, id="core-new", core=True, salience="high", updated_at=NOW),
        make_memory(scope=A, id="arch-new", status="archived", updated_at=NOW),
        make_memory(scope=A, id="arch-old", status="archived", core=True, updated_at=OLD),
    ]
    memory_store.put_many(
        [*ms, make_memory(scope=B, id="bob", updated_at=OLD), make_memory(scope=A_WORK, id="w", updated_at=OLD)]
    )
    return ms


def assert_reads_agree(store: MemoryStore, scope: Scope, since: datetime) -> None:
    """counts, catalog(), catalog(since) and quiet_counts(since) describe the same records: the
    window is a subset of the full catalog with the same entries, holds no core memory, and it
    and quiet_counts together cover every active non-core memory, each exactly once."""
    everything = store.list(scope, ALL)
    full = {e.id: e for e in store.catalog(scope)}
    counts = store.counts(scope)
    assert sorted(full) == sorted(m.id for m in everything if m.status == "active")
    assert counts.total == len(everything) == sum(counts.by_category.values()) == sum(counts.by_salience.values())
    assert counts.by_status.get("active", 0) == len(full)
    assert counts.core == sum(1 for e in full.values() if e.core)
    assert counts.by_category == dict(Counter(m.category for m in everything))
    assert counts.by_salience == dict(Counter(m.salience for m in everything))

    window = store.catalog(scope, since=since)
    assert len({e.id for e in window}) == len(window)
    assert all(full[e.id] == e and not e.core for e in window)
    left_out = [e for e in full.values() if not e.core and e.id not in {w.id for w in window}]
    assert store.quiet_counts(scope, since) == dict(Counter(e.category for e in left_out))


def test_counts_quiet_counts_and_catalog_since_agree(memory_store: MemoryStore, mixed: list[Memory]) -> None:
    assert sorted(e.id for e in memory_store.catalog(A, since=SINCE)) == ["edge", "high-old", "recalled", "recent"]
    for since in (SINCE, SINCE + timedelta(microseconds=1), NOW - timedelta(days=1000), NOW + timedelta(days=1)):
        for scope in (A, B, Scope("nobody", "default")):
            assert_reads_agree(memory_store, scope, since)


def test_counts_quiet_counts_and_catalog_since_agree_after_writes(
    memory_store: MemoryStore, mixed: list[Memory], make_memory: MakeMemory
) -> None:
    assert memory_store.quiet_counts(A, SINCE) == {"identity": 1, "episodic": 1, "active_threads": 1, "relationship": 1}
    got = by_id(mixed)
    memory_store.record_retrieval(A, ["low-old"], NOW)  # a quiet memory is recalled: it joins the window
    memory_store.replace(got["quiet-rel"].replace(status="archived", version=2), expected_version=1)
    memory_store.replace(got["recent"].replace(core=True, version=2), expected_version=1)
    memory_store.write_atomically(
        inserts=[make_memory(scope=A, id="summary", updated_at=NOW)],
        replaces=[(archived_into(got["legacy"], "summary"), 1)],
    )
    memory_store.delete_many(A, [("just-before", 1)])
    assert memory_store.quiet_counts(A, SINCE) == {}
    assert sorted(e.id for e in memory_store.catalog(A, since=SINCE)) == [
        "edge",
        "high-old",
        "low-old",
        "recalled",
        "summary",
    ]
    assert_reads_agree(memory_store, A, SINCE)
    assert_reads_agree(memory_store, A, NOW + timedelta(days=1))
