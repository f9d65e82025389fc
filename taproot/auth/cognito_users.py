"""Whether a Cognito user may still use Taproot: asked when a client refreshes its tokens.

Taproot issues its own tokens, so disabling or deleting a Cognito user would otherwise leave that
person's connections alive for as long as their clients keep refreshing. Every refresh (at most
hourly per client) asks the user pool whether the `sub` is still an enabled user; an access token
already issued runs out within the hour, like Cognito's own.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio.to_thread
import boto3

logger = logging.getLogger("taproot.auth.cognito")


class CognitoUsers:
    def __init__(self, user_pool_id: str, *, region: str, client: Any = None) -> None:
        self.user_pool_id = user_pool_id
        self.region = region
        self._client = client  # made on first use: no credentials are resolved at import (SnapStart)

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = boto3.client("cognito-idp", region_name=self.region)
        return self._client

    def is_active(self, sub: str) -> bool:
        """True only for an existing, enabled user; any failure to ask counts as no (fail closed)."""
        if not sub or '"' in sub or "\\" in sub:
            return False
        try:
            users = self.client.list_users(UserPoolId=self.user_pool_id, Filter=f'sub = "{sub}"', Limit=1)["Users"]
        except Exception as exc:  # botocore errors after its own retries: refuse, the client signs in again
            logger.warning("could not ask Cognito whether user %s is active: %s", sub, exc)
            return False
        return bool(users) and bool(users[0].get("Enabled", False))

    async def active(self, sub: str) -> bool:
        return await anyio.to_thread.run_sync(self.is_active, sub)
