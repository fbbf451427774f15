#!/usr/bin/env bash
# Sets up a fresh machine: the system packages the tests and the example need (C compiler,
# libpng, the Arm, AArch64 and RISC-V cross compilers, QEMU for the emulated boards, CMake and
# make for the CMake examples) and a virtual environment (.venv) holding glowmlir with its pinned
# dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
# Each C tool chain is probed by linking what the tests link with it (compiling alone passes
# without a C library): `links COMPILER SOURCE FLAGS...`.
probe=$(mktemp -d)
printf '#include <stdio.h>\nint main(void){puts("");return 0;}\n' > "$probe/main.c"
printf '#include <math.h>\n#include <png.h>\nint main(void){return (int)png_access_version_number() + (int)sqrt(2.0);}\n' > "$probe/png.c"
links() { local compiler=$1 source=$2; shift 2; "$compiler" "$probe/$source" -o "$probe/out" "$@" >/dev/null 2>&1; }
# The host: bundles linked into shared libraries and programs, the example with libpng.
links cc png.c -O2 -lpng -lm || missing+=(gcc libc6-dev libpng-dev)
command -v python3 >/dev/null 2>&1 || missing+=(python3 python3-venv)
# The Cortex-M boards: newlib's semihosting (rdimon) C library.
links arm-none-eabi-gcc main.c -mcpu=cortex-m4 -mthumb --specs=rdimon.specs || missing+=(gcc-arm-none-eabi libnewlib-arm-none-eabi)
command -v qemu-system-arm >/dev/null 2>&1 || missing+=(qemu-system-arm)
command -v qemu-aarch64 >/dev/null 2>&1 || missing+=(qemu-user)  # and qemu-i386
# The AArch64 board links a static program.
links aarch64-linux-gnu-gcc main.c -O2 -static || missing+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
# The i386 board links a static 32-bit program. Not gcc-multilib: Debian makes it conflict
# with (and apt would remove) the AArch64 cross compiler; its two parts that -m32 needs
# coexist with it.
links gcc main.c -m32 -static || missing+=("lib32gcc-$( (gcc -dumpversion 2>/dev/null || echo 12) | cut -d. -f1)-dev" libc6-dev-i386)
command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)  # examples/cmake: glowmlir_add_bundle
command -v make >/dev/null 2>&1 || missing+=(make)
command -v dot >/dev/null 2>&1 || missing+=(graphviz)  # -dump-graph-DAG=FILE.svg|png
command -v gdb >/dev/null 2>&1 || missing+=(gdb)  # reads -g bundles in the tests
# The RISC-V boards: picolibc over semihosting.
links riscv64-unknown-elf-gcc main.c -march=rv32imac -mabi=ilp32 --specs=picolibc.specs --oslib=semihost \
  || missing+=(gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf)
rm -rf "$probe"
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
