// Fuzz target: the samples file reader (header, records, CRCs, JSON inside).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "mcuprof/inputs/error.h"
#include "mcuprof/inputs/recording.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    try {
        const auto recording =
            mcuprof::sources::parse_recording(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
        (void)mcuprof::sources::to_samples(recording, std::nullopt);
    } catch (const mcuprof::sources::Error&) {
    }
    return 0;
}
