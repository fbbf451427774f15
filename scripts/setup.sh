#!/usr/bin/env bash
# Sets up a fresh machine: the system packages the tests and the example need (C compiler,
# libpng, the Arm, AArch64 and RISC-V cross compilers, QEMU for the emulated boards, CMake and
# make for the CMake examples) and a virtual environment (.venv) holding glowmlir with its pinned
# dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v cc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
[ -f /usr/include/png.h ] || missing+=(libpng-dev)
command -v python3 >/dev/null 2>&1 || missing+=(python3 python3-venv)
command -v arm-none-eabi-gcc >/dev/null 2>&1 || missing+=(gcc-arm-none-eabi)
[ -f /usr/lib/arm-none-eabi/newlib/librdimon.a ] || missing+=(libnewlib-arm-none-eabi)
command -v qemu-system-arm >/dev/null 2>&1 || missing+=(qemu-system-arm)
command -v qemu-aarch64 >/dev/null 2>&1 || missing+=(qemu-user)
command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || missing+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
# The i386 board links a static 32-bit program: probe exactly that (compiling alone passes
# without the 32-bit C library). Not gcc-multilib: Debian makes it conflict with (and apt
# would remove) the AArch64 cross compiler; its two parts that -m32 needs coexist with it.
probe=$(mktemp -d)
printf '#include <stdio.h>\nint main(void){puts("");return 0;}\n' > "$probe/m32.c"
gcc -m32 -static "$probe/m32.c" -o "$probe/m32" 2>/dev/null || missing+=("lib32gcc-$( (gcc -dumpversion 2>/dev/null || echo 12) | cut -d. -f1)-dev" libc6-dev-i386)
rm -rf "$probe"
command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)  # examples/cmake: glowmlir_add_bundle
command -v make >/dev/null 2>&1 || missing+=(make)
command -v dot >/dev/null 2>&1 || missing+=(graphviz)  # -dump-graph-DAG=FILE.svg|png
command -v gdb >/dev/null 2>&1 || missing+=(gdb)  # reads -g bundles in the tests
command -v riscv64-unknown-elf-gcc >/dev/null 2>&1 || missing+=(gcc-riscv64-unknown-elf)
[ -f /usr/lib/picolibc/riscv64-unknown-elf/picolibc.specs ] || missing+=(picolibc-riscv64-unknown-elf)
command -v qemu-system-riscv32 >/dev/null 2>&1 || missing+=(qemu-system-misc)
command -v llvm-mca-19 >/dev/null 2>&1 || missing+=(llvm-19)  # the Cortex-M7/M55 cycle estimate (llvm-mca)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
# ray: the optional extra whose path tests/unit/test_autotune.py runs on a local instance.
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test,ray]"
