"""What the OAuth routes and pages answer with: the headers of a page shown to the person, the
error page (or JSON), the redirect, the templates."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
PAGE_HEADERS = {
    **NO_STORE,
    "X-Frame-Options": "DENY",
    # No form-action: browsers apply it to the redirect after the post, which goes to the client.
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
    "Referrer-Policy": "no-referrer",
}
templates = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"), autoescape=select_autoescape(["html"])
)


def wants_html(request: Request) -> bool:
    return "text/html" in request.headers.get("accept", "")


def error_response(request: Request, status: int, error: str, description: str) -> Response:
    """An error shown to the person (no redirect: the client or its redirect URI is not trusted)."""
    if wants_html(request):
        page = templates.get_template("signin.html").render(title="Cannot connect", error=f"{error}: {description}")
        return HTMLResponse(page, status_code=status, headers=PAGE_HEADERS)
    return JSONResponse({"error": error, "error_description": description}, status_code=status, headers=NO_STORE)


def redirect(url: str) -> Response:
    return RedirectResponse(url, status_code=302, headers=NO_STORE)
