# The vendor-shaped firmware (src/vendor, issue 41, docs/firmware-ref.md): an assembly start-up
# without call-frame information, code in RAM, assembly helpers, built by GCC and by clang-19,
# and stripped of its DWARF. Included by firmware-ref/CMakeLists.txt.
set(VENDOR_DIR ${CMAKE_CURRENT_LIST_DIR})
set(VENDOR_SOURCES ${VENDOR_DIR}/startup_vendor.s ${VENDOR_DIR}/helpers.s ${VENDOR_DIR}/main.c)

# vendor_ld(NAME CODE_ORIGIN CODE_LENGTH RAM_ORIGIN RAM_LENGTH): build/ld/NAME.ld
function(vendor_ld NAME CODE_ORIGIN CODE_LENGTH RAM_ORIGIN RAM_LENGTH)
  configure_file(${VENDOR_DIR}/vendor.ld.in ${CMAKE_BINARY_DIR}/ld/${NAME}.ld @ONLY)
endfunction()
vendor_ld(vendor_stm32 0x08000000 1024K 0x20000000 128K)
vendor_ld(vendor_microbit 0x00000000 256K 0x20000000 16K)
vendor_ld(vendor_an505 0x10000000 4M 0x38000000 2M)
# A bootloader and its application on one STM32F405: the bootloader in the first 16 KiB sector,
# the application linked after it (VTOR moved by the bootloader).
vendor_ld(vendor_boot 0x08000000 16K 0x20000000 128K)
vendor_ld(vendor_app 0x08004000 1008K 0x20000000 128K)

function(vendor_manifest NAME CPU MACHINE OPT LDSCRIPT DEFS ABOUT)
  set(defs_json "")
  foreach(d IN LISTS DEFS)
    list(APPEND defs_json "\"${d}\"")
  endforeach()
  list(JOIN defs_json ", " defs_json)
  set(manifest ${FW_MANIFEST})
  list(APPEND manifest "  {\"name\": \"${NAME}\", \"elf\": \"${NAME}.elf\", \"scenario\": \"vendor\", \"cpu\": \"${CPU}\", \"machine\": \"${MACHINE}\", \"opt\": \"${OPT}\", \"ldscript\": \"${LDSCRIPT}\", \"defs\": [${defs_json}], \"flags\": [], \"about\": \"${ABOUT}\"}")
  set(FW_MANIFEST ${manifest} PARENT_SCOPE)
endfunction()

# GCC: the project's own toolchain. Only main.c is C; the .s files are the vendor's as they are.
function(vendor_gcc_elf NAME)
  cmake_parse_arguments(V "" "CPU;MACHINE;LDSCRIPT;ABOUT" "DEFS;SOURCES" ${ARGN})
  if(NOT V_SOURCES)
    set(V_SOURCES ${VENDOR_SOURCES})
  endif()
  add_executable(${NAME} ${V_SOURCES})
  target_compile_definitions(${NAME} PRIVATE ${V_DEFS})
  target_compile_options(${NAME} PRIVATE -mcpu=${V_CPU} -mthumb $<$<COMPILE_LANGUAGE:C>:-g -std=c11 -Os -ffreestanding
    -ffunction-sections -fdata-sections -Wall -Wextra>)
  target_link_options(${NAME} PRIVATE -mcpu=${V_CPU} -mthumb -nostartfiles -nostdlib -T${CMAKE_BINARY_DIR}/ld/${V_LDSCRIPT}.ld
    ${FW_LOAD_FLAGS} -Wl,--gc-sections -Wl,-Map=${FIRMWARE_OUTPUT_DIR}/${NAME}.map)
  set_target_properties(${NAME} PROPERTIES SUFFIX ".elf" RUNTIME_OUTPUT_DIRECTORY "${FIRMWARE_OUTPUT_DIR}"
    LINK_DEPENDS "${CMAKE_BINARY_DIR}/ld/${V_LDSCRIPT}.ld")
  vendor_manifest(${NAME} ${V_CPU} "${V_MACHINE}" -Os ${V_LDSCRIPT} "${V_DEFS}" "${V_ABOUT}")
  set(FW_MANIFEST ${FW_MANIFEST} PARENT_SCOPE)
endfunction()

vendor_gcc_elf(vendor_m4 CPU cortex-m4 MACHINE netduinoplus2 LDSCRIPT vendor_stm32
  ABOUT "vendor-shaped image: assembly start-up without CFI, RAM code (.RamFunc in .data, .ramfunc of its own), assembly helpers; GCC -Os")
vendor_gcc_elf(vendor_forever_m4 CPU cortex-m4 MACHINE netduinoplus2 LDSCRIPT vendor_stm32 DEFS ROUNDS=0
  ABOUT "the vendor-shaped image without end")
# The pair: QEMU loads both (-kernel one, -device loader,file= the other); the bootloader's
# vector table at 0x08000000 (aliased at 0) is the one the core resets with.
vendor_gcc_elf(vendor_boot_m4 CPU cortex-m4 MACHINE netduinoplus2 LDSCRIPT vendor_boot
  SOURCES ${VENDOR_DIR}/startup_vendor.s ${VENDOR_DIR}/boot.c
  ABOUT "a bootloader at 0x08000000: CRCs the application PASSES times, moves VTOR to 0x08004000 and jumps to it")
vendor_gcc_elf(vendor_app_m4 CPU cortex-m4 MACHINE netduinoplus2 LDSCRIPT vendor_app
  ABOUT "the vendor-shaped image linked at 0x08004000, after vendor_boot_m4 (loaded with it)")
vendor_gcc_elf(vendor_app_forever_m4 CPU cortex-m4 MACHINE netduinoplus2 LDSCRIPT vendor_app DEFS ROUNDS=0
  ABOUT "vendor_app_m4 without end")

# The same image with its DWARF stripped (arm-none-eabi-objcopy --strip-debug): the symbol table
# only, the code byte for byte vendor_m4's.
find_program(FW_OBJCOPY arm-none-eabi-objcopy REQUIRED)
add_custom_command(OUTPUT ${FIRMWARE_OUTPUT_DIR}/vendor_nodebug_m4.elf
  COMMAND ${FW_OBJCOPY} --strip-debug $<TARGET_FILE:vendor_m4> ${FIRMWARE_OUTPUT_DIR}/vendor_nodebug_m4.elf
  DEPENDS vendor_m4 VERBATIM)
add_custom_target(vendor_nodebug_m4 ALL DEPENDS ${FIRMWARE_OUTPUT_DIR}/vendor_nodebug_m4.elf)
vendor_manifest(vendor_nodebug_m4 cortex-m4 netduinoplus2 -Os vendor_stm32 "" "vendor_m4 without its DWARF (objcopy --strip-debug): symbols only")
vendor_manifest(vendor_nodebug_forever_m4 cortex-m4 netduinoplus2 -Os vendor_stm32 "ROUNDS=0" "vendor_forever_m4 without its DWARF")
add_custom_command(OUTPUT ${FIRMWARE_OUTPUT_DIR}/vendor_nodebug_forever_m4.elf
  COMMAND ${FW_OBJCOPY} --strip-debug $<TARGET_FILE:vendor_forever_m4> ${FIRMWARE_OUTPUT_DIR}/vendor_nodebug_forever_m4.elf
  DEPENDS vendor_forever_m4 VERBATIM)
add_custom_target(vendor_nodebug_forever_m4 ALL DEPENDS ${FIRMWARE_OUTPUT_DIR}/vendor_nodebug_forever_m4.elf)

# clang-19: C compiled for the target triple, the assembly by clang's integrated assembler, the
# whole linked by arm-none-eabi-gcc against its libgcc (as a clang project on Cortex-M links:
# clang has no Cortex-M runtime of its own in Debian). CMake's one C compiler per project is
# arm-none-eabi-gcc, so these are custom commands.
find_program(FW_CLANG clang-19 REQUIRED)
function(vendor_clang_elf NAME)
  cmake_parse_arguments(V "" "TRIPLE;CPU;MACHINE;LDSCRIPT;ABOUT" "DEFS;FLAGS" ${ARGN})
  set(objects "")
  set(defs "")
  foreach(d IN LISTS V_DEFS)
    list(APPEND defs -D${d})
  endforeach()
  set(out ${FIRMWARE_OUTPUT_DIR}/${NAME}.elf)
  foreach(source IN LISTS VENDOR_SOURCES)
    get_filename_component(stem ${source} NAME_WE)
    get_filename_component(ext ${source} EXT)
    set(object ${CMAKE_BINARY_DIR}/clang/${NAME}/${stem}.o)
    set(c_flags -Wa,--noexecstack)   # GNU ld's executable-stack warning; nothing on a Cortex-M
    if(ext STREQUAL ".c")
      set(c_flags -g -Os -ffreestanding -ffunction-sections -fdata-sections -Wall -Wextra ${defs})
    endif()
    add_custom_command(OUTPUT ${object}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/clang/${NAME}
      COMMAND ${FW_CLANG} --target=${V_TRIPLE} -mcpu=${V_CPU} -mthumb ${V_FLAGS} ${c_flags} -c ${source} -o ${object}
      DEPENDS ${source} VERBATIM)
    list(APPEND objects ${object})
  endforeach()
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_C_COMPILER} -mcpu=${V_CPU} -mthumb ${V_FLAGS} -nostartfiles -nostdlib
            -T${CMAKE_BINARY_DIR}/ld/${V_LDSCRIPT}.ld ${FW_LOAD_FLAGS} -Wl,--gc-sections -Wl,-Map=${FIRMWARE_OUTPUT_DIR}/${NAME}.map
            ${objects} -lgcc -o ${out}
    DEPENDS ${objects} ${CMAKE_BINARY_DIR}/ld/${V_LDSCRIPT}.ld VERBATIM)
  add_custom_target(${NAME} ALL DEPENDS ${out})
  vendor_manifest(${NAME} ${V_CPU} "${V_MACHINE}" -Os ${V_LDSCRIPT} "${V_DEFS}" "${V_ABOUT}")
  set(FW_MANIFEST ${FW_MANIFEST} PARENT_SCOPE)
endfunction()

vendor_clang_elf(vendor_clang_m4 TRIPLE thumbv7em-none-eabi CPU cortex-m4 MACHINE netduinoplus2 LDSCRIPT vendor_stm32
  FLAGS -mfloat-abi=soft ABOUT "the vendor-shaped image built by clang-19 (thumbv7em), linked by arm-none-eabi-gcc")
vendor_clang_elf(vendor_clang_forever_m4 TRIPLE thumbv7em-none-eabi CPU cortex-m4 MACHINE netduinoplus2
  LDSCRIPT vendor_stm32 DEFS ROUNDS=0 FLAGS -mfloat-abi=soft ABOUT "vendor_clang_m4 without end")
vendor_clang_elf(vendor_clang_m0 TRIPLE thumbv6m-none-eabi CPU cortex-m0 MACHINE microbit LDSCRIPT vendor_microbit
  DEFS TICKS=317u FLAGS -mfloat-abi=soft ABOUT "the vendor-shaped image built by clang-19 for ARMv6-M (thumbv6m) on microbit")
vendor_clang_elf(vendor_clang_m33 TRIPLE thumbv8m.main-none-eabi CPU cortex-m33 MACHINE mps2-an505 LDSCRIPT vendor_an505
  DEFS TICKS=499u FLAGS -mfloat-abi=soft ABOUT "the vendor-shaped image built by clang-19 for ARMv8-M Mainline (thumbv8m.main) on mps2-an505")
