# The Rust reference firmware (src/rust, docs/firmware-ref.md "Rust reference firmware"): fw.rs at
# two optimization levels and under both of rustc's manglings, built with Debian's packages only
# (rustc, rust-src) and linked by arm-none-eabi-gcc. Included by firmware-ref/CMakeLists.txt.
# Optional: without those packages (`make demo` does not install them) each image's NAME.unbuilt
# says so, `make build` prints it in one line, and under `make test` the tests that need the
# images fail with it.
#
# Debian's rustc by its path: a rustup toolchain earlier in PATH (~/.cargo/bin) is another
# compiler, with a core of its own, and not what setup.sh installs.
set(RUST_DIR ${CMAKE_CURRENT_LIST_DIR})
set(FW_RUSTC /usr/bin/rustc CACHE FILEPATH "Debian's rustc, which builds the Rust reference images")
set(FW_RUST_LIBRARY /usr/lib/rustlib/src/rust/library CACHE PATH "rust-src's library/ (Debian package rust-src)")

set(rust_missing "")
if(NOT EXISTS ${FW_RUSTC})
  set(rust_missing "${FW_RUSTC} is missing (Debian package rustc)")
elseif(NOT EXISTS ${FW_RUST_LIBRARY}/core/src/lib.rs)
  set(rust_missing "${FW_RUST_LIBRARY}/core is missing (Debian package rust-src)")
endif()

set(RUST_IMAGES rust_o2_m4 rust_os_m4 rust_v0_o2_m4 rust_v0_os_m4)
if(rust_missing)
  message(WARNING "The Rust reference images are not built: ${rust_missing}")
  foreach(name IN LISTS RUST_IMAGES)
    # An image of an earlier build is not this one's: the tests would read it as built. Its
    # stamps go with it, so that a build with rustc back makes it again.
    file(REMOVE ${FIRMWARE_OUTPUT_DIR}/${name}.elf ${FIRMWARE_OUTPUT_DIR}/${name}.map
                ${CMAKE_BINARY_DIR}/rust/${name}.stamp ${CMAKE_BINARY_DIR}/rust/${name}.core.stamp)
    file(WRITE ${FIRMWARE_OUTPUT_DIR}/${name}.unbuilt "${rust_missing}\n")
  endforeach()
  return()
endif()

# rust_elf(NAME OPT MANGLING ABOUT): OPT is rustc's opt-level (2 or s), MANGLING legacy or v0.
function(rust_elf NAME OPT MANGLING ABOUT)
  set(work ${CMAKE_BINARY_DIR}/rust/${NAME})
  set(stamp ${work}.stamp)
  set(ld ${CMAKE_BINARY_DIR}/ld/stm32.ld)
  set(args -DRUSTC=${FW_RUSTC} -DLIBRARY=${FW_RUST_LIBRARY} -DSOURCE_DIR=${FW_SRC} -DWORK=${work}
           -DOUT=${FIRMWARE_OUTPUT_DIR} -DNAME=${NAME} -DOPT=${OPT} -DMANGLING=${MANGLING}
           -DCC=${CMAKE_C_COMPILER} -DLDSCRIPT=${ld} -DLOAD_FLAGS=${FW_LOAD_FLAGS})
  add_custom_command(OUTPUT ${work}.core.stamp
    BYPRODUCTS ${work}/libcore.rlib ${work}/libcompiler_builtins.rlib
    COMMAND ${CMAKE_COMMAND} -DSTEP=core ${args} -DSTAMP=${work}.core.stamp -P ${RUST_DIR}/build_image.cmake
    DEPENDS ${FW_RUST_LIBRARY}/core/src/lib.rs ${RUST_DIR}/compiler_builtins.rs ${RUST_DIR}/build_image.cmake ${FW_RUSTC}
    COMMENT "core for ${NAME} from rust-src (opt-level ${OPT}, ${MANGLING} mangling)" VERBATIM)
  add_custom_command(OUTPUT ${stamp}
    BYPRODUCTS ${FIRMWARE_OUTPUT_DIR}/${NAME}.elf
    COMMAND ${CMAKE_COMMAND} -DSTEP=image ${args} -DSTAMP=${stamp} -P ${RUST_DIR}/build_image.cmake
    DEPENDS ${work}.core.stamp ${RUST_DIR}/fw.rs ${RUST_DIR}/runtime.c ${RUST_DIR}/build_image.cmake
            ${FW_SRC}/startup.c ${FW_SRC}/board.c ${FW_SRC}/board.h ${ld}
    COMMENT "Rust image ${NAME}" VERBATIM)
  add_custom_target(${NAME} ALL DEPENDS ${stamp})
  string(REPLACE "\"" "\\\"" about "${ABOUT}")
  set(manifest ${FW_MANIFEST})
  list(APPEND manifest "  {\"name\": \"${NAME}\", \"elf\": \"${NAME}.elf\", \"scenario\": \"rust\", \"cpu\": \"cortex-m4\", \"machine\": \"netduinoplus2\", \"opt\": \"opt-level=${OPT}\", \"ldscript\": \"stm32\", \"defs\": [], \"flags\": [\"mangling=${MANGLING}\"], \"about\": \"${about}\"}")
  set(FW_MANIFEST ${manifest} PARENT_SCOPE)
endfunction()

# No semicolon in an ABOUT: CMake would cut the manifest's entry into list elements there.
rust_elf(rust_o2_m4 2 legacy
  "Rust no_std: dyn Stage calls, const generic Fir<N> at two lengths, checksum<T> at u8 and u16, closures through iterator adaptors, left::mix and right::mix, a panic path, at opt-level 2 with legacy mangling")
rust_elf(rust_os_m4 s legacy "the Rust image at opt-level s, legacy mangling")
rust_elf(rust_v0_o2_m4 2 v0 "the Rust image at opt-level 2, v0 mangling")
rust_elf(rust_v0_os_m4 s v0 "the Rust image at opt-level s, v0 mangling")
