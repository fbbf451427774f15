# lit configuration: FileCheck tests of glow-opt passes.
import os
import sys

import lit.formats

config.name = "glowmlir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".onnxtxt"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["lit.cfg.py", "Output", "inputs"]
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# glow-opt and filecheck from the interpreter running lit (the project's virtualenv).
config.environment["PATH"] = os.pathsep.join([os.path.join(root, "tools"), os.path.dirname(sys.executable),
                                              os.environ.get("PATH", "")])
config.environment["PYTHONPATH"] = root
config.substitutions.append(("%python", sys.executable))


def start_glow_opt_forks() -> None:
    """One process imports glow-opt and forks each of the tests' invocations
    (glow_opt_forks.py): about a second of imports saved per RUN line. Ends with lit.
    GLOWMLIR_LIT_FORKS=0 runs every glow-opt from scratch."""
    import atexit
    import shutil
    import socket
    import subprocess
    import tempfile

    if os.environ.get("GLOWMLIR_LIT_FORKS", "1") == "0":
        return
    here = os.path.dirname(os.path.abspath(__file__))
    directory = tempfile.mkdtemp(prefix="glow-opt-forks-")
    path = os.path.join(directory, "socket")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)  # requests wait here while the server imports
    server = subprocess.Popen([sys.executable, os.path.join(here, "glow_opt_forks.py"), "serve", str(listener.fileno()),
                               str(os.getpid())], pass_fds=[listener.fileno()], env=dict(config.environment),
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    listener.close()

    def stop() -> None:
        server.terminate()
        server.wait()
        shutil.rmtree(directory, ignore_errors=True)

    atexit.register(stop)
    config.environment["GLOWMLIR_GLOW_OPT_FORKS"] = path
    config.environment["PATH"] = os.pathsep.join([os.path.join(here, "forked"), config.environment["PATH"]])


start_glow_opt_forks()
