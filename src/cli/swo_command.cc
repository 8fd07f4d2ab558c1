// mcuprof swo: DWT PC sampling over SWO set up through OpenOCD's Tcl port, and the stream
// it serves profiled live (docs/swo.md, "Set-up over OpenOCD").
#include <cstdio>
#include <iostream>

#include <boost/program_options.hpp>

#include "mcuprof/sources/swo_reader.h"
#include "mcuprof/sources/swo_setup.h"
#include "mcuprof/transport/tcl_client.h"
#include "options.h"
#include "profile_output.h"

namespace po = boost::program_options;

namespace mcuprof::cli {

int swo_command(const Arguments& args)
{
    ReportOptions options;
    std::string openocd, cpu_hz_text, swo_hz_text = "2M", rate_text, output = ":3443", duration;
    size_t samples = 0;
    bool sync = false;
    po::options_description description("Options");
    description.add_options()
        ("openocd", po::value(&openocd)->value_name("HOST:PORT"), "OpenOCD's Tcl port (required)")
        ("cpu-hz", po::value(&cpu_hz_text)->value_name("F"), "the core clock, TRACECLKIN (required): sets the "
                                                             "sampling period and the SWO baud divider (168M)")
        ("swo-hz", po::value(&swo_hz_text)->value_name("F")->default_value("2M"), "the SWO pin's bit rate")
        ("rate", po::value(&rate_text)->value_name("R"), "PC samples a second wanted; the fastest DWT setting not "
                                                         "above it is used (default: what the SWO line carries, "
                                                         "F/50)")
        ("trace-output", po::value(&output)->value_name("WHERE")->default_value(":3443"),
         "where OpenOCD sends the stream: :PORT (a TCP server, profiled live here), a FILE or 'external' "
         "(set-up only)")
        ("duration", po::value(&duration)->value_name("TIME"), "stop after TIME (10s, 2min); default: Ctrl-C")
        ("samples", po::value(&samples)->value_name("N"), "stop after N samples")
        ("sync", po::bool_switch(&sync), "decode from the first synchronization packet on");
    add_report_options(description, options);
    const std::string usage =
        "usage: mcuprof swo --openocd HOST:PORT --elf ELF --cpu-hz F [--swo-hz F] [--rate R] [options]\n\n"
        "Turns on the DWT's periodic PC sampling over SWO with no firmware change: writes DEMCR.TRCENA,\n"
        "the ITM (unlocked, ITMENA, SYNCENA, DWTENA, TraceBusID 1) and DWT_CTRL (CYCTAP and POSTPRESET\n"
        "for the rate, CYCCNTENA, PCSAMPLENA) through OpenOCD's Tcl port, has OpenOCD capture SWO\n"
        "(tpiu: uart protocol, -traceclk, -pin-freq, -output), profiles the stream until --duration,\n"
        "--samples or Ctrl-C, then turns the sampling off and prints the profile.";
    std::string unused;
    if (!parse_command(args, usage, description, unused))
        return 0;
    if (!unused.empty())
        throw UsageError("swo takes no positional argument ('" + unused + "')");
    if (openocd.empty())
        throw UsageError("--openocd HOST:PORT is required: OpenOCD's Tcl port");
    if (cpu_hz_text.empty())
        throw UsageError("--cpu-hz F is required: the core clock sets the sampling period and the SWO baud rate");
    if (options.elf.empty())
        throw UsageError("--elf FILE is required: the ELF of the firmware that runs");
    if (output.empty())
        throw UsageError("--trace-output takes :PORT, a file name or external");
    const bool live = output.front() == ':';

    sources::SwoSetupOptions setup;
    setup.cpu_hz = parse_count(cpu_hz_text, "--cpu-hz");
    setup.swo_hz = parse_count(swo_hz_text, "--swo-hz");
    setup.output = output;
    const double line = sources::swo_line_samples_per_second(setup.swo_hz);
    const double wanted = rate_text.empty() ? line : parse_count(rate_text, "--rate");
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
    else if (!rate_text.empty() && rate < wanted * 0.999 && wanted > setup.cpu_hz / 16384)
        std::fprintf(stderr, "mcuprof swo: the DWT has no setting for %.0f samples/s; %.0f is the nearest below\n",
                     wanted, rate);

    const transport::Endpoint endpoint = transport::Endpoint::parse(openocd, "--openocd");
    transport::TclClient tcl(endpoint, {});
    const sources::SwoSetupResult done = sources::set_up_swo(tcl, setup);
    std::fprintf(stderr, "mcuprof swo: DEMCR 0x%08x, ITM_TCR 0x%08x, DWT_CTRL 0x%08x; %s capturing to %s\n",
                 unsigned(done.demcr), unsigned(done.itm_tcr), unsigned(done.dwt_ctrl), done.tpiu.c_str(),
                 output.c_str());
    if (!live) {
        std::fprintf(stderr, "mcuprof swo: set up; read the capture with: mcuprof report CAPTURE --elf %s\n",
                     options.elf.c_str());
        return 0;
    }

    sources::SwoOptions swo;
    swo.wait_for_sync = sync;
    swo.max_samples = samples;
    if (!duration.empty())
        swo.max_time = parse_duration(duration, "--duration");
    swo.stop = stop_on_interrupt();
    options.input = "tcp:" + endpoint.host + output;
    core::SampleSet captured;
    try {
        captured = sources::read_swo(options.input, swo);
    } catch (...) {
        sources::tear_down_swo(tcl, done);
        throw;
    }
    sources::tear_down_swo(tcl, done);
    core::SamplerFigures figures;
    figures.samples = captured.pcs.size();
    figures.samples_per_second = rate;
    figures.run_duty = 1;   // the DWT samples a running core: no halts
    char method[160];
    std::snprintf(method, sizeof method, "SWO: DWT PC sampling through OpenOCD %s, DWT_CTRL 0x%08x, SWO at %.0f Hz",
                  endpoint.text().c_str(), unsigned(done.dwt_ctrl), setup.swo_hz);
    figures.method = method;
    captured.sampler = figures;
    write_profile(captured, options);
    return 0;
}

} // namespace mcuprof::cli
