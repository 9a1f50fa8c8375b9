"""``anonlab ui``: serve the app on one local address and print its URL with the token."""

from __future__ import annotations

import ipaddress
import socket
import webbrowser
from collections.abc import Callable

from anonlab.errors import AnonlabError

#: packages of the optional ``ui`` extra (import name, distribution name)
NEEDED = (
    ("starlette", "starlette"),
    ("uvicorn", "uvicorn"),
    ("multipart", "python-multipart"),
    ("tomli_w", "tomli-w"),
)


def check_extra() -> None:
    """An :class:`AnonlabError` naming the ``ui`` extra when one of its packages is missing."""
    import importlib.util

    missing = [dist for module, dist in NEEDED if importlib.util.find_spec(module) is None]
    if missing:
        raise AnonlabError(
            f"the web app needs the 'ui' extra ({', '.join(missing)} missing): "
            "pip install 'anonlab[ui]'"
        )


def check_host(host: str) -> None:
    """Refuse a wildcard address: the app listens on one address the user named."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if host != "localhost":
            raise AnonlabError(
                f"host '{host}' is not an IP address: give one, e.g. 127.0.0.1", parameter="host"
            ) from None
        return
    if address.is_unspecified:
        raise AnonlabError(
            f"host {host} would listen on every network interface: give one address "
            "(127.0.0.1 keeps the app on this machine)",
            parameter="host",
        )


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise AnonlabError(
            f"port {port}: cannot listen on {host}:{port} ({exc.strerror}): choose another",
            parameter="port",
        ) from None
    sock.listen(128)
    return sock


def serve(
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    open_browser: bool = False,
    announce: Callable[[str], None] = print,
) -> None:
    """Serve the app until interrupted; the private folder is removed at exit."""
    check_extra()
    check_host(host)
    import uvicorn

    from anonlab.ui.app import create_app
    from anonlab.ui.security import allowed_hosts, new_token
    from anonlab.ui.workspace import Workspace

    sock = bind(host, port)
    port = sock.getsockname()[1]
    token = new_token()
    workspace = Workspace()
    app = create_app(workspace, token=token, hosts=allowed_hosts(host, port))
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/?token={token}"
    # no access log: a request's path may carry a column or value the user typed
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    announce(f"anonlab web app: {url}")
    announce("Open it in a browser on this machine; stop with Ctrl+C.")
    if open_browser:
        webbrowser.open(url)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        # uvicorn stops cleanly on Ctrl+C or SIGTERM, then raises the signal again:
        # stopping the app is the normal end of a session, not an interrupted run
        pass
    finally:
        app.state.jobs.cancel_all()
        workspace.close()
        sock.close()
    announce("anonlab web app stopped; its private folder was removed.")
