#include "call_trace_report.h"

#include <iostream>

#include <nlohmann/json.hpp>

#include "mcuprof/core/call_graph.h"
#include "mcuprof/core/source_locator.h"
#include "mcuprof/core/symbols.h"
#include "mcuprof/sources/call_trace.h"

namespace mcuprof::cli {

void report_call_trace(const ReportOptions& options, const sources::SwoOptions& swo, uint32_t channel)
{
    const std::string& format = options.format;
    if (format != "text" && format != "json" && format != "callgrind" && format != "dot")
        throw UsageError("with --calls, --format takes text, json, callgrind or dot, not '" + format + "'");
    if (options.elf.empty())
        throw UsageError("--elf FILE is required: the ELF of the firmware that wrote the records");
    if (channel > 255)
        throw UsageError("--channel takes a stimulus port, 0 to 255");

    const core::SymbolTable symbols = core::SymbolTable::load(options.elf);
    core::SourceLocator locator(options.elf);
    const auto source = sources::open_byte_source(options.input);
    sources::CallTrace trace = sources::read_call_trace(*source, swo, channel);
    sources::name_call_trace(trace, symbols, &locator);

    write_output(options.output, [&](std::ostream& out) {
        if (format == "json")
            out << core::call_graph_json(trace.graph, trace.notes).dump(2) << '\n';
        else if (format == "callgrind")
            core::write_callgrind(trace.graph, out);
        else if (format == "dot")
            core::write_dot(trace.graph, out);
        else
            core::write_call_graph_text(trace.graph, out, trace.notes);
    });
    // callgrind and dot have no place for warnings: they go to standard error.
    if (format == "callgrind" || format == "dot")
        for (const std::string& note : trace.notes)
            std::cerr << "mcuprof report: warning: " << note << '\n';
}

} // namespace mcuprof::cli
