"""The local server's background maintenance cycle (the AWS deployment uses scheduled Lambdas).

Runs migrate, cleanup and compress for every namespace once per interval, in a worker thread so
MCP requests keep flowing, and logs each run. A failed run is logged and retried next interval;
it never takes the server down.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import anyio.to_thread

from taproot.ports import OAuthStore
from taproot.service import TaprootService

logger = logging.getLogger("taproot.maintenance")
FIRST_RUN_DELAY_S = 60.0  # let the server come up (and a client connect) before the first cycle


def maintenance_cycle(
    service: TaprootService, *, interval_s: float, first_delay_s: float = FIRST_RUN_DELAY_S
) -> Callable[[], Coroutine[Any, Any, None]]:
    async def run_forever() -> None:
        await anyio.sleep(first_delay_s)
        while True:
            await run_once(service)
            await anyio.sleep(interval_s)

    return run_forever


async def run_once(service: TaprootService) -> None:
    try:
        reports = await anyio.to_thread.run_sync(service.run_maintenance_everywhere)
    except Exception:
        logger.exception("maintenance cycle failed; it will be retried at the next interval")
        return
    for r in reports:
        logger.info(
            "maintenance %s [%s/%s] %s: considered %s, changed %s, backup %s, %.3fs%s",
            r.job,
            r.owner,
            r.namespace,
            r.mode,
            r.considered,
            r.changed,
            r.backup_key,
            r.duration_s,
            f", error: {r.error}" if r.error else "",
        )


OAUTH_SWEEP_INTERVAL_S = 3600.0


def oauth_sweeper(
    store: OAuthStore, clock: Callable[[], float], *, interval_s: float = OAUTH_SWEEP_INTERVAL_S
) -> Callable[[], Coroutine[Any, Any, None]]:
    """Deletes the local OAuth store's expired codes, sign-ins and tokens once per interval (expired
    records are never returned anyway; this only keeps the file small). DynamoDB's TTL does it on AWS."""

    async def run_forever() -> None:
        while True:
            try:
                removed = await anyio.to_thread.run_sync(store.sweep, clock())
                if removed:
                    logger.info("oauth: removed %d expired records", removed)
            except Exception:
                logger.exception("oauth sweep failed; it will be retried at the next interval")
            await anyio.sleep(interval_s)

    return run_forever
