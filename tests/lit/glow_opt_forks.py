"""glow-opt for the lit tests, forked from one process that imported it once.

A glow-opt process spends about a second importing xDSL, NumPy and the glow dialects and
passes before it reads its input, and the lit tests start about 190 of them. lit.cfg.py
starts `serve` once (it imports glow-opt's modules, then forks a child per invocation) and
puts the `glow-opt` of tests/lit/forked before tools/glow-opt on the tests' PATH: that one
runs `request`, which hands its standard streams, arguments, directory and environment to the
server and exits with the child's status. Each invocation still runs in a process of its
own, started from the same imported modules as a fresh `python -m glowmlir.cli.opt`, with
nothing of another invocation's state: only the imports are shared. Without a server (its
socket not named, or not answering), `request` runs tools/glow-opt as before.

The child handling a request forks again to run glow-opt, so that it can report the exit
status, a crash's signal included, the way the shell would see it.
"""

from __future__ import annotations

import json
import os
import socket
import sys

SOCKET = "GLOWMLIR_GLOW_OPT_FORKS"
"""The environment variable naming the server's socket (set by lit.cfg.py)."""
HEADER = 8
"""The request's length, as decimal digits, before its JSON."""


def request(arguments: list[str]) -> None:
    """Runs glow-opt `arguments` in a child of the server, on this process's standard streams;
    exits with its status. Runs tools/glow-opt instead when no server answers."""
    path = os.environ.get(SOCKET)
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        if not path:
            raise OSError("no server")
        connection.connect(path)
    except OSError:
        connection.close()
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        tool = os.path.join(root, "tools", "glow-opt")
        os.execv(tool, [tool, *arguments])
    body = json.dumps({"arguments": arguments, "directory": os.getcwd(), "environment": dict(os.environ)}).encode()
    message = b"%0*d" % (HEADER, len(body)) + body
    sent = socket.send_fds(connection, [message], [0, 1, 2])
    connection.sendall(message[sent:])
    reply = b""
    while chunk := connection.recv(64):
        reply += chunk
    status = int(reply) if reply else 1
    if status < 0:  # killed by a signal: die of it too
        os.kill(os.getpid(), -status)
    sys.exit(status)


def _receive(connection: socket.socket) -> tuple[dict, list[int]]:
    data, fds, _, _ = socket.recv_fds(connection, 1 << 16, 3)
    while len(data) < HEADER or len(data) < HEADER + int(data[:HEADER]):
        chunk = connection.recv(1 << 16)
        if not chunk:
            raise EOFError("request cut short")
        data += chunk
    return json.loads(data[HEADER:HEADER + int(data[:HEADER])]), fds


def _run_glow_opt(opt, request: dict, fds: list[int]) -> None:
    """In the forked child: glow-opt on the requester's streams, then exit with its status
    (as `python -m glowmlir.cli.opt` would)."""
    for stream, fd in enumerate(fds):
        os.dup2(fd, stream)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.chdir(request["directory"])
    os.environ.clear()
    os.environ.update(request["environment"])
    sys.argv = [opt.__file__, *request["arguments"]]
    status = 0
    try:
        opt.main()
    except SystemExit as exit_:
        if isinstance(exit_.code, int) or exit_.code is None:
            status = exit_.code or 0
        else:
            print(exit_.code, file=sys.stderr)
            status = 1
    except BaseException:  # noqa: BLE001 - an uncaught exception: its traceback and status 1, as Python's
        import traceback

        traceback.print_exc()
        status = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(status)


def _handle(opt, connection: socket.socket) -> None:
    """In the child of the server: runs the request in a child of its own and replies its status."""
    import signal

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    request_, fds = _receive(connection)
    pid = os.fork()
    if pid == 0:
        connection.close()
        _run_glow_opt(opt, request_, fds)
    for fd in fds:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    connection.sendall(str(os.waitstatus_to_exitcode(status)).encode())
    connection.close()
    os._exit(0)


def _import_glow_opt():
    """glow-opt's module, with the modules of every pass and dialect it may load imported."""
    import glowmlir.cli.opt as opt
    from glowmlir.transforms import all_passes

    for load in all_passes().values():
        load()
    for dialect in ("glow", "glowll", "quant", "llvm_casts", "weights"):
        __import__(f"glowmlir.dialects.{dialect}")
    from xdsl.dialects import get_all_dialects

    import glowmlir.importers  # noqa: F401 - the ONNX and TFLite front ends

    for load in get_all_dialects().values():
        load()
    return opt


def serve(listener_fd: int, parent: int) -> None:
    """Accepts requests on the listening socket `listener_fd` until process `parent` (lit) ends."""
    import select
    import signal

    listener = socket.socket(fileno=listener_fd)
    opt = _import_glow_opt()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the handlers' exit statuses are not wanted
    while os.getppid() == parent:
        if not select.select([listener], [], [], 1.0)[0]:
            continue
        connection, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            _handle(opt, connection)
        connection.close()


if __name__ == "__main__":
    if sys.argv[1] == "serve":  # serve LISTENER_FD PARENT_PID (lit.cfg.py)
        serve(int(sys.argv[2]), int(sys.argv[3]))
    else:  # request ARGUMENTS... (forked/glow-opt)
        request(sys.argv[2:])
