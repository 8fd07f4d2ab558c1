# The fuzz targets, one per parser of outside input: the one list that the sanitizer tree
# builds (tests/fuzz/CMakeLists.txt) and the robustness tests run (tests/CMakeLists.txt).
set(MCUPROF_FUZZ_TARGETS dump truth recording rsp rsp_replies itm elf gmon calls tcl qmp)
