# CMake toolchain file for bare-metal Arm Cortex-M with the Arm GNU toolchain (arm-none-eabi-gcc:
# Debian's gcc-arm-none-eabi + libnewlib-arm-none-eabi, or Arm's own download on the PATH).
#
#   cmake -S . -B build -DCMAKE_TOOLCHAIN_FILE=arm-none-eabi.cmake
#
# The CPU flags (-mcpu, -mfpu, -mfloat-abi) are the project's: they go with the board, and the
# bundle must be compiled for the same CPU (glowmlir_add_bundle's OPTIONS -mcpu=...).
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)

set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
# No program can be linked before the project gives its start-up code and linker script.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

# Programs (glow-compile among them) run on the build machine; libraries and headers come
# from the toolchain's sysroot.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
