#include <iostream>

#include <boost/program_options.hpp>

#include "mcuprof/sources/call_trace.h"
#include "mcuprof/sources/input_kind.h"
#include "mcuprof/sources/swo_reader.h"
#include "call_trace_report.h"
#include "inputs.h"
#include "options.h"

namespace po = boost::program_options;

namespace mcuprof::cli {
int report_command(const Arguments& args)
{
    ReportOptions options;
    size_t chunk = 0;
    size_t first = 0;
    bool swo_sync = false;
    bool swo_packets = false;
    bool calls = false;
    uint32_t channel = sources::default_call_trace_channel;
    std::string swo_duration;
    po::options_description description("Options");
    add_report_options(description, options);
    description.add_options()
        ("chunk", po::value(&chunk)->value_name("K"), "on-chip dump: report the K-th dump of the file (from 1); "
                                                      "default: all dumps merged")
        ("first", po::value(&first)->value_name("N"), "keep the first N samples")
        ("sync", po::bool_switch(&swo_sync), "SWO: decode from the first synchronization packet on, and after a "
                                             "bad packet from the next one (a capture started mid-packet)")
        ("duration", po::value(&swo_duration)->value_name("TIME"), "SWO from standard input or TCP: stop reading "
                                                                   "after TIME (10s, 2min); default: until the "
                                                                   "stream ends or Ctrl-C")
        ("packets", po::bool_switch(&swo_packets), "SWO: list the decoded packets, one a line, instead of a "
                                                   "profile (needs no --elf)")
        ("calls", po::bool_switch(&calls), "SWO: the call graph of -finstrument-functions entry/exit records "
                                           "(firmware-ref's calltrace.c) instead of a profile; --format text, json, "
                                           "callgrind or dot")
        ("channel", po::value(&channel)->value_name("N"), "--calls: the ITM stimulus port the records are "
                                                          "written to (default 1)");
    const std::string usage =
        "usage: mcuprof report INPUT --elf ELF [options]\n\n"
        "Reports where the samples in INPUT fall in the firmware. INPUT is found from its content:\n"
        "a recording (mcuprof record), the on-chip sampler's dump (UART text), the truth\n"
        "plugin's instruction counts, an SWO capture (ITM/DWT packets with DWT PC samples) or a\n"
        "gmon.out (OpenOCD's profile command).\n"
        "INPUT \"-\" reads an SWO stream from standard input, tcp:HOST:PORT from a TCP port\n"
        "(OpenOCD's trace output).\n"
        "With --calls INPUT is an SWO stream (file, - or tcp:HOST:PORT) of instrumented call\n"
        "records, and the report is their call graph.";
    if (!parse_command(args, usage, description, options.input))
        return 0;
    if (options.input.empty())
        throw UsageError("report needs an INPUT file");

    InputSelection selection;
    if (chunk != 0)
        selection.chunk = chunk;
    if (first != 0)
        selection.first = first;
    selection.swo_sync = swo_sync;
    if (!swo_duration.empty())
        selection.swo_duration = parse_duration(swo_duration, "--duration");
    if (sources::is_stream_input(options.input)) {
        selection.stop = stop_on_interrupt();   // Ctrl-C ends a live SWO capture and reports what came
    }
    // --calls and --packets read the input as an SWO stream, whatever its content.
    sources::SwoOptions swo;
    swo.wait_for_sync = swo_sync;
    swo.max_samples = first;
    if (selection.swo_duration)
        swo.max_time = *selection.swo_duration;
    swo.stop = selection.stop;
    if (calls) {
        if (swo_packets)
            throw UsageError("--calls and --packets do not go together");
        report_call_trace(options, swo, channel);
        return 0;
    }
    if (swo_packets) {
        if (!sources::is_stream_input(options.input) &&
            sources::detect_input_file(options.input) != sources::InputKind::swo)
            throw UsageError("--packets applies to SWO captures");
        const auto source = sources::open_byte_source(options.input);
        sources::list_swo_packets(*source, swo, std::cout);
        return 0;
    }
    const core::SampleSet samples = load_samples(options.input, selection);
    write_profile(samples, options);
    return 0;
}

} // namespace mcuprof::cli
