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
from io import StringIO
from typing import IO, NoReturn

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import ArgSpecParseError, ParseError, VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from glowmlir.bundle import StagedFiles
from glowmlir.cli.common import fail, one_line, warnings_as_lines
from glowmlir.errors import GlowError

PROGRAM = "glow-opt"


class _Buffer(StringIO):
    """xDSL closes the output stream it is given; the text must outlive that."""

    def close(self) -> None:
        pass


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

        def error(message: str) -> NoReturn:  # one line, not argparse's usage text
            raise GlowError(message)

        arg_parser.error = error
        arg_parser.add_argument("--weights-file", help="an .npz side file holding the elided weights")
        arg_parser.add_argument("--print-weights", action="store_true", help="print every weight in full")
        arg_parser.add_argument("--model-input", action="append", default=[], help="name,float,[dims] (ONNX input)")
        arg_parser.add_argument("--onnx-define-symbol", action="append", default=[], help="symbol,value (ONNX input)")

    def setup_pipeline(self) -> None:
        """An unknown pass or a bad pass argument is the user's error, not a traceback."""
        try:
            super().setup_pipeline()
        except ValueError as error:
            raise GlowError(f"-p \"{self.args.passes}\": {one_line(str(error))}") from None
        except ArgSpecParseError as error:  # "...specification:", "pass-pipeline:1:24", the text, "^", the message
            lines = [line.strip() for line in str(error).splitlines() if line.strip()]
            column = lines[1].rsplit(":", 1)[-1] if len(lines) > 1 else "?"
            raise GlowError(f"-p \"{self.args.passes}\": column {column}: {lines[-1]}") from None

    def prepare_input(self) -> tuple[list[tuple[IO[bytes], int]], str]:
        path = self.args.input_file
        if path is not None and not os.path.isfile(path):
            raise GlowError(f"input file \"{path}\" not found" if not os.path.exists(path)
                            else f"input \"{path}\" is not a file")
        try:
            return super().prepare_input()
        except OSError as error:
            raise GlowError(f"input file \"{path}\": cannot read it ({error.strerror or error})") from None
        except ValueError as error:  # an extension without a front end
            raise GlowError(f"input file \"{path}\": {error} (known: {', '.join(self.available_frontends)}; "
                            f"or give --frontend)") from None

    def prepare_output(self) -> IO[str]:
        """`-o`: a buffer; `run` writes the file only once everything succeeded."""
        if self.args.output_file is None:
            return sys.stdout
        StagedFiles.check(self.args.output_file, "-o")
        self.output_buffer = _Buffer()
        return self.output_buffer

    def run(self) -> None:
        self.output_buffer: _Buffer | None = None
        if self.args.weights_file:
            StagedFiles.check(self.args.weights_file, "--weights-file")
        super().run()
        if self.output_buffer is not None:
            outputs = StagedFiles()
            outputs.add(self.args.output_file, self.output_buffer.getvalue().encode(), "-o")
            outputs.commit()

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0) -> ModuleOp | None:
        try:
            module = super().parse_chunk(chunk, file_extension, start_offset)
        except VerifyException as error:  # an attribute of the wrong kind, refused while parsing
            if self.args.verify_diagnostics:
                raise
            raise GlowError(f"{self.get_input_name()}: invalid IR: {one_line(str(error))}") from None
        except UnicodeDecodeError as error:
            raise GlowError(f"{self.get_input_name()}: not UTF-8 text (byte {error.start + start_offset})") from None
        except RecursionError:  # the parser recurses once per nested region or attribute
            raise GlowError(f"{self.get_input_name()}: nested too deeply to parse") from None
        if module is None:
            return None
        try:  # the input's own errors; a verifier error after a pass is a bug and keeps its traceback
            module.verify()
        except VerifyException as error:
            if self.args.verify_diagnostics:  # xDSL prints it (lit tests check the text)
                raise
            raise GlowError(f"{self.get_input_name()}: invalid IR: {one_line(str(error))}") from None
        weights_file = self.args.weights_file
        if weights_file and file_extension == "mlir":
            from glowmlir.dialects.weights import load_weights

            elided = [op.properties["name"].data for op in module.walk()
                      if "name" in op.properties and "value" not in op.properties and hasattr(op, "value")]
            if os.path.exists(weights_file):
                load_weights(module, weights_file)
            elif elided:
                raise GlowError(f"--weights-file=\"{weights_file}\" not found, and weight \"{elided[0]}\" is elided")
        return module

    def output_resulting_program(self, prog: ModuleOp) -> str:
        from glowmlir.dialects.weights import printing_all_weights, save_weights

        if self.args.target == "llvm":
            stage = next((op.name for op in prog.walk() if op.dialect_name() not in ("builtin", "llvm")), None)
            if stage is not None:
                raise GlowError(f"-t llvm needs the llvm dialect, but the module holds {stage} (lower it first: "
                                f"-p lower-glow-to-glowll,glowll-allocate-memory,lower-glowll-to-llvm)")
        if self.args.weights_file:
            try:
                save_weights(prog, self.args.weights_file)
            except OSError as error:
                raise GlowError(f"--weights-file=\"{self.args.weights_file}\": cannot write it "
                                f"({error.strerror or error})") from None
        if self.args.print_weights:
            with printing_all_weights():
                return super().output_resulting_program(prog)
        return super().output_resulting_program(prog)


def parse_error_line(error: ParseError) -> str:
    """`file:line:col: message`, from the span xDSL's ParseError carries."""
    location = error.span.get_location()
    return f"{location}: {one_line(error.msg)}"


def main(argv: Sequence[str] | None = None) -> None:
    """Like glow-compile: a user error is one `glow-opt: error: ...` line and exit status 2."""
    try:
        with warnings_as_lines(PROGRAM):
            GlowOptMain(description="glowmlir pass driver", args=argv).run()
    except GlowError as error:
        fail(PROGRAM, str(error))
    except ParseError as error:
        fail(PROGRAM, parse_error_line(error))


if __name__ == "__main__":
    main()
