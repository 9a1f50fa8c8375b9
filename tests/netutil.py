"""Network helpers shared by the tests that start real party processes on loopback."""

from __future__ import annotations

import socket


def free_ports(count: int) -> list[int]:
    """Ports the kernel just handed out (closed again, so the parties can bind them)."""
    socks = [socket.socket() for _ in range(count)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()
