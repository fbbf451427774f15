"""Just enough of ELF to measure a bundle object: section sizes, undefined symbols, and the
address ranges of a linked program's functions.

Works for the 32- and 64-bit little-endian objects of every target (x86, Arm, AArch64,
RISC-V), with no cross binutils needed.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

SHT_SYMTAB = 2
SHN_UNDEF = 0
STT_FUNC = 2
EM_ARM = 40


@dataclass(frozen=True)
class Section:
    name: str
    kind: int
    offset: int
    size: int
    link: int
    entry_size: int


def sections(data: bytes) -> list[Section]:
    if data[:4] != b"\x7fELF" or data[5] != 1:
        raise ValueError("not a little-endian ELF object")
    is64 = data[4] == 2
    if is64:
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        layout = "<IIQQQQIIQQ"
    else:
        shoff, = struct.unpack_from("<I", data, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x2E)
        layout = "<IIIIIIIIII"
    raw = [struct.unpack_from(layout, data, shoff + i * shentsize) for i in range(shnum)]
    # fields: name, type, flags, addr, offset, size, link, info, addralign, entsize
    names_offset = raw[shstrndx][4]

    def name_at(offset: int) -> str:
        end = data.index(b"\0", names_offset + offset)
        return data[names_offset + offset:end].decode()

    return [Section(name_at(r[0]), r[1], r[4], r[5], r[6], r[9]) for r in raw]


def code_size(data: bytes) -> int:
    """Bytes of code and read-only data (.text* and .rodata* sections)."""
    return sum(s.size for s in sections(data) if s.name.startswith((".text", ".rodata")))


@dataclass(frozen=True)
class Symbol:
    name: str
    value: int
    size: int
    kind: int  # STT_*
    section: int  # SHN_UNDEF if undefined


def symbols(data: bytes) -> list[Symbol]:
    """Every named entry of the symbol tables."""
    all_sections = sections(data)
    is64 = data[4] == 2
    found = []
    for table in (s for s in all_sections if s.kind == SHT_SYMTAB):
        strings = all_sections[table.link]
        for offset in range(table.offset, table.offset + table.size, table.entry_size):
            if is64:
                name, info, _, shndx, value, size = struct.unpack_from("<IBBHQQ", data, offset)
            else:
                name, value, size, info, _, shndx = struct.unpack_from("<IIIBBH", data, offset)
            if name:
                end = data.index(b"\0", strings.offset + name)
                found.append(Symbol(data[strings.offset + name:end].decode(), value, size, info & 0xF, shndx))
    return found


def undefined_symbols(data: bytes) -> set[str]:
    """Names the object needs from elsewhere."""
    return {symbol.name for symbol in symbols(data) if symbol.section == SHN_UNDEF}


def function_ranges(data: bytes) -> dict[str, tuple[int, int]]:
    """A linked program's defined functions: name → [start, end) addresses (Thumb's bit 0
    cleared on Arm)."""
    machine, = struct.unpack_from("<H", data, 0x12)
    mask = ~1 if machine == EM_ARM else ~0
    return {symbol.name: (symbol.value & mask, (symbol.value & mask) + symbol.size) for symbol in symbols(data)
            if symbol.kind == STT_FUNC and symbol.section != SHN_UNDEF}
