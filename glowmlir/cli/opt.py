"""`glow-opt`: xDSL's opt driver with the glow dialects, passes and an ONNX front end.

    glow-opt model.onnx -p glow-fold-batchnorm,glow-fuse-activations
    glow-opt graph.mlir -p lower-glow-to-glowll,glowll-allocate-memory
    glow-opt graph.mlir -p lower-glow-to-glowll,glowll-allocate-memory,lower-glowll-to-llvm -t llvm

Large weights print as `elided`. `--weights-file=F.npz` writes them to F after the
passes, and fills elided weights from F when F exists before parsing, so the IR of any
stage can be printed, edited and re-parsed with its weights.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.xdsl_opt_main import xDSLOptMain

from glowmlir.errors import GlowError


class GlowOptMain(xDSLOptMain):
    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        from glowmlir.dialects.glow import Glow
        from glowmlir.dialects.glowll import GlowLL
        from glowmlir.dialects.quant import Quant

        self.ctx.register_dialect("glow", lambda: Glow)
        self.ctx.register_dialect("glowll", lambda: GlowLL)
        self.ctx.register_dialect("quant", lambda: Quant)
        from glowmlir.dialects.llvm_casts import LLVMWithCasts

        self.ctx._registered_dialects["llvm"] = lambda: LLVMWithCasts  # xDSL's llvm + fptosi, fptoui, uitofp

    def register_all_passes(self) -> None:
        super().register_all_passes()
        from glowmlir.transforms import all_passes

        for name, load in all_passes().items():
            self.available_passes[name] = load

    def register_all_frontends(self) -> None:
        super().register_all_frontends()

        def parse_model(_: IO[bytes]) -> ModuleOp:
            from glowmlir.importers import ImportOptions, import_model
            from glowmlir.importers.onnx import ModelInput, parse_define_symbol

            inputs = [ModelInput.parse(spec) for spec in self.args.model_input]
            symbols = dict(parse_define_symbol(spec) for spec in self.args.onnx_define_symbol)
            return import_model(self.args.input_file, ImportOptions(inputs, symbols))

        for extension in ("onnx", "onnxtxt", "tflite"):
            self.available_frontends[extension] = parse_model

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument("--weights-file", help="an .npz side file holding the elided weights")
        arg_parser.add_argument("--print-weights", action="store_true", help="print every weight in full")
        arg_parser.add_argument("--model-input", action="append", default=[], help="name,float,[dims] (ONNX input)")
        arg_parser.add_argument("--onnx-define-symbol", action="append", default=[], help="symbol,value (ONNX input)")

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0) -> ModuleOp | None:
        module = super().parse_chunk(chunk, file_extension, start_offset)
        weights_file = self.args.weights_file
        if module is not None and weights_file and os.path.exists(weights_file) and file_extension == "mlir":
            from glowmlir.dialects.weights import load_weights

            load_weights(module, weights_file)
        return module

    def output_resulting_program(self, prog: ModuleOp) -> str:
        from glowmlir.dialects.weights import printing_all_weights, save_weights

        if self.args.weights_file:
            save_weights(prog, self.args.weights_file)
        if self.args.print_weights:
            with printing_all_weights():
                return super().output_resulting_program(prog)
        return super().output_resulting_program(prog)


def main(argv: Sequence[str] | None = None) -> None:
    try:
        GlowOptMain(description="glowmlir pass driver", args=argv).run()
    except GlowError as error:
        print(f"glow-opt: error: {error}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
