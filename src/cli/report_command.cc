#include <iostream>

#include <boost/program_options.hpp>

#include "mcuprof/inputs/call_trace.h"
#include "mcuprof/inputs/input_kind.h"
#include "mcuprof/inputs/swo_reader.h"
#include "call_trace_report.h"
#include "inputs.h"
#include "options.h"
#include "profile_output.h"

namespace po = boost::program_options;

namespace mcuprof::cli {
namespace {

struct ReportCommandOptions {
    ReportOptions report;
    size_t chunk = 0;
    size_t first = 0;
    bool swo_sync = false;
    bool swo_packets = false;
    bool calls = false;
    uint32_t channel = sources::default_call_trace_channel;
    std::string swo_duration;
};

const char* const report_usage =
    "usage: mcuprof report INPUT [--elf ELF] [options]\n\n"
    "Reports where the samples in INPUT fall in the firmware. INPUT is found from its\n"
    "content: a recording (mcuprof record), the on-chip sampler's dump (UART text),\n"
    "the truth plugin's instruction counts, an SWO capture (ITM/DWT packets with DWT\n"
    "PC samples) or a gmon.out (OpenOCD's profile command). INPUT \"-\" reads standard\n"
    "input (any of these; an SWO stream as it comes), tcp:HOST:PORT an SWO stream\n"
    "from a TCP port (OpenOCD's trace output).\n"
    "With --calls INPUT is an SWO stream (file, - or tcp:HOST:PORT) of instrumented\n"
    "call records, and the report is their call graph.\n"
    "A samples file names the ELF it was recorded from: without --elf that one is\n"
    "used; an --elf that is not the same firmware gives a warning (--strict: error).";

// Parses and checks every option before the input is read. False when --help was shown.
bool parse_report_options(const Arguments& args, ReportCommandOptions& o)
{
    CommandLine line("report", report_usage);
    std::vector<std::string> inputs;
    line.positionals(inputs, 1, 1, "one INPUT file");
    ReportChoices choices;
    choices.elf_help = "firmware ELF that produced the samples (a samples file names its own: see above)";
    add_report_options(line, o.report, choices);
    line.options()
        ("chunk", whole_number(o.chunk, "chunk")->value_name("K"),
         "on-chip dump: report the K-th dump of the file (from 1); default: all dumps merged")
        ("first", whole_number(o.first, "first")->value_name("N"), "keep the first N samples")
        ("sync", po::bool_switch(&o.swo_sync), "SWO: decode from the first synchronization packet on, and after "
                                               "a bad packet from the next one (a capture started mid-packet)")
        ("duration", po::value(&o.swo_duration)->value_name("TIME"),
         "SWO from standard input or TCP: stop reading after TIME (10s, 2min); default: until the stream ends or "
         "Ctrl-C")
        ("packets", po::bool_switch(&o.swo_packets), "SWO: list the decoded packets, one a line, instead of a "
                                                     "profile (needs no --elf)")
        ("calls", po::bool_switch(&o.calls), ("SWO: the call graph of -finstrument-functions entry/exit records "
                                              "instead of a profile; --format " +
                                              core::format_help(core::call_graph_formats())).c_str())
        ("channel", whole_number(o.channel, "channel")->value_name("N"),
         "--calls: the ITM stimulus port the records are written to (default 1)")
        ("strict", po::bool_switch(&o.report.strict),
         "a samples file recorded from another ELF than --elf is an error (exit 2), not a warning");
    if (!line.parse(args))
        return false;
    o.report.input = inputs.front();
    line.exclusive({"calls", "packets"});
    line.only_with({"channel"}, o.calls, "--calls");
    line.not_with({"elf", "by", "format", "top", "inline", "chunk", "output"}, o.swo_packets,
                  "--packets (it lists packets on standard output, no profile)");
    line.not_with({"by", "top", "inline", "chunk"}, o.calls, "--calls (a call graph)");
    // A samples file names its ELF; every other input needs --elf.
    const std::string& input = o.report.input;
    if (!o.swo_packets && (o.calls || !names_its_elves(input)))
        line.require("elf", "the ELF of the firmware that was sampled");
    if (o.calls) {
        format_of(core::call_graph_formats(), o.report.format, "with --calls, ");
        if (o.channel > 255)
            throw UsageError("--channel takes a stimulus port, 0 to 255");
    } else if (!o.swo_packets) {
        check_report_options(line, o.report, choices, format_of(core::profile_formats(), o.report.format).binary);
    }
    return true;
}

} // namespace

int report_command(const Arguments& args)
{
    ReportCommandOptions o;
    if (!parse_report_options(args, o))
        return 0;
    const std::string& input = o.report.input;
    sources::InputSelection selection;
    if (o.chunk != 0)
        selection.chunk = o.chunk;
    if (o.first != 0)
        selection.first = o.first;
    selection.swo.wait_for_sync = o.swo_sync;
    if (!o.swo_duration.empty())
        selection.swo.max_time = parse_duration(o.swo_duration, "--duration");
    if (sources::is_stream_input(input))
        selection.swo.stop = stop_on_interrupt();   // Ctrl-C ends a live SWO capture and reports what came
    // --calls and --packets read the input as an SWO stream, whatever its content.
    const sources::SwoOptions swo = sources::swo_options(selection);
    if (o.calls) {
        report_call_trace(o.report, swo, o.channel);
        return 0;
    }
    if (o.swo_packets) {
        if (!sources::is_stream_input(input) && sources::detect_input_file(input) != sources::InputKind::swo)
            throw UsageError("--packets applies to SWO captures");
        const auto source = sources::open_byte_source(input);
        sources::list_swo_packets(*source, swo, std::cout);
        return 0;
    }
    sources::RecordedFirmware recorded;
    selection.firmware = &recorded;
    const core::SampleSet samples = load_samples(input, selection);
    const core::ImageSet images = check_recorded_images(o.report, recorded);
    write_profile(samples, o.report, images);
    return 0;
}

} // namespace mcuprof::cli
