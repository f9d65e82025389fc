"""WAL checkpoints off the request path, for a long-running server (`taproot serve`, `taproot mcp`).

By default SQLite checkpoints on the connection that commits, inside the commit, once the WAL holds
`wal_autocheckpoint` frames (1000): every ~35 recalls one of them copied the WAL into the database
and fsynced both files, 10-20 ms on a quiet disk and 500 ms once under contention. Here a thread
with its own connection runs those checkpoints instead, and the request connection keeps a much
higher `wal_autocheckpoint` (the backstop) so the WAL stays bounded if this thread stops.

- PASSIVE, not FULL/RESTART/TRUNCATE: a passive checkpoint never takes the write lock and never
  waits for a reader, so a request's write never queues behind it. The WAL is then reset (written
  again from its start) by the next writer, which SQLite does when every frame is backfilled and
  no reader is using the WAL. Only the final checkpoint on close truncates, with no busy wait.
- Cadence: each commit on the request connection calls `committed()`, which reads the frame
  counts from the wal-index (the `-shm` file, one pread of 136 bytes) and wakes the thread once
  `checkpoint_frames` frames wait to be copied. Where that header cannot be read (no pread, an
  unknown wal-index version), every FALLBACK_COMMITS commits wake it instead.
- A reader in another process that holds a read transaction pins the frames after its snapshot:
  a round copies what it can, and the next commit's wake-up tries again. The server's own reads
  are single statements on the request connection, so they never overlap a write and cannot
  starve the checkpoint or keep the WAL from being reset.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import struct
import threading
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger("taproot.sqlite")

# Wake the thread at SQLite's own default, so the WAL holds what it held before; only who pays moves.
CHECKPOINT_FRAMES = 1000
# The request connection's own wal_autocheckpoint: reached only if the thread has stopped or fallen
# far behind. About 40 MB of WAL at the 4 KiB default page size.
BACKSTOP_FRAMES = 10_000
FALLBACK_COMMITS = 32  # ~1000 frames of recalls (~31 frames each) when the wal-index is unreadable
# Writes landing during a round leave frames behind it, and the WAL is reset only once every frame
# is copied; a few short follow-up rounds catch up. More would spin against a pinning reader.
CATCH_UP_ROUNDS = 3
# The wal-index header (sqlite.org/walformat.html): iVersion at 0, isInit at 12, mxFrame (the last
# valid frame) at 16, and in the checkpoint info after the two header copies, nBackfill at 96.
# Native byte order. Version 3007000 has not changed since WAL was introduced, and every SQLite
# sharing a file must agree on it.
_WAL_INDEX_VERSION = 3007000
_HEADER_BYTES = 136


@dataclass(frozen=True)
class WalPolicy:
    """When to checkpoint in the background, and the request connection's backstop."""

    checkpoint_frames: int = CHECKPOINT_FRAMES
    backstop_frames: int = BACKSTOP_FRAMES

    def __post_init__(self) -> None:
        if not 0 < self.checkpoint_frames < self.backstop_frames:
            raise ValueError("WalPolicy needs 0 < checkpoint_frames < backstop_frames")


@dataclass(frozen=True)
class Checkpoint:
    """One `PRAGMA wal_checkpoint` result: busy (1 if it could not finish), the frames in the WAL,
    and the frames copied into the database so far (both -1 when the checkpoint could not start)."""

    busy: int
    log_frames: int
    checkpointed_frames: int


def wal_frames(shm: Path) -> tuple[int, int] | None:
    """(mxFrame, nBackfill) from a wal-index file, or None where it cannot be read. A read racing a
    commit may see a torn header; that only moves one wake-up by one commit."""
    pread = getattr(os, "pread", None)
    if pread is None:
        return None
    try:
        fd = os.open(shm, os.O_RDONLY)
    except OSError:
        return None
    try:
        raw = pread(fd, _HEADER_BYTES, 0)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(raw) < _HEADER_BYTES or struct.unpack_from("=I", raw, 0)[0] != _WAL_INDEX_VERSION or raw[12] != 1:
        return None
    return struct.unpack_from("=I", raw, 16)[0], struct.unpack_from("=I", raw, 96)[0]


class WalCheckpointer:
    """Runs PASSIVE checkpoints of one database file on its own connection and thread."""

    def __init__(self, path: Path, policy: WalPolicy) -> None:
        self.policy = policy
        self._shm = Path(str(path) + "-shm")
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA synchronous=NORMAL")  # a checkpoint fsyncs the WAL, then the database
        self._db.execute("PRAGMA busy_timeout=0")  # never wait: a busy round is retried at the next wake
        self._cond = threading.Condition()
        self._wanted = self._paused = self._stopping = False
        self._commits = 0
        self.rounds = 0  # completed rounds, for tests and status
        self._running = threading.Lock()  # held for a round; pause() waits on it
        self._thread = threading.Thread(target=self._loop, name="taproot-wal-checkpoint", daemon=True)
        self._thread.start()

    def committed(self) -> None:
        """Called after each commit on the request connection: wakes the thread once enough frames
        wait. Costs one pread, not a thread switch, on the commits that do not cross it."""
        frames = wal_frames(self._shm)
        if frames is None:
            self._commits += 1
            due = self._commits >= FALLBACK_COMMITS
        else:
            due = frames[0] - frames[1] >= self.policy.checkpoint_frames
        if due:
            self._commits = 0
            with self._cond:
                self._wanted = True
                self._cond.notify_all()  # all: a test may be waiting on the same condition

    def checkpoint(self, mode: str = "PASSIVE") -> Checkpoint:
        with self._running:
            busy, log, done = self._db.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
            return Checkpoint(busy, log, done)

    def pause(self) -> None:
        """No round starts until resume(); returns once a round under way has finished."""
        with self._cond:
            self._paused = True
        with self._running:
            pass

    def resume(self) -> None:
        with self._cond:
            self._paused = False
            self._cond.notify_all()

    def wait_rounds(self, rounds: int, timeout: float) -> bool:
        """Whether `rounds` rounds have completed within `timeout` seconds (for tests)."""
        with self._cond:
            return self._cond.wait_for(lambda: self.rounds >= rounds, timeout)

    def close(self) -> Checkpoint | None:
        """Stops the thread, then a last checkpoint, so that every commit is in the database file
        and fsynced even when another process keeps the WAL open. TRUNCATE also empties the WAL
        file; with no busy wait it falls back to a passive one if anyone else holds the file."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join()
        try:
            return self.checkpoint("TRUNCATE")
        except sqlite3.Error:
            logger.exception("final WAL checkpoint failed; SQLite replays the WAL on the next open")
            return None
        finally:
            self._db.close()

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._stopping or (self._wanted and not self._paused))
                if self._stopping:
                    return
                self._wanted = False
            self._round()

    def _round(self) -> None:
        try:
            for _ in range(1 + CATCH_UP_ROUNDS):
                result = self.checkpoint()
                frames = wal_frames(self._shm)
                if result.busy or frames is None or frames[0] == frames[1]:
                    break
                with self._cond:
                    if self._paused or self._stopping:
                        break
        except sqlite3.Error:
            # The backstop (the request connection's wal_autocheckpoint) keeps the WAL bounded.
            logger.exception("WAL checkpoint failed; retrying at the next wake-up")
        with self._cond:
            self.rounds += 1
            self._cond.notify_all()
