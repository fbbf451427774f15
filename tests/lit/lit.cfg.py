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
    (tests/support/forks.py): about a second of imports saved per RUN line. Ends with lit.
    GLOWMLIR_LIT_FORKS=0 runs every glow-opt from scratch."""
    import importlib.util

    if os.environ.get("GLOWMLIR_LIT_FORKS", "1") == "0":
        return
    spec = importlib.util.spec_from_file_location("forks", os.path.join(root, "tests", "support", "forks.py"))
    forks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(forks)
    socket_path = forks.start_server(["glowmlir.cli.opt"], dict(config.environment))
    config.environment[forks.SOCKET] = socket_path
    config.environment["PATH"] = os.pathsep.join([os.path.join(config.test_source_root, "forked"),
                                                  config.environment["PATH"]])


start_glow_opt_forks()
