"""Which instructions of an Arm M-profile program multiply: the addresses the instruction
counter (`embedded/insncount.c`, `multiplies=FILE`) counts apart.

The program's code is disassembled by the board's binutils (`arm-none-eabi-objdump`, with
`-m armv8.1-m.main` on the Cortex-M55 so that Helium instructions are decoded) and an
instruction is a multiply when its mnemonic, without its size/type suffix (`.w`, `.f32`,
`.s8`), its flag-setting `s`, its condition code (in an IT block) or its `t`/`e` (in an
MVE VPT block), is one of `MULTIPLY_MNEMONICS`. Divisions (`sdiv`, `udiv`, `vdiv`) are not
multiplies. A soft-float multiply (`__aeabi_fmul` on the M3) counts as the integer multiplies
the helper executes. Every executed instruction at a listed address counts once, however
many products it forms (an `SMLAD` forms two, a `VMLAVA.S8` sixteen).
"""

from __future__ import annotations

import re
import subprocess

INTEGER_MULTIPLIES = frozenset({
    "mul", "mla", "mls", "umull", "umlal", "umaal", "smull", "smlal",  # Armv7-M
    "smulbb", "smulbt", "smultb", "smultt", "smulwb", "smulwt",  # DSP extension: halfword products
    "smlabb", "smlabt", "smlatb", "smlatt", "smlawb", "smlawt", "smlalbb", "smlalbt", "smlaltb", "smlaltt",
    "smuad", "smuadx", "smusd", "smusdx", "smlad", "smladx", "smlsd", "smlsdx",  # dual 16-bit products
    "smlald", "smlaldx", "smlsld", "smlsldx",
    "smmul", "smmulr", "smmla", "smmlar", "smmls", "smmlsr",  # most significant word
})
FLOAT_MULTIPLIES = frozenset({
    # FPv4/FPv5; vmul, vmla (integer), vfma, vfms are Helium mnemonics too
    "vmul", "vnmul", "vmla", "vmls", "vnmla", "vnmls", "vfma", "vfms", "vfnma", "vfnms",
})
HELIUM_MULTIPLIES = frozenset({
    "vmulh", "vrmulh", "vmullb", "vmullt", "vqdmulh", "vqrdmulh", "vqdmullb", "vqdmullt",
    "vmlas", "vfmas", "vcmul", "vcmla",
    "vqdmlah", "vqrdmlah", "vqdmlash", "vqrdmlash",
    "vqdmladh", "vqdmladhx", "vqrdmladh", "vqrdmladhx", "vqdmlsdh", "vqdmlsdhx", "vqrdmlsdh", "vqrdmlsdhx",
    *(f"{base}{accumulate}{exchange}" for base in ("vmladav", "vmlsdav", "vmlaldav", "vmlsldav", "vrmlaldavh",
                                                   "vrmlsldavh")
      for accumulate in ("", "a") for exchange in ("", "x")),
    "vmlav", "vmlava", "vmlalv", "vmlalva", "vrmlalvh", "vrmlalvha",
})
MULTIPLY_MNEMONICS = INTEGER_MULTIPLIES | FLOAT_MULTIPLIES | HELIUM_MULTIPLIES
"""Every multiply instruction of Armv7-M, Armv7E-M (DSP), FPv4/FPv5 and Armv8.1-M MVE."""

CONDITIONS = frozenset({"eq", "ne", "cs", "hs", "cc", "lo", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt",
                        "le", "al"})


def is_multiply(mnemonic: str) -> bool:
    """Whether an objdump mnemonic (`smlad`, `mul.w`, `vfma.f32`, `mlaeq`, `vmlavat.s8`) multiplies."""
    base = mnemonic.lower().split(".")[0]
    stems = {base}
    if base[-2:] in CONDITIONS:  # in an IT block
        stems.add(base[:-2])
    if base[-1:] in ("t", "e"):  # in a VPT block
        stems.add(base[:-1])
    stems |= {stem[:-1] for stem in stems if stem.endswith("s")}  # sets the flags
    return not stems.isdisjoint(MULTIPLY_MNEMONICS)


_INSTRUCTION = re.compile(r"^\s*([0-9a-f]+):\t[0-9a-f ]+\t(\S+)", re.MULTILINE)


def multiply_addresses(disassembly: str) -> list[int]:
    """The addresses of the multiply instructions in `objdump -d` output."""
    return [int(address, 16) for address, mnemonic in _INSTRUCTION.findall(disassembly) if is_multiply(mnemonic)]


def disassemble(program: str, objdump: str, options: tuple[str, ...] = ()) -> str:
    return subprocess.run([objdump, "-d", *options, program], capture_output=True, text=True, check=True).stdout
