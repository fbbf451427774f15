"""The cycle estimate (glowmlir.runtime.cycles) on small bare-metal loops whose cycles per
iteration follow by hand from each core's timing table, run through QEMU and the block counter.

Each loop runs in a function of its own, built twice (100 and 200 iterations): the
difference is 100 iterations of the loop body plus its `subs`/`bne` overhead, the taken
branch included. By hand, from the Technical Reference Manuals at zero wait states:

Cortex-M4 (and the M33, priced by the M4's table) and M3: ALU, MUL, SMLAD, SXTB16 1; MLA 2
on the M3; LDR 2, a single load or store right after a single load whose result it does not
use as an address 1 (pipelined); STR with an immediate offset 1; LDRD 3; PUSH/POP of N
registers 1+N; VMLA 3; a taken branch 1+P with P=1. The loop overhead `subs` + taken `bne`
is 1 + 2 = 3.

Cortex-M0+: ALU and MULS (single-cycle multiplier) 1; every load and store 2, no pipelining;
PUSH/POP 1+N; a taken branch 2. The loop overhead is again 3.

Cortex-M7 and M55 have no public table: their figures are llvm-mca's models ("model
estimate"); the hand figures below are from the cores' published structure (see `MODEL`),
and the estimate must lie within `MODEL_BAND` of them.
"""

from __future__ import annotations

import shutil

import pytest

from glowmlir.errors import GlowError
from glowmlir.runtime.boards import program_cycles

needs_qemu = pytest.mark.skipif(shutil.which("qemu-system-arm") is None or shutil.which("arm-none-eabi-gcc") is None,
                                reason="qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh) are needed")
needs_mca = pytest.mark.skipif(shutil.which("llvm-mca-19") is None, reason="llvm-mca-19 (scripts/setup.sh) is needed")

LOOPS = {
    # name: (set-up before the loop, body)
    "smlad_independent": ("", ["smlad r4, r2, r3, r4", "smlad r5, r2, r3, r5", "smlad r6, r2, r3, r6",
                               "smlad r7, r2, r3, r7"]),
    "smlad_chained": ("", ["smlad r4, r2, r3, r4"] * 4),
    "mul": ("", ["mul r4, r2, r3", "mul r5, r2, r3", "mul r6, r2, r3", "mul r7, r2, r3"]),
    "muls": ("", ["muls r4, r2, r4", "muls r5, r2, r5", "muls r6, r2, r6", "muls r7, r2, r7"]),
    "mla": ("", ["mla r4, r2, r3, r4", "mla r5, r2, r3, r5", "mla r6, r2, r3, r6", "mla r7, r2, r3, r7"]),
    "ldr_pipelined": ("", ["ldr r2, [r1]", "ldr r3, [r1, #4]", "ldr r4, [r1, #8]", "ldr r5, [r1, #12]"]),
    "ldr_add": ("", ["ldr r2, [r1]", "adds r4, r4, #1", "ldr r3, [r1, #4]", "adds r5, r5, #1",
                     "ldr r2, [r1, #8]", "adds r6, r6, #1", "ldr r3, [r1, #12]", "adds r7, r7, #1"]),
    "ldr_dependent": ("str r1, [r1]", ["ldr r2, [r1]", "ldr r3, [r2, #4]"]),
    "ldrd": ("", ["ldrd r2, r3, [r1]", "ldrd r4, r5, [r1, #8]"]),
    "str": ("", ["str r3, [r1]", "str r3, [r1, #4]", "str r3, [r1, #8]", "str r3, [r1, #12]"]),
    "push_pop": ("", ["push {r4, r5, r6, r7}", "pop {r4, r5, r6, r7}"]),
    "ldr_flash": ("ldr r1, =table", ["ldr r2, [r1]", "ldr r3, [r1, #4]", "ldr r4, [r1, #8]", "ldr r5, [r1, #12]"]),
    "vmla": ("", ["vmla.f32 s0, s4, s5", "vmla.f32 s1, s4, s5", "vmla.f32 s2, s4, s5", "vmla.f32 s3, s4, s5"]),
    # CMSIS-NN's int8 inner product (arm_nn_mat_mult_kernel_s8_s16 / read_and_pad): 4 inputs
    # and 4 weights a word, sign-extended in pairs, two dual MACs.
    "cmsis_int8_mac": ("", ["ldr r4, [r1], #4", "ldr r5, [r2], #4", "sxtb16 r6, r4", "sxtb16 r4, r4, ror #8",
                            "sxtb16 r7, r5", "sxtb16 r5, r5, ror #8", "smlad r3, r6, r7, r3",
                            "smlad r3, r4, r5, r3"]),
    # The same on Armv6-M/Armv7-M without DSP: byte loads and a multiply-accumulate.
    "generic_int8_mac": ("", ["ldrsb r4, [r1, r6]", "ldrsb r5, [r2, r6]", "mla r3, r4, r5, r3"]),
    "armv6m_int8_mac": ("", ["ldrsb r4, [r1, r6]", "ldrsb r5, [r2, r6]", "muls r4, r5, r4", "adds r3, r3, r4",
                             "adds r6, r6, #1"]),
}

M4_TABLE = {"smlad_independent": 7, "smlad_chained": 7, "mul": 7, "ldr_pipelined": 8, "ldr_add": 15,
            "ldr_dependent": 7, "ldrd": 9, "str": 7, "push_pop": 13, "vmla": 15, "cmsis_int8_mac": 12}
"""By hand: 4x1+3; 4x1+3; 4x1+3; (2+1+1+1)+3; 4x(2+1)+3; (2+2)+3; 2x3+3; 4x1+3; (1+4)x2+3;
4x3+3; (2+1)+4x1+2x1+3."""
EXACT = {
    "mps2-an386": M4_TABLE,
    "mps2-an505": M4_TABLE,  # the M33, priced by the M4's table
    # M3: MLA 2; byte loads pipeline as words do; no DSP, no FPU (the soft-float board).
    "mps2-an385": {"mul": 7, "mla": 11, "ldr_pipelined": 8, "ldr_add": 15, "ldr_dependent": 7, "ldrd": 9, "str": 7,
                   "push_pop": 13, "generic_int8_mac": 8},  # ...; 4x2+3; ...; (2+1)+2+3
    # M0+: 4x1+3; 4x2+3; 4x(2+1)+3; (2+2)+3; 4x2+3; (1+4)x2+3; 2+2+1+1+1+3.
    "mps2-an385-m0plus": {"muls": 7, "ldr_pipelined": 11, "ldr_add": 15, "ldr_dependent": 7, "str": 11,
                          "push_pop": 13, "armv6m_int8_mac": 10},
}
MODEL_BAND = 0.6
"""How far (relative) an llvm-mca-based estimate may lie from the hand figure: these models are
coarse (on these loops llvm-mca's M7 model is up to 50% high on loads and MACs, its M55 model
57% low on PUSH/POP)."""
MODEL = {
    # M7: dual issue, the loop's subs paired and its predicted branch folded; one MAC pipe
    # (a SMLAD or MUL a cycle, the accumulator forwarded); two loads a cycle, one store, one
    # LDRD (64-bit bus), PUSH/POP two registers a cycle; non-fused VMLA two FPU issue cycles.
    "mps2-an500": {"smlad_independent": 4, "smlad_chained": 4, "mul": 4, "ldr_pipelined": 2, "ldr_add": 4,
                   "ldrd": 2, "str": 4, "push_pop": 4, "vmla": 8, "cmsis_int8_mac": 6},
    # M55 (scalar code): single issue, one instruction a cycle (LDRD and PUSH/POP two
    # registers a cycle, 64-bit bus), non-fused VMLA two cycles, a taken branch 2: body + 3.
    "mps3-an547": {"smlad_independent": 7, "smlad_chained": 7, "mul": 7, "ldr_pipelined": 7, "ldr_add": 11,
                   "ldrd": 5, "str": 7, "push_pop": 7, "vmla": 11, "cmsis_int8_mac": 11},
}


def assembly(names: list[str], thumb1: bool) -> str:
    """One function per loop: `name(iterations)`, with r1 and r2 pointing at a buffer."""
    lines = [".syntax unified", ".thumb", ".bss", ".balign 8", "buffer: .space 64", ".section .rodata", ".balign 8",
             "table: .word 1, 2, 3, 4", ".text"]
    for name in names:
        setup, body = LOOPS[name]
        lines += [f".section .text.{name},\"ax\",%progbits", f".global {name}", f".type {name}, %function",
                  ".p2align 2", f"{name}:", "push {r4, r5, r6, r7, lr}", "ldr r1, =buffer", "ldr r2, =buffer",
                  "movs r3, #0", "movs r6, #0", setup, ".p2align 2", "1:", *body,
                  "subs r0, r0, #1" if thumb1 else "subs r0, #1", "bne 1b", "pop {r4, r5, r6, r7, pc}", ".ltorg",
                  f".size {name}, . - {name}"]
    return "\n".join(lines) + "\n"


def loop_cycles(tmp_path, board: str, names: list[str], flash_wait_states: int = 0) -> dict[str, float]:
    """Estimated cycles per iteration of each loop on the board."""
    source = tmp_path / "loops.S"
    source.write_text(assembly(names, board == "mps2-an385-m0plus"))
    main = tmp_path / "main.c"
    main.write_text("".join(f"void {name}(unsigned);\n" for name in names) + "int main(void) {\n"
                    + "".join(f"    {name}(ITERATIONS);\n" for name in names) + "    return 0;\n}\n")
    once, twice = program_cycles(board, [str(main), str(source)], names, [["-DITERATIONS=100"], ["-DITERATIONS=200"]],
                                 flash_wait_states=flash_wait_states)
    return {name: (twice[name] - once[name]).estimate / 100 for name in names}


@needs_qemu
@pytest.mark.parametrize("board", list(EXACT))
def test_table_cores_price_every_loop_as_the_manual_does(tmp_path, board):
    expected = EXACT[board]
    assert loop_cycles(tmp_path, board, list(expected)) == pytest.approx(expected, abs=1e-9)


@needs_qemu
@needs_mca
@pytest.mark.parametrize("board", list(MODEL))
def test_model_cores_estimate_every_loop_within_the_band(tmp_path, board):
    expected = MODEL[board]
    estimated = loop_cycles(tmp_path, board, list(expected))
    far = {name: (estimated[name], cycles) for name, cycles in expected.items()
           if abs(estimated[name] - cycles) > MODEL_BAND * cycles}
    assert not far, f"estimate vs hand figure: {far}"


@needs_qemu
def test_the_range_takes_the_refill_from_1_to_3(tmp_path):
    """4 SMLAD + subs + bne on the M4: 7 cycles at P=1 (the estimate), 9 at P=3."""
    from glowmlir.runtime.cycles import CORTEX_M4

    source = tmp_path / "loops.S"
    source.write_text(assembly(["smlad_independent"], False))
    main = tmp_path / "main.c"
    main.write_text("void smlad_independent(unsigned);\nint main(void) { smlad_independent(ITERATIONS); return 0; }\n")
    once, twice = program_cycles("mps2-an386", [str(main), str(source)], ["smlad_independent"],
                                 [["-DITERATIONS=100"], ["-DITERATIONS=200"]])
    loop = (twice["smlad_independent"] - once["smlad_independent"]).scaled(1 / 100)
    assert (loop.estimate, loop.low, loop.high) == (7, 7, 9)
    assert "taken branch 1+P=1 (range 1-3)" in CORTEX_M4.describe()


@needs_qemu
def test_each_flash_access_adds_the_wait_states(tmp_path):
    """At 2 wait states on the M4: the loops' code is in flash, 3 words a run (4 16-bit LDRs
    and subs + bne, word-aligned), 2 cycles each; the loads from RAM add nothing, those
    from flash (.rodata) 2 each: 8 + 3x2 and 8 + 3x2 + 4x2."""
    assert loop_cycles(tmp_path, "mps2-an386", ["ldr_pipelined", "ldr_flash"], 2) == {"ldr_pipelined": 14,
                                                                                     "ldr_flash": 22}


def test_boards_without_a_timing_model_say_so():
    with pytest.raises(GlowError, match="virt-rv32imc: cycles are estimated on the Cortex-M boards only"):
        program_cycles("virt-rv32imc", [], [], [])


@needs_qemu
@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an505"])
def test_the_block_counter_counts_what_insncount_counts(board):
    """The instructions (and multiplies) of one inference from the block counter equal
    insncount.c's exactly; the estimate lies in its range and costs at least a cycle an
    instruction on these single-issue cores."""
    import glowmlir
    from glowmlir.runtime.boards import run_on_board, target_for
    from tests.support.models import LENET
    from tests.unit.test_layer_profile import lenet_inputs

    bundle = glowmlir.compile(LENET, target=target_for(board))
    counted = run_on_board(bundle, board, lenet_inputs(), count_instructions=True)
    estimated = run_on_board(bundle, board, lenet_inputs(), count_cycles=True)
    assert (estimated.instructions, estimated.multiplies) == (counted.instructions, counted.multiplies)
    cycles = estimated.cycles
    assert counted.instructions <= cycles.low <= cycles.estimate <= cycles.high
    for name, value in counted.outputs.items():
        assert estimated.outputs[name].tobytes() == value.tobytes()
