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
