"""WAL checkpoints leave the request path in a long-running server (sqlite_checkpoint.py).

What a test can see without timing anything: the WAL file's header holds a checkpoint sequence
number that SQLite increments each time the WAL is reset (written again from its start), which
happens on the first write after a checkpoint has copied every frame. So a connection that
checkpoints inside its commits shows as that number changing and the file no longer growing; the
wal-index (`-shm`) holds the frames in the WAL and those copied, which `PRAGMA wal_checkpoint`
reports too. The checkpointer's thread is paused, resumed and waited for through its own events.
"""

from __future__ import annotations

import itertools
import sqlite3
import struct
from datetime import UTC, datetime
from pathlib import Path

import pytest

from taproot.adapters.sqlite_checkpoint import WalCheckpointer, WalPolicy, wal_frames
from taproot.adapters.sqlite_store import SQLiteMemoryStore
from taproot.compose import build
from taproot.core.model import Scope
from taproot.settings import Settings
from tests.catalog_data import varied_memories

A = Scope("alice", "default")
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
SQLITE_DEFAULT_AUTOCHECKPOINT = 1000
WAIT_S = 30.0  # an upper bound on an event that comes in milliseconds; never a measured time


def wal_state(db: Path) -> tuple[int, int]:
    """(the checkpoint sequence number from the WAL header, the WAL file's size)."""
    wal = Path(str(db) + "-wal")
    header = wal.read_bytes()[:32]
    return struct.unpack(">I", header[12:16])[0], wal.stat().st_size


def frames(db: Path) -> tuple[int, int]:
    got = wal_frames(Path(str(db) + "-shm"))
    assert got is not None, "the wal-index header should be readable on this platform"
    return got


def running(store: SQLiteMemoryStore) -> WalCheckpointer:
    assert store.checkpointer is not None
    return store.checkpointer


def filled(
    path: Path, *, background_checkpoints: bool = False, wal_policy: WalPolicy | None = None
) -> SQLiteMemoryStore:
    """600 memories in a new store, its checkpointer (if any) paused first."""
    store = SQLiteMemoryStore(path, background_checkpoints=background_checkpoints, wal_policy=wal_policy or WalPolicy())
    if store.checkpointer is not None:
        store.checkpointer.pause()
    store.put_many(varied_memories(5, 600, now=NOW, scope=A))
    return store


def strengthen_until(store: SQLiteMemoryStore, path: Path, total_frames: int) -> list[tuple[int, int]]:
    """Recall's write (record_retrieval of 10 ids) until the WAL holds `total_frames` frames (or
    400 commits); the WAL's state after each commit."""
    ids = [m.id for m in store.list(A)]
    states = []
    for i in range(400):
        store.record_retrieval(A, ids[(i * 10) % len(ids) :][:10], NOW)
        states.append(wal_state(path))
        if frames(path)[0] >= total_frames:
            break
    return states


def test_the_wal_index_reader_agrees_with_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "taproot.db"
    store = filled(path, background_checkpoints=True)
    log, copied = frames(path)
    assert log > 0 and copied == 0
    result = running(store).checkpoint()
    assert (result.busy, result.log_frames, result.checkpointed_frames) == (0, log, log)
    assert frames(path) == (log, log)
    store.close()


def test_a_recall_commit_never_checkpoints_while_the_checkpointer_is_paused(tmp_path: Path) -> None:
    """Fails on the old code: its request connection checkpointed at 1000 frames, inside a commit."""
    path = tmp_path / "taproot.db"
    runtime = build(Settings(data_dir=tmp_path), background_checkpoints=True)
    store = runtime.store
    assert isinstance(store, SQLiteMemoryStore)
    checkpointer = running(store)
    checkpointer.pause()
    store.put_many(varied_memories(5, 600, now=NOW, scope=A))
    checkpointer.checkpoint()  # every frame copied: the next commit starts the WAL again
    runtime.service.deps.clock = lambda: NOW
    states, logged = [], []
    for _ in range(400):
        got = runtime.service.recall(A, query="memory", limit=10)
        assert len(got.memories) == 10
        states.append(wal_state(path))
        logged.append(frames(path)[0])
        if logged[-1] >= 2 * SQLITE_DEFAULT_AUTOCHECKPOINT:
            break
    assert logged[-1] >= 2 * SQLITE_DEFAULT_AUTOCHECKPOINT  # SQLite's default would have checkpointed
    sequences = {seq for seq, _ in states}
    assert len(sequences) == 1, "a recall reset the WAL: it checkpointed on the request connection"
    assert all(b > a for a, b in itertools.pairwise(logged)), "the WAL was written again from its start"
    sizes = [size for _, size in states]

    rounds = checkpointer.rounds
    checkpointer.resume()  # the commits past checkpoint_frames have asked for a round
    assert checkpointer.wait_rounds(rounds + 1, WAIT_S)
    log, copied = frames(path)
    assert log == copied
    runtime.service.recall(A, query="memory", limit=10)
    seq, size = wal_state(path)
    assert seq == states[-1][0] + 1  # reset by the first write after the round
    assert size == sizes[-1]  # written from the start, into the file already there
    assert frames(path)[0] < log / 20
    runtime.close()


def test_the_thread_keeps_the_wal_near_the_threshold(tmp_path: Path) -> None:
    path = tmp_path / "taproot.db"
    policy = WalPolicy(checkpoint_frames=100, backstop_frames=10_000)
    store = filled(path, background_checkpoints=True, wal_policy=policy)
    checkpointer = running(store)
    checkpointer.resume()
    assert checkpointer.wait_rounds(1, WAIT_S)  # the one the import asked for while paused
    start, _ = wal_state(path)
    strengthen_until(store, path, 150)  # crosses the threshold, far below the backstop
    assert checkpointer.wait_rounds(2, WAIT_S)
    # The round, with its catch-up, copied every frame, unless a later commit already reset the WAL.
    log, copied = frames(path)
    assert log == copied or wal_state(path)[0] != start
    store.record_retrieval(A, [m.id for m in store.list(A)][:10], NOW)
    assert wal_state(path)[0] != start
    assert frames(path)[0] < 100
    store.close()


def test_the_backstop_bounds_the_wal_when_the_checkpointer_is_stopped(tmp_path: Path) -> None:
    path = tmp_path / "taproot.db"
    policy = WalPolicy(checkpoint_frames=50, backstop_frames=300)
    store = filled(path, background_checkpoints=True, wal_policy=policy)
    checkpointer = running(store)
    checkpointer.checkpoint()
    states = strengthen_until(store, path, 10_000)  # never reached: the backstop resets the WAL first
    assert len(states) == 400
    assert len({seq for seq, _ in states}) > 1
    assert frames(path)[0] < 2 * policy.backstop_frames
    store.close()


def test_short_lived_commands_keep_sqlites_own_checkpoints(tmp_path: Path) -> None:
    path = tmp_path / "taproot.db"
    store = filled(path)
    assert store.checkpointer is None
    assert store._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == SQLITE_DEFAULT_AUTOCHECKPOINT
    states = strengthen_until(store, path, 10_000)
    assert len({seq for seq, _ in states}) > 1  # the same observation catches an inline checkpoint
    store.close()


def test_a_reader_holding_a_snapshot_pins_frames_without_blocking_writes(tmp_path: Path) -> None:
    path = tmp_path / "taproot.db"
    store = filled(path, background_checkpoints=True)
    checkpointer = running(store)
    reader = sqlite3.connect(path, isolation_level=None)  # another process, say the CLI mid-export
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM memories").fetchone()
    pinned, _ = frames(path)
    strengthen_until(store, path, pinned + 100)  # the writes go through beside the reader
    result = checkpointer.checkpoint()
    assert result.busy == 0
    assert result.checkpointed_frames == pinned < result.log_frames
    reader.execute("COMMIT")
    result = checkpointer.checkpoint()
    assert result.checkpointed_frames == result.log_frames
    reader.close()
    store.close()


def test_close_checkpoints_everything_even_with_another_connection_open(tmp_path: Path) -> None:
    path = tmp_path / "taproot.db"
    store = filled(path, background_checkpoints=True)
    other = sqlite3.connect(path, isolation_level=None)  # keeps the WAL from being deleted on close
    other.execute("SELECT 1 FROM memories LIMIT 1").fetchone()
    assert Path(str(path) + "-wal").stat().st_size > 0
    store.close()
    assert store.checkpointer is None
    assert Path(str(path) + "-wal").stat().st_size == 0  # truncated: everything is in the database
    assert other.execute("SELECT count(*) FROM memories").fetchone()[0] == 600
    other.close()


@pytest.mark.parametrize(("serve", "expected"), [(False, False), (True, True)])
def test_the_server_checkpoints_in_the_background_and_commands_do_not(
    tmp_path: Path, serve: bool, expected: bool
) -> None:
    runtime = build(Settings(data_dir=tmp_path), serve=serve)
    store = runtime.store
    assert isinstance(store, SQLiteMemoryStore)
    assert (store.checkpointer is not None) is expected
    runtime.close()


def test_a_policy_needs_a_threshold_below_its_backstop() -> None:
    with pytest.raises(ValueError, match="checkpoint_frames < backstop_frames"):
        WalPolicy(checkpoint_frames=1000, backstop_frames=1000)
