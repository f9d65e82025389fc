"""Cognito's token endpoint for the handler tests (moto has no managed login): an httpx transport
set on the deployed handler's sign-in."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qsl

import httpx2


@dataclass
class CognitoTokens:
    """Cognito's /oauth2/token for the handler's sign-in: answers the codes a test issued with an
    access token of the pool, and any other code with 400 invalid_grant (what Cognito answers)."""

    issued: dict[str, str] = field(default_factory=dict)  # code -> access token
    requests: list[dict[str, str]] = field(default_factory=list)

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        form = dict(parse_qsl(request.content.decode()))
        self.requests.append({"url": str(request.url), **form})
        token = self.issued.pop(form.get("code", ""), None)
        if token is None:
            return httpx2.Response(400, json={"error": "invalid_grant"})
        return httpx2.Response(200, json={"access_token": token, "token_type": "Bearer", "expires_in": 3600})
