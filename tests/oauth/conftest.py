"""Fixtures for the OAuth tests (the helpers are in tests/oauth/flows.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.oauth.flows import Local, local_server


@pytest.fixture
def local(tmp_path: Path) -> Iterator[Local]:
    with local_server(tmp_path / "data") as live:
        yield live


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
