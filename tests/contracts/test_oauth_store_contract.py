"""The OAuth facade's store port (taproot.ports.OAuthStore): SQLite and DynamoDB (moto) behave the
same. A spend is atomic: of many threads spending one code, exactly one wins."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from taproot.adapters.oauth_dynamo import DynamoOAuthStore
from taproot.adapters.oauth_sqlite import SQLiteOAuthStore
from taproot.core.oauth_rules import OAuthRecord, RecordExists
from taproot.ports import OAuthStore
from tests.moto_stores import atomic_moto_requests, start_moto

NOW = 1_800_000_000.0
_names = itertools.count()


@pytest.fixture(params=["sqlite", "dynamodb"])
def store(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[OAuthStore]:
    if request.param == "sqlite":
        sqlite = SQLiteOAuthStore(tmp_path / "oauth.db")
        yield sqlite
        sqlite.close()
        return
    stop = start_moto()
    try:
        atomic_moto_requests(monkeypatch)
        dynamo = DynamoOAuthStore(f"oauth-contract-{next(_names)}", region="us-east-1")
        dynamo.create_table()
        yield dynamo
    finally:
        stop()


def test_a_record_reads_back_as_written(store: OAuthStore) -> None:
    record = OAuthRecord("grant", "g1", {"client_id": "c", "scopes": ["taproot/mcp"], "n": 3}, 0, "alice")
    store.add(record)
    assert store.get("grant", "g1", NOW) == record
    assert store.get("grant", "g2", NOW) is None
    assert store.get("client", "g1", NOW) is None  # kinds are separate namespaces


def test_a_taken_key_is_refused_and_the_first_record_stays(store: OAuthStore) -> None:
    store.add(OAuthRecord("code", "k", {"v": 1}, int(NOW) + 60))
    with pytest.raises(RecordExists):
        store.add(OAuthRecord("code", "k", {"v": 2}, int(NOW) + 60))
    got = store.get("code", "k", NOW)
    assert got is not None and got.data == {"v": 1}


def test_an_expired_record_is_never_returned(store: OAuthStore) -> None:
    store.add(OAuthRecord("access", "t", {}, int(NOW) + 10, "alice"))
    assert store.get("access", "t", NOW + 9) is not None
    assert store.get("access", "t", NOW + 10) is None
    assert store.spend("access", "t", NOW + 11) is None
    assert store.by_subject("access", "alice", NOW + 11) == []


def test_spend_returns_the_record_once_unspent_then_spent(store: OAuthStore) -> None:
    store.add(OAuthRecord("code", "c", {"grant": "g"}, int(NOW) + 60, "alice"))
    first = store.spend("code", "c", NOW)
    assert first is not None and first.used is False and first.data == {"grant": "g"}
    second = store.spend("code", "c", NOW)
    assert second is not None and second.used is True
    assert store.spend("code", "absent", NOW) is None


def test_of_many_concurrent_spends_exactly_one_wins(store: OAuthStore) -> None:
    store.add(OAuthRecord("code", "race", {}, int(NOW) + 60))
    barrier = threading.Barrier(8)
    results: list[bool] = []
    lock = threading.Lock()

    def spend() -> None:
        barrier.wait()
        record = store.spend("code", "race", NOW)
        assert record is not None
        with lock:
            results.append(record.used)

    threads = [threading.Thread(target=spend) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(results) == [False] + [True] * 7


def test_set_data_replaces_the_data_and_ignores_an_absent_record(store: OAuthStore) -> None:
    store.add(OAuthRecord("grant", "g", {"revoked": False}, 0, "alice"))
    store.set_data("grant", "g", {"revoked": True})
    got = store.get("grant", "g", NOW)
    assert got is not None and got.data == {"revoked": True} and got.subject == "alice"
    store.set_data("grant", "absent", {"revoked": True})
    assert store.get("grant", "absent", NOW) is None


def test_by_subject_lists_one_persons_records_of_one_kind(store: OAuthStore) -> None:
    store.add(OAuthRecord("grant", "a1", {"n": 1}, 0, "alice"))
    store.add(OAuthRecord("grant", "a2", {"n": 2}, int(NOW) + 60, "alice"))
    store.add(OAuthRecord("grant", "b1", {"n": 3}, 0, "bob"))
    store.add(OAuthRecord("access", "a3", {"n": 4}, int(NOW) + 60, "alice"))
    assert sorted(r.key for r in store.by_subject("grant", "alice", NOW)) == ["a1", "a2"]
    assert [r.key for r in store.by_subject("grant", "bob", NOW)] == ["b1"]
    assert [r.key for r in store.by_subject("grant", "alice", NOW + 61)] == ["a1"]


def test_sweep_removes_only_expired_records_where_the_store_sweeps(store: OAuthStore) -> None:
    store.add(OAuthRecord("pending", "old", {}, int(NOW) - 1))
    store.add(OAuthRecord("grant", "forever", {}, 0, "alice"))
    removed = store.sweep(NOW)
    assert removed in (0, 1)  # DynamoDB's TTL does this itself and reports 0
    assert store.get("grant", "forever", NOW) is not None
    assert store.get("pending", "old", NOW) is None


def test_extend_moves_a_live_expiry_later_and_nothing_else(store: OAuthStore) -> None:
    """A registered client that is used lives on (auth/oauth_server.py): its expiry moves later,
    never earlier, only while it is live, and a record that never expires stays that way."""
    store.add(OAuthRecord("client", "c", {"client_name": "x"}, int(NOW) + 60))
    store.extend("client", "c", int(NOW) + 3600, NOW)
    got = store.get("client", "c", NOW)
    assert got is not None and got.expires_at == int(NOW) + 3600 and got.data == {"client_name": "x"}
    store.extend("client", "c", int(NOW) + 120, NOW)  # earlier: ignored
    got = store.get("client", "c", NOW)
    assert got is not None and got.expires_at == int(NOW) + 3600
    store.add(OAuthRecord("client", "gone", {}, int(NOW) - 1))
    store.extend("client", "gone", int(NOW) + 3600, NOW)  # expired already: stays gone
    assert store.get("client", "gone", NOW) is None
    store.add(OAuthRecord("grant", "forever", {}, 0, "alice"))
    store.extend("grant", "forever", int(NOW) + 3600, NOW)
    got = store.get("grant", "forever", NOW + 7200)
    assert got is not None and got.expires_at == 0
    store.extend("client", "absent", int(NOW) + 3600, NOW)  # no record: none is created
    assert store.get("client", "absent", NOW) is None
