// Fuzz target: ELF loading through the core, then attribution of a few samples with it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "mcuprof/core/error.h"
#include "mcuprof/core/profile.h"
#include "mcuprof/core/symbols.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    try {
        const auto symbols =
            mcuprof::core::SymbolTable::parse(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
        mcuprof::core::SampleSet samples;
        for (const auto& f : symbols.functions()) {
            samples.pcs.push_back(f.start);
            samples.pcs.push_back(f.start + f.size / 2);
        }
        samples.buckets.push_back({0x08000000, 64, 10});
        (void)mcuprof::core::attribute(samples, symbols, nullptr, {});
    } catch (const mcuprof::core::Error&) {
    }
    return 0;
}
