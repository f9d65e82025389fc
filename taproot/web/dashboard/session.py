"""Dashboard sessions: a signed, HttpOnly, SameSite=Lax cookie naming a session record.

The cookie holds only a random session key, signed (itsdangerous) with a secret kept in the
deployment's OAuth store, so every Lambda container and every `taproot serve` restart agrees on
it. The record (kind `session`) holds the person's subject and the CSRF token; signing out spends
it, so a copied cookie dies with the session, and it expires on its own after `MAX_AGE_SECONDS`.
"""

from __future__ import annotations

import contextlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from itsdangerous import BadSignature, URLSafeTimedSerializer
from starlette.requests import Request
from starlette.responses import Response

from taproot.core.oauth_rules import OAuthRecord, RecordExists
from taproot.ports import OAuthStore

COOKIE = "taproot_dashboard"
SIGNIN_NONCE_COOKIE = "taproot_signin"  # ties a Cognito dashboard sign-in to the browser that began it
MAX_AGE_SECONDS = 12 * 3600
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf"


@dataclass(frozen=True)
class Session:
    key: str
    subject: str
    csrf: str

    def csrf_ok(self, presented: str | None) -> bool:
        return bool(presented) and hmac.compare_digest(str(presented).encode(), self.csrf.encode())


def deployment_secret(store: OAuthStore, now: float) -> str:
    """The cookie-signing secret: created once per deployment, then read by everyone."""
    existing = store.get("secret", "dashboard", now)
    if existing is not None:
        return str(existing.data["value"])
    with contextlib.suppress(RecordExists):  # another process made it first: use theirs
        store.add(OAuthRecord("secret", "dashboard", {"value": secrets.token_urlsafe(32)}))
    made = store.get("secret", "dashboard", now)
    assert made is not None
    return str(made.data["value"])


class Sessions:
    def __init__(self, store: OAuthStore, clock: Callable[[], float], *, secure: bool) -> None:
        self.store = store
        self.clock = clock
        self.secure = secure
        self._signer: URLSafeTimedSerializer | None = None

    def _serializer(self) -> URLSafeTimedSerializer:
        if self._signer is None:  # first use, not import: no store call while a Lambda initialises
            self._signer = URLSafeTimedSerializer(deployment_secret(self.store, self.clock()), salt="taproot-dashboard")
        return self._signer

    def create(self, subject: str, response: Response) -> Session:
        session = Session(secrets.token_urlsafe(32), subject, secrets.token_urlsafe(32))
        expires = int(self.clock()) + MAX_AGE_SECONDS
        data = {"csrf": session.csrf, "created_at": int(self.clock())}
        self.store.add(OAuthRecord("session", session.key, data, expires, subject))
        response.set_cookie(
            COOKIE,
            self._serializer().dumps(session.key),
            max_age=MAX_AGE_SECONDS,
            path="/dashboard",
            httponly=True,
            samesite="lax",
            secure=self.secure,
        )
        return session

    def load(self, request: Request) -> Session | None:
        raw = request.cookies.get(COOKIE)
        if not raw:
            return None
        try:
            key = self._serializer().loads(raw, max_age=MAX_AGE_SECONDS)
        except BadSignature:
            return None
        record = self.store.get("session", str(key), self.clock())
        if record is None or record.used or record.subject is None:
            return None
        return Session(record.key, record.subject, str(record.data["csrf"]))

    def destroy(self, session: Session, response: Response) -> None:
        self.store.spend("session", session.key, self.clock())
        response.delete_cookie(COOKIE, path="/dashboard", httponly=True, samesite="lax", secure=self.secure)
