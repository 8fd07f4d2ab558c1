# The C++ scenario (src/cxx, docs/firmware-ref.md): one source set, three builds. Included by
# firmware-ref/CMakeLists.txt; reference_elf() does the rest.
enable_language(CXX)
set(CXX_DIR ${CMAKE_CURRENT_LIST_DIR})
set(CXX_SOURCES ${CXX_DIR}/main.cpp ${CXX_DIR}/shapes.cpp ${CXX_DIR}/unit_a.cpp ${CXX_DIR}/unit_b.cpp
                ${CXX_DIR}/runtime.cpp)
# The copy loops of memcpy and friends must stay loops, not become calls to themselves.
set_source_files_properties(${CXX_DIR}/runtime.cpp PROPERTIES COMPILE_OPTIONS -fno-tree-loop-distribute-patterns)

function(cxx_elf NAME OPT)
  reference_elf(${NAME} SCENARIO cxx ${M4} OPT ${OPT} SOURCES ${CXX_SOURCES} ${ARGN})
  target_include_directories(${NAME} PRIVATE ${CXX_DIR})
  target_compile_options(${NAME} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-std=c++17 -fno-exceptions -fno-rtti -fno-threadsafe-statics>)
  set(FW_MANIFEST ${FW_MANIFEST} PARENT_SCOPE)
endfunction()

cxx_elf(cxx_o2_m4 -O2
  ABOUT "C++17: two instances of a template, virtual calls, lambdas for std::sort, same-named statics in two files, .constprop/.isra/.part clones; -O2, forever")
cxx_elf(cxx_os_m4 -Os
  ABOUT "the C++ scenario at -Os, forever")
cxx_elf(cxx_lto_m4 -O2 FLAGS -flto LINK -flto -O2
  ABOUT "the C++ scenario at -O2 -flto (statics renamed .lto_priv), forever")
