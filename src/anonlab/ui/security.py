"""Every request needs the session's token and must be addressed to the app's own host.

The token reaches the browser once, in the URL the server prints
(``http://127.0.0.1:8765/?token=...``, as Jupyter does); the first request with
it sets an ``HttpOnly``, ``SameSite=Strict`` cookie, so later links need not
carry it. A request without the token (query, cookie or ``X-Anonlab-Token``
header) gets 403 and no data. A ``Host`` header other than the address the app
listens on is refused too, so a web page elsewhere cannot reach the app through
a DNS name that points to 127.0.0.1 (DNS rebinding).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from http.cookies import SimpleCookie
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE = "anonlab_token"
HEADER = b"x-anonlab-token"


def new_token() -> str:
    """A fresh random token (32 bytes, URL-safe)."""
    return secrets.token_urlsafe(32)


class TokenGuard:
    """ASGI middleware: 403 unless the request carries ``token`` and names an allowed host."""

    def __init__(self, app: ASGIApp, *, token: str, hosts: Iterable[str]) -> None:
        self.app = app
        self.token = token
        self.hosts = {h.lower() for h in hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if not self._host_allowed(scope) or not self._token_given(scope):
            await _forbidden(send)
            return
        if self._in_query(scope):
            await self.app(scope, receive, self._setting_cookie(send))
            return
        await self.app(scope, receive, send)

    def _host_allowed(self, scope: Scope) -> bool:
        host = _header(scope, b"host")
        return host is not None and host.lower() in self.hosts

    def _in_query(self, scope: Scope) -> bool:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        return any(secrets.compare_digest(t, self.token) for t in query.get("token", []))

    def _token_given(self, scope: Scope) -> bool:
        if self._in_query(scope):
            return True
        header = _header(scope, HEADER)
        if header is not None and secrets.compare_digest(header, self.token):
            return True
        cookie = _header(scope, b"cookie")
        if cookie is None:
            return False
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(cookie)
        except Exception:  # a malformed cookie header is no token
            return False
        morsel = jar.get(COOKIE)
        return morsel is not None and secrets.compare_digest(morsel.value, self.token)

    def _setting_cookie(self, send: Send) -> Send:
        cookie = f"{COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict".encode("latin-1")

        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"set-cookie", cookie)]
            await send(message)

        return wrapped


def allowed_hosts(host: str, port: int) -> list[str]:
    """The ``Host`` headers a browser sends to the app at ``host:port``."""
    names = {host}
    if host in ("127.0.0.1", "localhost", "::1"):
        names |= {"127.0.0.1", "localhost", "[::1]"}
    return [f"{name}:{port}" for name in sorted(names)]


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


async def _forbidden(send: Send) -> None:
    body = b"403 Forbidden: open the app with the URL (and token) that 'anonlab ui' printed\n"
    await send(
        {
            "type": "http.response.start",
            "status": 403,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
