// Fuzz target: ELF loading through the core, then attribution of a few samples with it (by
// function and by source line with inline chains, through LLVM's symbolizer), and the DWARF
// data layout of the same image (variables, types, members).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "mcuprof/image/data_layout.h"
#include "mcuprof/image/error.h"
#include "mcuprof/profile/profile.h"
#include "mcuprof/image/source_locator.h"
#include "mcuprof/image/symbols.h"

namespace {

// Every member, element and pointer target a few levels deep, as a reader of target memory
// would follow them.
size_t walk(const mcuprof::core::TypeLayout* type, int depth)
{
    if (type == nullptr || depth > 4)
        return 0;
    size_t seen = type->name.size() + type->size + type->count;
    for (const auto& m : type->members)
        seen += m.offset + walk(m.type.get(), depth + 1);
    return seen + walk(type->element.get(), depth + 1);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string_view image(reinterpret_cast<const char*>(data), size);
    try {
        const auto symbols = mcuprof::core::SymbolTable::parse(image, "fuzz");
        mcuprof::core::SampleSet samples;
        for (const auto& f : symbols.functions()) {
            samples.pcs.push_back(f.start);
            samples.pcs.push_back(f.start + f.size / 2);
        }
        samples.buckets.push_back({0x08000000, 64, 10});
        (void)mcuprof::core::attribute(samples, symbols, nullptr, {});
        const auto locator = mcuprof::core::SourceLocator::parse(image, "fuzz");
        mcuprof::core::AttributionOptions by_line;
        by_line.by = mcuprof::core::Grouping::line;
        by_line.inline_frames = true;
        (void)mcuprof::core::attribute(samples, symbols, locator.get(), by_line);
    } catch (const mcuprof::core::Error&) {
    }
    try {
        const auto layout = mcuprof::core::DataLayout::parse(image, "fuzz");
        for (const char* name : {"current_sensor", "sensors", "pxCurrentTCB", "prof_table"})
            if (auto variable = layout.variable(name))
                walk(variable->type.get(), 0);
        walk(layout.type("struct sensor").get(), 0);
        walk(layout.type("sensor_t").get(), 0);
    } catch (const mcuprof::core::Error&) {
    }
    return 0;
}
