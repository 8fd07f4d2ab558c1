#include <atomic>
#include <csignal>
#include <iostream>

#include <boost/program_options.hpp>

#include "mcuprof/sources/dump_reader.h"
#include "mcuprof/sources/error.h"
#include "mcuprof/sources/input_kind.h"
#include "mcuprof/sources/recording.h"
#include "mcuprof/sources/swo_reader.h"
#include "mcuprof/sources/truth_reader.h"
#include "options.h"

namespace po = boost::program_options;

namespace mcuprof::cli {
namespace {

// Ctrl-C while a live SWO stream is read ends the capture and reports what came; a second
// Ctrl-C kills as usual (SA_RESETHAND). No SA_RESTART: a blocked poll() returns at once.
std::atomic<bool> interrupted{false};

extern "C" void on_interrupt(int)
{
    interrupted = true;
}

void stop_on_interrupt()
{
    struct sigaction action = {};
    action.sa_handler = on_interrupt;
    action.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &action, nullptr);
}

} // namespace

int report_command(const Arguments& args)
{
    ReportOptions options;
    size_t chunk = 0;
    size_t first = 0;
    bool swo_sync = false;
    bool swo_packets = false;
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
                                                   "profile (needs no --elf)");
    const std::string usage =
        "usage: mcuprof report INPUT --elf ELF [options]\n\n"
        "Reports where the samples in INPUT fall in the firmware. INPUT is found from its content:\n"
        "a recording (mcuprof record), the on-chip sampler's dump (UART text) or the truth\n"
        "plugin's instruction counts, or an SWO capture (ITM/DWT packets with DWT PC samples).\n"
        "INPUT \"-\" reads an SWO stream from standard input, tcp:HOST:PORT from a TCP port\n"
        "(OpenOCD's trace output).";
    if (!parse_command(args, usage, description, options.input))
        return 0;
    if (options.input.empty())
        throw UsageError("report needs an INPUT file");

    core::SampleSet samples;
    const sources::InputKind kind = sources::is_stream_input(options.input)
                                        ? sources::InputKind::swo
                                        : sources::detect_input_file(options.input);
    if (kind != sources::InputKind::swo && (swo_sync || swo_packets || !swo_duration.empty()))
        throw UsageError("--sync, --duration and --packets apply to SWO captures");
    switch (kind) {
    case sources::InputKind::dump: {
        sources::DumpSelection selection;
        if (chunk != 0)
            selection.chunk = chunk;
        if (first != 0)
            selection.first = first;
        samples = sources::to_samples(sources::read_dump(options.input), selection);
        break;
    }
    case sources::InputKind::recording:
        if (chunk != 0)
            throw UsageError("--chunk applies to on-chip dumps, not to recordings");
        samples = sources::to_samples(sources::read_recording(options.input),
                                      first != 0 ? std::optional<size_t>(first) : std::nullopt);
        break;
    case sources::InputKind::truth_counts:
        if (chunk != 0 || first != 0)
            throw UsageError("--chunk and --first apply to on-chip dumps, not to truth counts");
        samples = sources::read_truth(options.input);
        break;
    case sources::InputKind::swo: {
        if (chunk != 0)
            throw UsageError("--chunk applies to on-chip dumps, not to SWO captures");
        sources::SwoOptions swo;
        swo.wait_for_sync = swo_sync;
        swo.max_samples = first;
        if (!swo_duration.empty())
            swo.max_time = parse_duration(swo_duration, "--duration");
        if (sources::is_stream_input(options.input)) {
            stop_on_interrupt();
            swo.stop = &interrupted;
        }
        if (swo_packets) {
            const auto source = sources::open_byte_source(options.input);
            sources::list_swo_packets(*source, swo, std::cout);
            return 0;
        }
        samples = sources::read_swo(options.input, swo);
        break;
    }
    case sources::InputKind::unknown:
        throw sources::Error(options.input, "",
                             "not a recognised input: expected a recording (mcuprof record), an on-chip sampler dump "
                             "('prof raw n=' or 'prof hist base=' lines), truth counts ('0xADDRESS COUNT' lines) or an SWO "
                             "capture (ITM/DWT packets)");
    }
    write_profile(samples, options);
    return 0;
}

} // namespace mcuprof::cli
