# ctest fixture: configure and build the reference firmware (firmware-ref/) into the build tree,
# as `make firmware` does. A no-op when it is already built.
#   cmake -DSOURCE_DIR=<repo> -DBINARY_DIR=<build> -P build_firmware.cmake
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/firmware-ref -B ${BINARY_DIR}/firmware-ref-build
          -DCMAKE_TOOLCHAIN_FILE=${SOURCE_DIR}/firmware-ref/cmake/arm-none-eabi.cmake
          -DFIRMWARE_OUTPUT_DIR=${BINARY_DIR}/firmware-ref
  RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring firmware-ref failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BINARY_DIR}/firmware-ref-build -j2 RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building firmware-ref failed (${rc})")
endif()
