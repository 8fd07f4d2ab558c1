# Toolchain file for Debian's arm-none-eabi-gcc 12.2 (packages gcc-arm-none-eabi,
# libnewlib-arm-none-eabi, binutils-arm-none-eabi). CPU flags are set per firmware target in
# firmware-ref/CMakeLists.txt, since one build makes Cortex-M0, M3 and M4 images.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)

find_program(ARM_NONE_EABI_GCC arm-none-eabi-gcc REQUIRED)
set(CMAKE_C_COMPILER ${ARM_NONE_EABI_GCC})
set(CMAKE_ASM_COMPILER ${ARM_NONE_EABI_GCC})
find_program(ARM_NONE_EABI_GXX arm-none-eabi-g++ REQUIRED)   # the C++ scenario (src/cxx)
set(CMAKE_CXX_COMPILER ${ARM_NONE_EABI_GXX})
find_program(CMAKE_OBJCOPY arm-none-eabi-objcopy)
find_program(CMAKE_OBJDUMP arm-none-eabi-objdump)
find_program(CMAKE_SIZE arm-none-eabi-size)
find_program(CMAKE_NM arm-none-eabi-nm)

# No host-style test executable can run: let CMake's compiler check build a static library.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
