// mcuprof swo: DWT PC sampling over SWO set up through OpenOCD's Tcl port, and the stream
// it serves profiled live (docs/swo.md, "Set-up over OpenOCD").
#include <chrono>
#include <cstdio>
#include <memory>
#include <iostream>

#include <boost/program_options.hpp>

#include "mcuprof/inputs/error.h"
#include "mcuprof/inputs/recording.h"
#include "mcuprof/inputs/swo_reader.h"
#include "mcuprof/printf_string.h"
#include "mcuprof/target/swo_setup.h"
#include "mcuprof/link/tcl_client.h"
#include "mcuprof/image/symbols.h"
#include "options.h"
#include "profile_output.h"

namespace po = boost::program_options;

namespace mcuprof::cli {

namespace {

const char* const swo_usage =
    "usage: mcuprof swo (--openocd HOST[:PORT] | --chip NAME --probe PROBE) --elf ELF\n"
    "                   --cpu-hz F [--swo-hz F] [--rate R] [-o FILE] [options]\n\n"
    "Turns on the DWT's periodic PC sampling over SWO with no firmware change: writes\n"
    "DEMCR.TRCENA, the ITM (unlocked, ITMENA, SYNCENA, DWTENA, TraceBusID 1) and\n"
    "DWT_CTRL (CYCTAP and POSTPRESET for the rate, CYCCNTENA, PCSAMPLENA) through\n"
    "OpenOCD's Tcl port, has OpenOCD capture SWO (tpiu: uart protocol, -traceclk,\n"
    "-pin-freq, -output), profiles the stream until --duration, --samples or Ctrl-C,\n"
    "then turns the sampling off and prints the profile on standard output. With -o,\n"
    "every sample is written to FILE as it comes, a recording that mcuprof report,\n"
    "diff and the editor read like any other. --chip and --probe start OpenOCD with its\n"
    "target/NAME.cfg and the probe's interface script, and stop it at the end\n"
    "(docs/boards.md).";

struct SwoCommandOptions {
    ReportOptions report;       // the profile printed at the end (to standard output)
    std::string recording;      // -o
    std::string openocd;
    std::string chip, probe;
    std::optional<sources::OpenocdLaunch> launch;   // --chip/--probe: the OpenOCD mcuprof starts
    sources::SwoSetupOptions setup;
    std::string rate_text;
    std::string duration;
    size_t samples = 0;
    bool sync = false;
    bool live = false;   // --trace-output :PORT: the stream is profiled here
};

// Parses and checks every option before OpenOCD is contacted. False when --help was shown.
bool parse_swo_options(const Arguments& args, SwoCommandOptions& o)
{
    CommandLine line("swo", swo_usage);
    std::string cpu_hz, swo_hz = "2M";
    o.setup.output = ":3443";
    line.options()
        ("openocd", po::value(&o.openocd)->value_name("HOST[:PORT]"), "OpenOCD's Tcl port (6666 by default)")
        ("chip", po::value(&o.chip)->value_name("NAME"), "instead: start OpenOCD with its target/NAME.cfg and --probe")
        ("probe", po::value(&o.probe)->value_name("PROBE"), "--chip: stlink, cmsis-dap, jlink or stlink-server[:PORT]")
        ("cpu-hz", po::value(&cpu_hz)->value_name("F"), "the core clock, TRACECLKIN (required): sets the "
                                                        "sampling period and the SWO baud divider (168M)")
        ("swo-hz", po::value(&swo_hz)->value_name("F")->default_value("2M"), "the SWO pin's bit rate")
        ("rate", po::value(&o.rate_text)->value_name("R"), "PC samples a second wanted; the fastest DWT setting "
                                                           "not above it is used (default: what the SWO line "
                                                           "carries, F/50)")
        ("trace-output", po::value(&o.setup.output)->value_name("WHERE")->default_value(":3443"),
         "where OpenOCD sends the stream: :PORT (a TCP server, profiled live here), a FILE or 'external' "
         "(set-up only)")
        ("duration", po::value(&o.duration)->value_name("TIME"), "stop after TIME (10s, 2min); default: Ctrl-C")
        ("samples", whole_number(o.samples, "samples")->value_name("N"), "stop after N samples")
        ("sync", po::bool_switch(&o.sync), "decode from the first synchronization packet on")
        ("output,o", po::value(&o.recording)->value_name("FILE"),
         "the recording, written as the samples come (mcuprof report FILE reads it)");
    ReportChoices choices;
    choices.output = false;
    choices.formats = standard_output_format_help();
    choices.groupings = {"function", "line", "address", "stack"};   // DWT samples carry no task
    add_report_options(line, o.report, choices);
    if (!line.parse(args))
        return false;
    line.require_one_of({"openocd", "chip"});
    line.only_with({"probe"}, !o.chip.empty(), "--chip NAME");
    if (!o.chip.empty())
        o.launch = openocd_launch_of(o.chip, o.probe);
    else
        openocd_endpoint(o.openocd);   // a usage error now, not at the link
    line.require("cpu-hz", "the core clock sets the sampling period and the SWO baud rate");
    line.require("elf", "the ELF of the firmware that runs");
    if (o.setup.output.empty())
        throw UsageError("--trace-output takes :PORT, a file name or external");
    o.live = o.setup.output.front() == ':';
    line.not_with({"duration", "samples", "sync", "by", "format", "output", "inline", "top"}, !o.live,
                  "--trace-output " + o.setup.output + " (set-up only: the capture is read later by report)");
    if (format_of(core::profile_formats(), o.report.format).binary)   // the report goes to standard output
        throw UsageError("--format takes " + standard_output_format_names() + ", not '" + o.report.format +
                         "' (binary formats: mcuprof swo ... -o FILE, then mcuprof report FILE -o OUT)");
    check_report_options(line, o.report, choices);
    if (!o.recording.empty())
        check_writable(o.recording);
    o.setup.cpu_hz = parse_count(cpu_hz, "--cpu-hz");
    o.setup.swo_hz = parse_count(swo_hz, "--swo-hz");
    if (!o.duration.empty())
        parse_duration(o.duration, "--duration");
    return true;
}

// Chooses the DWT's rate for the one asked, says what it is, and returns samples a second.
double choose_rate(SwoCommandOptions& o)
{
    sources::SwoSetupOptions& setup = o.setup;
    const double line = sources::swo_line_samples_per_second(setup.swo_hz);
    const double wanted = o.rate_text.empty() ? line : parse_count(o.rate_text, "--rate");
    setup.rate = sources::choose_swo_rate(setup.cpu_hz, wanted);
    const double rate = setup.rate.samples_per_second(setup.cpu_hz);
    std::fprintf(stderr,
                 "mcuprof swo: CYCTAP %d POSTPRESET %u: a PC sample every %u cycles, %.0f samples/s at %.0f Hz; "
                 "the %.0f Hz line carries %.0f\n",
                 int(setup.rate.cyctap), unsigned(setup.rate.postpreset), unsigned(setup.rate.period_cycles()), rate,
                 setup.cpu_hz, setup.swo_hz, line);
    if (rate > line)
        std::fprintf(stderr, "mcuprof swo: warning: the rate is above what the line carries: expect overflow "
                             "packets (lost samples)\n");
    else if (!o.rate_text.empty() && rate < wanted * 0.999 && wanted > setup.cpu_hz / 16384)
        std::fprintf(stderr, "mcuprof swo: the DWT has no setting for %.0f samples/s; %.0f is the nearest below\n",
                     wanted, rate);
    return rate;
}

// The recording's header: the link, the DWT's fixed period as the pacing, the images.
sources::RunHeader swo_header(const transport::Endpoint& openocd, const sources::SwoSetupResult& done,
                              const SwoCommandOptions& o, double rate, const core::ImageSet& images)
{
    sources::RunHeader h;
    h.link.source = sources::LinkKind::openocd;
    h.link.openocd = openocd.text();
    h.method = sources::SampleMethod::swo;
    sources::RunHeader::Pacing pacing;
    pacing.clock = sources::PacingClock::wall;
    pacing.shape = sources::IntervalShape::fixed;
    pacing.mean_seconds = 1 / rate;
    pacing.between = sources::PacedBetween::samples;
    pacing.note = printf_string("the DWT takes a PC sample every %u cycles of the %.0f Hz core clock (DWT_CTRL "
                                "0x%08x: CYCTAP %d, POSTPRESET %u), sent over SWO at %.0f Hz: a fixed period, not "
                                "random; each sample's time is its index times the period",
                                unsigned(o.setup.rate.period_cycles()), o.setup.cpu_hz, unsigned(done.dwt_ctrl),
                                int(o.setup.rate.cyctap), unsigned(o.setup.rate.postpreset), o.setup.swo_hz);
    h.pacing = pacing;
    h.images = sources::firmware_fields(images);
    h.started = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                    .count();
    return h;
}

// Sets up SWO over OpenOCD's Tcl port at `endpoint`, captures, tears down; the profile printed.
int swo_through(SwoCommandOptions& o, const core::ImageSet& images, double rate, const transport::Endpoint& endpoint,
                const sources::RunHeader::OpenocdRun* started)
{
    transport::TclClient tcl(endpoint, {});
    const sources::SwoSetupResult done = sources::set_up_swo(tcl, o.setup);
    std::fprintf(stderr, "mcuprof swo: DEMCR 0x%08x, ITM_TCR 0x%08x, DWT_CTRL 0x%08x; %s capturing to %s\n",
                 unsigned(done.demcr), unsigned(done.itm_tcr), unsigned(done.dwt_ctrl), done.tpiu.c_str(),
                 o.setup.output.c_str());
    if (!o.live) {
        std::fprintf(stderr, "mcuprof swo: set up; read the capture with: mcuprof report CAPTURE %s\n",
                     elf_arguments(o.report.elves).c_str());
        return 0;
    }

    sources::SwoOptions swo;
    swo.wait_for_sync = o.sync;
    swo.max_samples = o.samples;
    if (!o.duration.empty())
        swo.max_time = parse_duration(o.duration, "--duration");
    swo.stop = stop_on_interrupt();
    o.report.input = "tcp:" + endpoint.host + o.setup.output;
    core::SamplerFigures figures;
    figures.samples_per_second = rate;
    figures.run_duty = 1;   // the DWT samples a running core: no halts
    figures.swo = core::SwoFigures{o.setup.rate.period_cycles(), o.setup.cpu_hz, o.setup.swo_hz};
    figures.method = printf_string("SWO: DWT PC sampling through OpenOCD %s, DWT_CTRL 0x%08x, SWO at %.0f Hz",
                                   endpoint.text().c_str(), unsigned(done.dwt_ctrl), o.setup.swo_hz);
    core::SampleSet captured;
    try {
        if (o.recording.empty()) {
            captured = sources::read_swo(o.report.input, swo);
            figures.samples = captured.pcs.size();
        } else {
            sources::RunHeader header = swo_header(endpoint, done, o, rate, images);
            if (started != nullptr)
                header.openocd_run = *started;
            sources::RecordingWriter writer(o.recording, header);
            const std::unique_ptr<sources::ByteSource> stream = sources::open_byte_source(o.report.input);
            const auto start = std::chrono::steady_clock::now();
            const sources::SwoRecorded recorded = sources::record_swo(*stream, swo, 1 / rate, writer);
            figures.samples = recorded.samples;
            figures.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            figures.end = recorded.end;
            writer.summary(figures);
            writer.flush();
        }
    } catch (...) {
        sources::tear_down_swo(tcl, done);
        throw;
    }
    sources::tear_down_swo(tcl, done);
    if (o.recording.empty()) {
        captured.sampler = figures;
        write_profile(captured, o.report, images);
        return 0;
    }
    // The profile of what the recording holds, as mcuprof report prints it.
    std::fprintf(stderr, "mcuprof swo: %llu samples in %.2f s, %s; samples in %s\n",
                 static_cast<unsigned long long>(figures.samples), figures.wall_seconds, figures.end.c_str(),
                 o.recording.c_str());
    if (figures.samples == 0)
        throw sources::Error(o.recording, "", "no samples were recorded: is PC sampling on (DWT_CTRL.PCSAMPLENA) and "
                                              "does the SWO stream reach OpenOCD's trace port?");
    o.report.input = o.recording;
    write_profile(sources::to_samples(sources::read_recording(o.recording), std::nullopt), o.report, images);
    return 0;
}

} // namespace

int swo_command(const Arguments& args)
{
    SwoCommandOptions o;
    if (!parse_swo_options(args, o))
        return 0;
    const core::ImageSet images = open_images(o.report);
    images.symbols();   // a wrong ELF before OpenOCD is touched
    const double rate = choose_rate(o);
    if (!o.launch)
        return swo_through(o, images, rate, openocd_endpoint(o.openocd), nullptr);
    // --chip: OpenOCD started here, stopped when this ends; its words and log name an error.
    sources::StartedOpenocd started(*o.launch);
    try {
        return swo_through(o, images, rate, started.tcl(), &started.run());
    } catch (const mcuprof::Error& e) {
        throw sources::Error(o.launch->program, "--chip " + o.launch->chip, started.explain(e.what()));
    }
}

} // namespace mcuprof::cli
