"""The HTTP listening socket, bound before anything else starts (its own module, so a taken
port is reported before the app, the store and the web server are even imported)."""

from __future__ import annotations

import errno
import socket

from digests.errors import ConfigError, PortInUse


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound here rather than by uvicorn: a taken port is then one
    line and exit code 2 (uvicorn logs a traceback and exits 3), raised before anything
    else has started."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP,
    # and uvicorn writes headers and body separately, so without it every response on a
    # kept-alive connection waits ~40 ms for a delayed ACK. Set on the listener too, which
    # Linux copies to each accepted socket.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # Lets a restart rebind while old connections sit in TIME_WAIT; a live listener
        # still refuses the bind.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        if err.errno == errno.EADDRINUSE:
            raise PortInUse(port) from None
        raise ConfigError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    return sock
