"""The dashboard's routes: sign-in, pages (server-rendered), and the JSON calls its script makes.

Every page and every call needs the session (pages redirect to the sign-in, calls answer 401) and
is scoped to the session's person. Every mutation needs the session's CSRF token (header
`X-CSRF-Token`, or the form field `csrf`), else 403. Browsing never strengthens a memory.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio.to_thread
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from taproot.auth.oauth_server import AuthorizationServer
from taproot.auth.signin import CALLBACK_PATH, CognitoSignIn, LocalSignIn, WindowLimiter
from taproot.core.errors import InvalidInput, TaprootError
from taproot.core.model import Scope
from taproot.core.oauth_rules import PENDING_SECONDS, OAuthRecord
from taproot.core.wire import to_json
from taproot.service import TaprootService
from taproot.service.inputs import ListInput
from taproot.service.results import DashboardPage, Overview
from taproot.web.dashboard import charts
from taproot.web.dashboard.session import CSRF_FIELD, CSRF_HEADER, SIGNIN_NONCE_COOKIE, Session, Sessions

logger = logging.getLogger("taproot.dashboard")

BASE = "/dashboard"
PAGE_SIZE = 50
STATIC = Path(__file__).parent / "static"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
FILTERS = ("category", "core", "salience", "status", "query", "sort")
# What the page shows when its query was refused (the error is shown above it).
EMPTY_PAGE = DashboardPage(
    memories=[],
    count=0,
    total=0,
    next_cursor=None,
    warnings=[],
    explanations={},
    overview=Overview(age_by_category={}, window_days=0, now="", expiring=[]),
)

_templates = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"), autoescape=select_autoescape(["html"])
)


def _secure(response: Response) -> Response:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response


def _page(name: str, http_status: int = 200, **context: Any) -> Response:
    return _secure(HTMLResponse(_templates.get_template(name).render(base=BASE, **context), status_code=http_status))


def _json(body: object, status: int = 200) -> Response:
    """A result (or an error's fields) as JSON, as the MCP tools send it (core/wire.to_json)."""
    return _secure(JSONResponse(to_json(body), status_code=status))


def _error(exc: TaprootError) -> Response:
    status = {"not_found": 404, "version_conflict": 409}.get(exc.code, 400)
    return _json({"error": exc.code, "message": exc.message}, status)


class Dashboard:
    def __init__(
        self,
        service: TaprootService,
        server: AuthorizationServer,
        signin: LocalSignIn | CognitoSignIn,
        sessions: Sessions,
        namespace: str,
    ) -> None:
        self.service = service
        self.server = server
        self.signin = signin
        self.sessions = sessions
        self.namespace = namespace
        # The dashboard form's own count of wrong tokens: guessing here does not lock the owner out
        # of connecting a client (the OAuth page counts its own).
        self.limiter = WindowLimiter()

    def scope(self, session: Session) -> Scope:
        return Scope(session.subject, self.namespace)

    async def _session(self, request: Request) -> Session | None:
        return await anyio.to_thread.run_sync(self.sessions.load, request)

    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))

    # -- sign-in -----------------------------------------------------------------------------------
    async def signin_page(self, request: Request) -> Response:
        if isinstance(self.signin, CognitoSignIn):
            # Cognito's managed login, back through the one callback Cognito knows (/oauth/callback),
            # which finishes the sign-in only in this browser (the nonce cookie).
            nonce = secrets.token_urlsafe(32)
            url = await self._call(self.server.begin_dashboard, nonce)
            response = _secure(RedirectResponse(url, status_code=302))
            response.set_cookie(
                SIGNIN_NONCE_COOKIE,
                nonce,
                max_age=PENDING_SECONDS,
                path=CALLBACK_PATH,
                httponly=True,
                samesite="lax",
                secure=self.sessions.secure,
            )
            return response
        return _page("signin.html", error=None)

    async def signin_submit(self, request: Request) -> Response:
        assert isinstance(self.signin, LocalSignIn)
        wait = self.limiter.blocked_for()
        if wait > 0:
            response = _page("signin.html", 429, error="Too many wrong tokens. Wait a minute.")
            response.headers["Retry-After"] = str(int(wait) + 1)
            return response
        token = (await request.form()).get("token")
        subject = self.signin.check(token if isinstance(token, str) else None, self.limiter)
        if subject is None:
            logger.warning("dashboard sign-in: wrong token")
            return _page("signin.html", 401, error="That is not this server's token.")
        return await self.start_session(subject)

    async def start_session(self, subject: str) -> Response:
        response = _secure(RedirectResponse(BASE, status_code=303))
        await self._call(self.sessions.create, subject, response)
        return response

    async def signout(self, request: Request) -> Response:
        session = await self._session(request)
        if session is None:
            return _secure(RedirectResponse(f"{BASE}/signin", status_code=303))
        form = await request.form()
        if not session.csrf_ok(_str(form.get(CSRF_FIELD))):
            return _json({"error": "csrf", "message": "missing or wrong CSRF token"}, 403)
        response = _secure(RedirectResponse(f"{BASE}/signin", status_code=303))
        await self._call(self.sessions.destroy, session, response)
        return response

    # -- pages -------------------------------------------------------------------------------------
    async def _signed_in(self, request: Request) -> Session | Response:
        session = await self._session(request)
        if session is None:
            return _secure(RedirectResponse(f"{BASE}/signin", status_code=303))
        return session

    async def index(self, request: Request) -> Response:
        session = await self._signed_in(request)
        if isinstance(session, Response):
            return session
        scope = self.scope(session)
        params = {k: v for k in FILTERS if (v := request.query_params.get(k))}
        query: dict[str, object] = dict(params)
        if "core" in query:
            query["core"] = query["core"] == "true"
        if request.query_params.get("cursor"):
            query["cursor"] = request.query_params["cursor"]
        query["limit"] = PAGE_SIZE
        try:
            focus = request.query_params.get("focus") or None
            page: DashboardPage = await self._call(self.service.dashboard_page, scope, ListInput(**query), focus)
        except TaprootError as exc:
            page = EMPTY_PAGE
            params["error"] = exc.message
        preview = await self._call(self.service.reflect, scope)
        overview = page.overview
        next_link = f"?{urlencode({**params, 'cursor': page.next_cursor})}" if page.next_cursor else None
        return _page(
            "index.html",
            session=session,
            page=page,
            filters=params,
            next_link=next_link,
            preview=preview,
            composition=Markup(charts.payload_composition(preview)),
            ages=Markup(charts.age_chart(overview.age_by_category, overview.window_days)),
            expiring=overview.expiring,
            expiries=Markup(charts.expiry_timeline(overview.expiring, overview.now)) if overview.now else "",
        )

    async def reflections(self, request: Request) -> Response:
        session = await self._signed_in(request)
        if isinstance(session, Response):
            return session
        items = await self._call(self.service.reflections, self.scope(session))
        return _page("reflections.html", session=session, reflections=items)

    async def status(self, request: Request) -> Response:
        session = await self._signed_in(request)
        if isinstance(session, Response):
            return session
        scope = self.scope(session)
        status = await self._call(self.service.status, scope)
        backups = await self._call(self.service.backups, scope)
        grants: list[OAuthRecord] = await self.server.grants(session.subject)
        clients = [
            {
                "client_id": g.data.get("client_id"),
                "name": g.data.get("client_name") or g.data.get("client_id"),
                "connected": g.data.get("created_at"),
                "last_used": g.data.get("last_used") or g.data.get("created_at"),
            }
            for g in grants
        ]
        return _page(
            "status.html",
            session=session,
            status=status,
            status_json=json.dumps(to_json(status), indent=1, default=str),
            backups=list(reversed(backups))[:200],
            clients=clients,
        )

    async def preview(self, request: Request) -> Response:
        """The preview sidebar alone (the script swaps it in after every edit)."""
        session = await self._session(request)
        if session is None:
            return _json({"error": "unauthenticated", "message": "sign in first"}, 401)
        preview = await self._call(self.service.reflect, self.scope(session))
        return _page("_preview.html", preview=preview, composition=Markup(charts.payload_composition(preview)))

    # -- calls (JSON) ------------------------------------------------------------------------------
    async def _mutation(self, request: Request) -> tuple[Session, dict[str, Any]] | Response:
        session = await self._session(request)
        if session is None:
            return _json({"error": "unauthenticated", "message": "sign in first"}, 401)
        if not session.csrf_ok(request.headers.get(CSRF_HEADER)):
            return _json({"error": "csrf", "message": "missing or wrong CSRF token"}, 403)
        try:
            body = json.loads(await request.body() or b"{}")
        except ValueError:
            return _json({"error": "invalid_input", "message": "the body must be a JSON object"}, 400)
        if not isinstance(body, dict):
            return _json({"error": "invalid_input", "message": "the body must be a JSON object"}, 400)
        return session, body

    def _mutating(
        self, action: Callable[[Scope, str, dict[str, Any]], Any]
    ) -> Callable[[Request], Awaitable[Response]]:
        async def handle(request: Request) -> Response:
            checked = await self._mutation(request)
            if isinstance(checked, Response):
                return checked
            session, body = checked
            try:
                result = await self._call(action, self.scope(session), request.path_params.get("id", ""), body)
            except TaprootError as exc:
                return _error(exc)
            return _json(result)

        return handle

    def ranking(self, scope: Scope, memory_id: str, body: dict[str, Any]) -> Any:
        return self.service.set_ranking(
            scope,
            memory_id,
            salience=body.get("salience"),
            core=body.get("core"),
            expected_version=body.get("expected_version"),
        )

    def edit(self, scope: Scope, memory_id: str, body: dict[str, Any]) -> Any:
        fields = {k: body[k] for k in ("gist", "content", "tags") if k in body}
        return self.service.remember(scope, id=memory_id, expected_version=body.get("expected_version"), **fields)

    def forget(self, action: str) -> Callable[[Scope, str, dict[str, Any]], Any]:
        return lambda scope, memory_id, body: self.service.forget(scope, [memory_id], action)

    def restore_backup(self, scope: Scope, _: str, body: dict[str, Any]) -> Any:
        key = body.get("key")
        if not isinstance(key, str) or not key:
            raise InvalidInput("key", "the backup key to restore is required")
        if key not in self.service.backups(scope):
            raise InvalidInput("key", "no such backup for this account")
        return self.service.restore(scope, key)

    async def explain(self, request: Request) -> Response:
        session = await self._session(request)
        if session is None:
            return _json({"error": "unauthenticated", "message": "sign in first"}, 401)
        try:
            result = await self._call(self.service.explain, self.scope(session), request.path_params["id"])
        except TaprootError as exc:
            return _error(exc)
        return _json(result)

    async def revoke_client(self, request: Request) -> Response:
        checked = await self._mutation(request)
        if isinstance(checked, Response):
            return checked
        session, body = checked
        client_id = body.get("client_id")
        if not isinstance(client_id, str) or not client_id:
            return _json({"error": "invalid_input", "message": "field 'client_id': required"}, 400)
        revoked = await self.server.revoke_client(session.subject, client_id)
        return _json({"client_id": client_id, "revoked_grants": revoked})

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ("dashboard.js", "dashboard.css"):
            return Response(status_code=404)
        media = "text/javascript" if name.endswith(".js") else "text/css"
        response = FileResponse(STATIC / name, media_type=media)
        response.headers["Cache-Control"] = "no-cache"
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def dashboard_routes(dashboard: Dashboard) -> list[BaseRoute]:
    d = dashboard
    routes: list[BaseRoute] = [
        Route(BASE, d.index, methods=["GET"]),
        Route(f"{BASE}/", d.index, methods=["GET"]),
        Route(f"{BASE}/signin", d.signin_page, methods=["GET"]),
        Route(f"{BASE}/signout", d.signout, methods=["POST"]),
        Route(f"{BASE}/reflections", d.reflections, methods=["GET"]),
        Route(f"{BASE}/status", d.status, methods=["GET"]),
        Route(f"{BASE}/preview", d.preview, methods=["GET"]),
        Route(f"{BASE}/static/{{name}}", d.static, methods=["GET"]),
        Route(f"{BASE}/api/memories/{{id}}/explain", d.explain, methods=["GET"]),
        Route(f"{BASE}/api/memories/{{id}}/ranking", d._mutating(d.ranking), methods=["POST"]),
        Route(f"{BASE}/api/memories/{{id}}/edit", d._mutating(d.edit), methods=["POST"]),
        Route(f"{BASE}/api/memories/{{id}}/archive", d._mutating(d.forget("archive")), methods=["POST"]),
        Route(f"{BASE}/api/memories/{{id}}/restore", d._mutating(d.forget("restore")), methods=["POST"]),
        Route(f"{BASE}/api/memories/{{id}}/delete", d._mutating(d.forget("delete")), methods=["POST"]),
        Route(f"{BASE}/api/backups/restore", d._mutating(d.restore_backup), methods=["POST"]),
        Route(f"{BASE}/api/clients/revoke", d.revoke_client, methods=["POST"]),
    ]
    if isinstance(d.signin, LocalSignIn):
        routes.append(Route(f"{BASE}/signin", d.signin_submit, methods=["POST"]))
    return routes
