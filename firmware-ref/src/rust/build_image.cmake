# One Rust reference image (run by rust.cmake as `cmake -P`), in two steps so that a change to
# fw.rs does not rebuild core (about 18 s of CPU each time):
#   STEP=core:  core from rust-src and the empty compiler_builtins (by RUSTC, with
#               RUSTC_BOOTSTRAP=1 since building core uses unstable features);
#   STEP=image: fw.rs as a staticlib, then the link by arm-none-eabi-gcc with the C start-up,
#               board code and runtime.c against libgcc.
# A rustc that cannot build it (another release's core may not build this way) is not a build
# failure: the image is left out and OUT/NAME.unbuilt says why, which `make build` prints
# (scripts/unbuilt.sh) and the tests that need the image fail with under ctest
# (live.rust_built). A failed link is a failure: that is this project's code.
#
# -D: STEP (core | image) RUSTC LIBRARY (rust-src's library/) SOURCE_DIR (firmware-ref/src) WORK
#     OUT NAME OPT (2 | s) MANGLING (legacy | v0) CC LDSCRIPT STAMP
foreach(var STEP RUSTC LIBRARY SOURCE_DIR WORK OUT NAME OPT MANGLING CC LDSCRIPT STAMP)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "build_image.cmake: -D${var}= missing")
  endif()
endforeach()

file(REMOVE ${OUT}/${NAME}.elf)
if(STEP STREQUAL "core")
  file(REMOVE ${OUT}/${NAME}.unbuilt ${WORK}/core.failed)
elseif(EXISTS ${WORK}/core.failed)
  # The core step failed and its NAME.unbuilt says why: nothing here can be built.
  file(TOUCH ${STAMP})
  return()
else()
  file(REMOVE ${OUT}/${NAME}.unbuilt)
endif()
file(MAKE_DIRECTORY ${WORK})
# The target and the flags every crate shares: Cortex-M4 without FPU registers in the ABI (the
# C code's soft-float ABI), abort on panic (no unwinding machinery), full debug info (lines,
# inline chains and call-frame information for the unwinder). -C symbol-mangling-version=v0 is a
# stable option (rustc 1.63 takes it without -Z unstable-options, which only =legacy needs).
set(rust_flags --edition 2021 --target thumbv7em-none-eabi -C target-cpu=cortex-m4 -C panic=abort
  -C debuginfo=2 -C opt-level=${OPT} -L ${WORK})
if(MANGLING STREQUAL "v0")
  list(APPEND rust_flags -C symbol-mangling-version=v0)
endif()

function(rustc_step what)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env RUSTC_BOOTSTRAP=1 ${RUSTC} ${rust_flags} ${ARGN}
    RESULT_VARIABLE status ERROR_VARIABLE errors OUTPUT_VARIABLE output)
  if(NOT status EQUAL 0)
    # The first error lines are the reason; the rest of a long log stays in WORK.
    file(WRITE ${WORK}/${what}.log "${errors}")
    string(REGEX MATCHALL "error[^\n]*" first "${errors}")
    list(SUBLIST first 0 3 first)
    list(JOIN first "; " first)
    execute_process(COMMAND ${RUSTC} --version OUTPUT_VARIABLE version OUTPUT_STRIP_TRAILING_WHITESPACE)
    file(WRITE ${OUT}/${NAME}.unbuilt "${version} could not build ${what} for ${NAME}: ${first} (log: ${WORK}/${what}.log)\n")
    file(TOUCH ${STAMP})
    if(STEP STREQUAL "core")
      file(TOUCH ${WORK}/core.failed)
    endif()
    message(WARNING "${NAME} not built: ${version} could not build ${what} (${WORK}/${what}.log)")
    # Nothing after a failed step can be built.
    set(failed TRUE PARENT_SCOPE)
  endif()
endfunction()

set(failed FALSE)
if(STEP STREQUAL "core")
  # -Z force-unstable-if-unmarked: core's items are unstable to the crates that use it unless
  # marked, as in rustc's own sysroot build.
  rustc_step(core --crate-name core --crate-type rlib -Z force-unstable-if-unmarked
    ${LIBRARY}/core/src/lib.rs -o ${WORK}/libcore.rlib)
  if(NOT failed)
    rustc_step(compiler_builtins --crate-name compiler_builtins --crate-type rlib
      ${SOURCE_DIR}/rust/compiler_builtins.rs -o ${WORK}/libcompiler_builtins.rlib)
  endif()
  file(TOUCH ${STAMP})
  return()
endif()
rustc_step(fw --crate-name fw --crate-type staticlib ${SOURCE_DIR}/rust/fw.rs -o ${WORK}/libfw.a)
if(failed)
  return()
endif()

set(c_opt -O2)
if(OPT STREQUAL "s")
  set(c_opt -Os)
endif()
# -fno-tree-loop-distribute-patterns: runtime.c's copy loops must stay loops, not calls to
# memcpy itself. libfw.a before -lgcc: core's 64-bit divisions are libgcc's __aeabi_uldivmod.
execute_process(COMMAND ${CC} -mcpu=cortex-m4 -mthumb -g ${c_opt} -std=c11 -ffreestanding -fno-common
    -ffunction-sections -fdata-sections -fno-tree-loop-distribute-patterns -Wall -Wextra
    -I${SOURCE_DIR} -nostartfiles -nostdlib -T${LDSCRIPT} ${LOAD_FLAGS} -Wl,--gc-sections -Wl,-Map=${OUT}/${NAME}.map
    -Wl,--no-warn-execstack
    ${SOURCE_DIR}/startup.c ${SOURCE_DIR}/board.c ${SOURCE_DIR}/rust/runtime.c ${WORK}/libfw.a -lgcc
    -o ${OUT}/${NAME}.elf
  RESULT_VARIABLE status ERROR_VARIABLE errors)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${NAME}: the link failed:\n${errors}")
endif()
file(TOUCH ${STAMP})
