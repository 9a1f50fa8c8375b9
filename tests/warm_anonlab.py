"""A warm ``anonlab`` for the documented lines: the command's own process, minus the imports.

Every ``anonlab`` line of the docs pays about 2-3 s of CPU to import pandas, SciPy,
matplotlib and Dask before it does its work of a few tenths of a second
(tests/test_docs_blocks.py runs about a hundred of them). This module is a fork
server: :func:`serve` imports the package and its libraries once, then forks one
process per request; :data:`CLIENT` is the ``anonlab`` put first on a block's PATH,
which hands the server its argument vector, working directory, environment and
its standard streams (the file descriptors themselves), waits, and exits with the
command's exit status.

The forked process runs ``anonlab.cli.app:main`` (the console script's entry point)
as a fresh interpreter would: streams rebuilt on the new descriptors (line
buffering for a terminal, as at start-up), ``sys.argv[0]`` the installed script,
NumPy's global generator re-seeded from the OS (:mod:`random` re-seeds itself
after a fork), an uncaught exception printed with exit status 1, non-daemon
threads joined and ``atexit`` handlers run before it exits. Two requests never
share a process, so a command cannot see what an earlier one changed. A signal
the client gets (INT, TERM, HUP) is passed on to the command's process.

What a fork server cannot give: a hash seed of its own per command, and
environment variables that a library reads only when it is imported are those of
the server (the blocks' environment, :func:`test_docs_blocks.block_environment`).
The same server runs ``warm-python ARGS`` as ``python ARGS`` (the documents' Python
blocks, the benchmark scripts' ``--help``). Set ``ANONLAB_DOCS_FRESH=1`` to run the
blocks with the real installed ``anonlab`` and fresh interpreters.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import io
import json
import os
import pkgutil
import select
import socket
import struct
import sys
import threading
import traceback
import types
from pathlib import Path
from typing import Any

# libraries the commands import lazily; importing them here is the whole point
LIBRARIES = (
    "pandas",
    "numpy",
    "scipy.stats",
    "scipy.special",
    "scipy.optimize",
    "matplotlib.pyplot",
    "jinja2",
    "pyarrow.parquet",
    "openpyxl",
    "sqlalchemy",
    "dask.dataframe",
    "distributed",
    "sklearn.cluster",
)

# the client: the standard library only, no site (starts in ~15 ms)
CLIENT = r"""
import json, os, signal, socket, struct, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(os.environ["ANONLAB_WARM_SOCKET"])
request = json.dumps({"mode": MODE, "argv": sys.argv[1:], "cwd": os.getcwd(),
                      "env": dict(os.environ)}).encode()
socket.send_fds(sock, [struct.pack("!Q", len(request)) + request], [0, 1, 2])
def whole(n):
    data = b""
    while len(data) < n:
        part = sock.recv(n - len(data))
        if not part:
            sys.exit(1)
        data += part
    return data
pid = struct.unpack("!q", whole(8))[0]
def forward(signum, frame):
    os.kill(pid, signum)
for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(signum, forward)
code = struct.unpack("!q", whole(8))[0]
sys.exit(code if code >= 0 else 128 - code)
"""


def write_clients(folder: Path, python: str, socket_path: Path) -> Path:
    """In ``folder``: ``anonlab``, which runs its command through the server, and
    ``warm-python``, which runs ``python ARGS`` (``-c CODE`` or a script) the same way."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, mode in (("anonlab", "anonlab"), ("warm-python", "python")):
        client = folder / name
        client.write_text(
            f"#!{python} -S\n"
            f"import os; os.environ.setdefault('ANONLAB_WARM_SOCKET', "
            f"{str(socket_path)!r})\nMODE = {mode!r}\n{CLIENT}",
            encoding="utf-8",
        )
        client.chmod(0o755)
    return folder


def warm_up() -> None:
    """Import the package (every module) and the libraries its commands use."""
    import anonlab
    import anonlab.cli.app

    for name in LIBRARIES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    for module in pkgutil.walk_packages(anonlab.__path__, "anonlab."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    if threading.active_count() != 1:  # forking with threads running is not safe
        raise RuntimeError(f"threads after warm-up: {threading.enumerate()}")


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """The request (JSON) and the three file descriptors sent with it."""
    header, fds, _, _ = socket.recv_fds(conn, 8 + 65536, 3)
    size = struct.unpack("!Q", header[:8])[0]
    body = header[8:]
    while len(body) < size:
        part = conn.recv(size - len(body))
        if not part:
            raise ConnectionError("the client left")
        body += part
    return json.loads(body), list(fds)


def _fresh_streams() -> None:
    """``sys.stdin/stdout/stderr`` on descriptors 0-2 as CPython builds them at start-up."""
    encoding = sys.stdout.encoding
    streams = {
        "stdin": io.TextIOWrapper(
            io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding=encoding, errors="strict"
        ),
        "stdout": io.TextIOWrapper(
            io.BufferedWriter(io.FileIO(1, "w", closefd=False)),
            encoding=encoding,
            errors="strict",
            line_buffering=os.isatty(1),
        ),
        "stderr": io.TextIOWrapper(
            io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
            encoding=encoding,
            errors="backslashreplace",
            line_buffering=True,
        ),
    }
    for name, stream in streams.items():
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _exit_code(stop: SystemExit) -> int:
    """The status a fresh interpreter exits with for ``SystemExit(stop.code)``."""
    if stop.code is None:
        return 0
    if isinstance(stop.code, int):
        return stop.code & 0xFF
    print(stop.code, file=sys.stderr)
    return 1


def _print_uncaught(error: BaseException) -> None:
    """The traceback an interpreter prints, without this server's frames."""
    frames = error.__traceback__
    while frames is not None and frames.tb_frame.f_code.co_filename == __file__:
        frames = frames.tb_next
    traceback.print_exception(type(error), error, frames)


def _main_module(path: str | None) -> dict[str, object]:
    """A fresh ``__main__`` module (with ``__file__`` for a script): its namespace."""
    module = types.ModuleType("__main__")
    if path is not None:
        module.__file__ = path
    sys.modules["__main__"] = module
    return module.__dict__


def _run_python(argv: list[str]) -> None:
    """``python -c CODE ARGS`` or ``python SCRIPT ARGS``, as the interpreter runs them."""
    if argv[0] == "-c":
        sys.argv = ["-c", *argv[2:]]
        sys.path[0] = ""
        exec(compile(argv[1], "<string>", "exec"), _main_module(None))
        return
    script = os.path.abspath(argv[0])
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(script)
    with open(script, encoding="utf-8") as source:
        exec(compile(source.read(), script, "exec"), _main_module(script))


def _run_anonlab(argv: list[str], script: str) -> None:
    """The console script: ``anonlab.cli.app:main`` with ``sys.argv[0]`` the script."""
    sys.argv = [script, *argv]
    sys.path[0] = os.path.dirname(script)
    _main_module(script)
    from anonlab.cli.app import main

    main()


def _command(request: dict[str, Any], fds: list[int], script: str) -> int:
    """Run one command in this (forked) process; its exit status."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(str(request["cwd"]))
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in request["env"].items()})
    _fresh_streams()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    argv = [str(a) for a in request["argv"]]
    try:
        if request["mode"] == "python":
            _run_python(argv)
        else:
            _run_anonlab(argv, script)
        code = 0
    except SystemExit as stop:
        code = _exit_code(stop)
    except BaseException as error:
        _print_uncaught(error)
        code = 1
    with contextlib.suppress(BaseException):
        threading._shutdown()  # type: ignore[attr-defined]  # join non-daemon threads
    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    return code


def _handle(conn: socket.socket, listener: socket.socket, script: str) -> None:
    """In the connection's process: fork the command, report its pid, then its status."""
    request, fds = _receive(conn)
    pid = os.fork()
    if pid == 0:
        conn.close()
        listener.close()
        os._exit(_command(request, fds, script))
    for fd in fds:
        os.close(fd)
    conn.sendall(struct.pack("!q", pid))
    _, status = os.waitpid(pid, 0)
    conn.sendall(struct.pack("!q", os.waitstatus_to_exitcode(status)))


def serve(socket_path: str, script: str) -> None:
    """Warm up, then serve requests until stdin closes (the test session ends)."""
    warm_up()
    gc.collect()
    gc.freeze()  # the forked processes do not touch (copy) the warm objects
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(64)
    print("ready", flush=True)
    while True:
        ready, _, _ = select.select([listener, sys.stdin], [], [], 1.0)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        if sys.stdin in ready and not sys.stdin.readline():
            break
        if listener in ready:
            conn, _ = listener.accept()
            if os.fork() == 0:
                code = 0
                try:
                    _handle(conn, listener, script)
                except BaseException:
                    traceback.print_exc()
                    code = 1
                os._exit(code)
            conn.close()
    listener.close()


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2])
