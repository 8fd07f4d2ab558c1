// Fuzz target: the on-chip sampler's dump reader. Any input ends in samples or in a
// sources::Error; anything else (a crash, a hang, another exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "mcuprof/inputs/dump_reader.h"
#include "mcuprof/inputs/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    try {
        auto dump = mcuprof::sources::parse_dump(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
        mcuprof::sources::DumpSelection selection;
        if (size > 0 && data[0] % 3 == 1)
            selection.chunk = 1 + data[size - 1] % 4;
        if (size > 0 && data[0] % 5 == 2)
            selection.first = data[size / 2];
        (void)mcuprof::sources::to_samples(std::move(dump), selection);
    } catch (const mcuprof::sources::Error&) {
    }
    return 0;
}
