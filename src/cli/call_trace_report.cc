#include "call_trace_report.h"

#include <iostream>

#include "mcuprof/profile/call_graph.h"
#include "mcuprof/report/report.h"
#include "mcuprof/image/source_locator.h"
#include "mcuprof/image/symbols.h"
#include "mcuprof/inputs/call_trace.h"

namespace mcuprof::cli {

void report_call_trace(const ReportOptions& options, const sources::SwoOptions& swo, uint32_t channel)
{
    const core::CallGraphFormat& format = format_of(core::call_graph_formats(), options.format, "with --calls, ");

    const core::ImageSet images = core::ImageSet::open(options.elves);
    const core::SymbolTable& symbols = images.symbols();
    core::SourceLocator& locator = images.locator();
    const auto source = sources::open_byte_source(options.input);
    sources::CallTrace trace = sources::read_call_trace(*source, swo, channel);
    sources::name_call_trace(trace, symbols, &locator);
    trace.notes.insert(trace.notes.end(), images.notes().begin(), images.notes().end());

    write_output(options.output, [&](std::ostream& out) { format.write(trace.graph, trace.notes, out); });
    if (!format.has_warnings)
        for (const std::string& note : trace.notes)
            std::cerr << "mcuprof report: warning: " << note << '\n';
}

} // namespace mcuprof::cli
