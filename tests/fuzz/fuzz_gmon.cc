// Fuzz target: the gmon.out reader (OpenOCD's profile output).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "mcuprof/inputs/error.h"
#include "mcuprof/inputs/gmon_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    try {
        (void)mcuprof::sources::parse_gmon(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    } catch (const mcuprof::sources::Error&) {
    }
    return 0;
}
