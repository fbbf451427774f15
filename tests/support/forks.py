"""The project's command-line programs run forked from one process that imported them once.

`python -m glowmlir.cli.compile` spends about a second importing xDSL, NumPy, llvmlite and
the compiler before it reads its arguments, and the tests start some 200 of them (glow-opt
in the lit tests, glow-compile and glow-profile in the unit tests). A server (`serve`)
imports the programs' modules once, then forks a child per request, which runs the program
as `python -m` would (`runpy`, as `__main__`, with the request's arguments, standard streams,
directory and environment) and exits with its status. Each run is still a process of its
own, started from the same imported modules as a fresh interpreter: only the imports are
shared, no run sees another's state. The server's child that takes a request forks once more
to run the program, so that it can report the status, a crash's signal included, the way
a shell would see it.

Two clients: `run_module` (the unit tests: a server per pytest worker, started on the first
call, outputs captured like `subprocess.run(..., capture_output=True, text=True)`), and
`python3 forks.py request MODULE ARGUMENTS...` (tests/lit/forked/glow-opt: lit.cfg.py starts
the server, or the program runs from scratch when there is none).
"""

from __future__ import annotations

import json
import os
import socket
import sys

SOCKET = "GLOWMLIR_FORKS_SOCKET"
"""The environment variable naming the server's socket, for `request` (set by lit.cfg.py)."""
HEADER = 8
"""The request's length, as decimal digits, before its JSON."""
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ----------------------------------------------------------------------------- the server


def serve(listener_fd: int, parent: int, modules: list[str]) -> None:
    """Imports `modules`, then takes requests on the listening socket `listener_fd` until
    process `parent` ends."""
    import select
    import shutil
    import signal

    listener = socket.socket(fileno=listener_fd)
    for module in modules:
        _import(module)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the request handlers' statuses are not wanted
    while os.getppid() == parent:
        if not select.select([listener], [], [], 1.0)[0]:
            continue
        connection, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            _handle(connection)
        connection.close()
    shutil.rmtree(os.path.dirname(listener.getsockname()), ignore_errors=True)


def _import(module: str) -> None:
    """`module`; for glow-opt also every pass and dialect it may load."""
    __import__(module)
    if module == "glowmlir.cli.opt":
        from xdsl.dialects import get_all_dialects

        import glowmlir.importers  # noqa: F401 - the ONNX and TFLite front ends
        from glowmlir.transforms import all_passes

        for load in all_passes().values():
            load()
        for dialect in ("glow", "glowll", "quant", "llvm_casts", "weights"):
            __import__(f"glowmlir.dialects.{dialect}")
        for load in get_all_dialects().values():
            load()


def _handle(connection: socket.socket) -> None:
    """In a child of the server: runs the request in a child of its own, replies its status."""
    import signal

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    data, fds, _, _ = socket.recv_fds(connection, 1 << 16, 3)
    while len(data) < HEADER or len(data) < HEADER + int(data[:HEADER]):
        chunk = connection.recv(1 << 16)
        if not chunk:
            os._exit(1)
        data += chunk
    request = json.loads(data[HEADER:HEADER + int(data[:HEADER])])
    pid = os.fork()
    if pid == 0:
        connection.close()
        _run(request, fds)
    for fd in fds:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    connection.sendall(str(os.waitstatus_to_exitcode(status)).encode())
    connection.close()
    os._exit(0)


def _run(request: dict, fds: list[int]) -> None:
    """In the forked child: `python -m MODULE ARGUMENTS` on the requester's streams, directory
    and environment; exits with its status."""
    import atexit
    import runpy

    for stream, fd in enumerate(fds):
        os.dup2(fd, stream)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.chdir(request["directory"])
    os.environ.clear()
    os.environ.update(request["environment"])
    sys.path.insert(0, os.getcwd())  # as -m has it
    sys.argv = ["-m", *request["arguments"]]  # runpy puts the module's path first, as -m does
    sys.modules.pop(request["module"], None)  # run afresh as __main__, as -m does; its imports stay
    status = 0
    try:
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
    except SystemExit as exit_:
        if isinstance(exit_.code, int) or exit_.code is None:
            status = exit_.code or 0
        else:
            print(exit_.code, file=sys.stderr)
            status = 1
    except BaseException:  # noqa: BLE001 - uncaught: the traceback and status 1, as the interpreter's
        sys.excepthook(*sys.exc_info())
        status = 1
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


# ----------------------------------------------------------------------------- the clients


def request(path: str, module: str, arguments: list[str], fds: tuple[int, int, int] = (0, 1, 2),
            environment: dict[str, str] | None = None, directory: str | None = None) -> int:
    """Runs `python -m module arguments` in a child of the server at `path`, on `fds` (standard
    input, output and error), in `directory` with `environment` (this process's if None); its
    exit status (minus the signal's number if one ended it). OSError if no server answers."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with connection:
        connection.connect(path)
        body = json.dumps({"module": module, "arguments": arguments, "directory": directory or os.getcwd(),
                           "environment": dict(os.environ if environment is None else environment)}).encode()
        message = b"%0*d" % (HEADER, len(body)) + body
        sent = socket.send_fds(connection, [message], list(fds))
        connection.sendall(message[sent:])
        reply = b""
        while chunk := connection.recv(64):
            reply += chunk
    if not reply:
        raise ChildProcessError(f"the server at {path} gave no status for {module}")
    return int(reply)


def start_server(modules: list[str], environment: dict[str, str] | None = None) -> str:
    """Starts a server of `modules` for this process (it ends with this process); its socket."""
    import atexit
    import shutil
    import subprocess
    import tempfile

    directory = tempfile.mkdtemp(prefix="glowmlir-forks-")
    path = os.path.join(directory, "socket")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)  # requests wait here while the server imports
    server = subprocess.Popen([sys.executable, os.path.abspath(__file__), "serve", str(listener.fileno()),
                               str(os.getpid()), *modules], pass_fds=[listener.fileno()], env=environment,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    listener.close()

    def stop() -> None:
        server.terminate()
        server.wait()
        shutil.rmtree(directory, ignore_errors=True)

    atexit.register(stop)
    return path


_SERVER: dict[str, str] = {}
"""The socket of this process's server for `run_module`, once started."""
PROGRAMS = ["glowmlir.cli.compile", "glowmlir.cli.profile", "glowmlir.cli.run"]
"""What `run_module`'s server imports: the programs the unit tests run most (glow-opt imports its passes
itself: in a fresh process only those it runs)."""


def run_module(module: str, *arguments: str, cwd: str | None = None, env: dict[str, str] | None = None):
    """`subprocess.run([sys.executable, "-m", module, *arguments], capture_output=True,
    text=True, cwd=cwd, env=env)`, forked from this process's server (started on the first
    call), with no standard input."""
    import subprocess
    import tempfile

    if "path" not in _SERVER:
        _SERVER["path"] = start_server(PROGRAMS)
    with open(os.devnull, "rb") as stdin, tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        try:
            status = request(_SERVER["path"], module, list(arguments),
                             (stdin.fileno(), stdout.fileno(), stderr.fileno()), env, cwd and os.fspath(cwd))
        except OSError:  # the server is gone: the program from scratch
            return subprocess.run([sys.executable, "-m", module, *arguments], capture_output=True, text=True,
                                  cwd=cwd, env=env, stdin=subprocess.DEVNULL)
        outputs = []
        for stream in (stdout, stderr):
            stream.seek(0)
            outputs.append(stream.read().decode().replace("\r\n", "\n").replace("\r", "\n"))  # text=True's
    return subprocess.CompletedProcess([sys.executable, "-m", module, *arguments], status, *outputs)


if __name__ == "__main__":
    if sys.argv[1] == "serve":  # serve LISTENER_FD PARENT_PID MODULE... (start_server)
        sys.path[0] = ROOT  # not this file's directory; each request's own (`_run`)
        serve(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])
    else:  # request MODULE ARGUMENTS... (tests/lit/forked): on this process's streams
        module, arguments = sys.argv[2], sys.argv[3:]
        try:
            status = request(os.environ[SOCKET], module, arguments)
        except (KeyError, OSError):  # no server: the program from scratch
            os.execv(sys.executable, [sys.executable, "-m", module, *arguments])
        if status < 0:  # ended by a signal: end by it too
            os.kill(os.getpid(), -status)
        sys.exit(status)
