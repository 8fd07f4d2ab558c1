#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include <unistd.h>

#include <boost/program_options.hpp>

#include "mcuprof/core/data_layout.h"
#include "mcuprof/core/error.h"
#include "mcuprof/core/report.h"
#include "mcuprof/core/symbols.h"
#include "mcuprof/error.h"
#include "mcuprof/sources/error.h"
#include "mcuprof/sources/onchip_reader.h"
#include "mcuprof/sources/openocd_sampler.h"
#include "mcuprof/sources/recording.h"
#include "mcuprof/sources/rsp_sampler.h"
#include "options.h"
#include "progress.h"

namespace po = boost::program_options;

namespace mcuprof::cli {
namespace {

std::atomic<bool> stop_requested{false};

extern "C" void on_stop_signal(int)
{
    stop_requested.store(true);
}

// Writes each sample to the recording as it comes, hands it to the kernel at least every
// 100 ms, and shows progress on a terminal.
class RecordingSink : public sources::SampleSink {
public:
    explicit RecordingSink(sources::RecordingWriter& writer) : writer_(writer) {}

    void sample(const sources::LiveSample& s) override
    {
        writer_.sample(s);
        ++samples_;
        const auto now = std::chrono::steady_clock::now();
        if (now - flushed_ >= std::chrono::milliseconds(100)) {
            writer_.flush();
            flushed_ = now;
            const double elapsed = std::chrono::duration<double>(now - start_).count();
            char text[128];
            std::snprintf(text, sizeof text, "mcuprof record: %llu samples, %.0f samples/s, %.1f s",
                          static_cast<unsigned long long>(samples_), samples_ / std::max(elapsed, 1e-9), elapsed);
            progress_.show(text);
        }
    }
    void event(const std::string& kind, const std::string& message) override
    {
        writer_.event({{"kind", kind}, {"message", message}});
        writer_.flush();
        // Notices (a fallback, a resume, a pacing problem) are shown as they happen; the
        // events that end the recording are its end reason, shown in the summary line.
        if (kind != "link-lost" && kind != "error" && kind != "target-exit" && kind != "target-stop") {
            progress_.end();   // the notice on a line of its own
            std::fprintf(stderr, "mcuprof record: %s\n", message.c_str());
        }
    }
    void task(uint32_t control_block, const std::string& name) override
    {
        char address[16];
        std::snprintf(address, sizeof address, "0x%08x", control_block);
        writer_.event({{"kind", "task"}, {"address", address}, {"name", name}});
    }
    void end_progress()
    {
        progress_.end();
    }

private:
    sources::RecordingWriter& writer_;
    Progress progress_;   // on a terminal only
    uint64_t samples_ = 0;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point flushed_ = start_;
};

// --read-onchip: the on-chip sampler's memory, read over GDB, reported like its UART dump.
int read_onchip_command(const transport::Endpoint& gdb, const std::string& stop_at, const std::string& dump_file,
                        ReportOptions& report)
{
    if (report.elf.empty())
        throw UsageError("--elf FILE is required: the ELF of the firmware that runs");
    const core::SymbolTable symbols = core::SymbolTable::load(report.elf);
    std::optional<uint32_t> address;
    if (!stop_at.empty()) {
        for (const core::Function& f : symbols.functions())
            if (f.name == stop_at)
                address = f.start;
        if (!address)
            throw mcuprof::Error(report.elf, "symbols", "no function '" + stop_at + "' for --at");
    }
    sources::Dump dump = sources::read_onchip_over_gdb(gdb, symbols, report.elf, address, std::chrono::seconds(120));
    if (!dump_file.empty()) {
        std::ofstream out(dump_file);
        sources::write_dump(dump, out);
        if (!out)
            throw mcuprof::Error(dump_file, "", "cannot write the dump");
    }
    report.input = dump.path;
    write_profile(sources::to_samples(std::move(dump), {}), report);
    return 0;
}

} // namespace

int record_command(const Arguments& args)
{
    ReportOptions report;
    std::string gdb;
    std::string openocd;
    std::string mode;
    std::string qmp;
    std::string pace = "wall";
    std::string interval;
    std::string duration;
    std::string shape = "exponential";
    std::string samples_file;
    double jitter = 0.5;
    uint64_t samples = 0;
    uint64_t seed = 0;
    std::string batch;
    bool read_onchip = false;
    bool stacks = false;
    uint32_t stack_bytes = 512;
    std::string stop_at;
    const std::string batch_help = "--mode pcsr: DWT_PCSR reads per Tcl round trip, 1 to 10000 (default " +
                                   std::to_string(sources::OpenocdSamplerOptions{}.batch) +
                                   "); the random wait goes between batches";
    po::options_description description("Options");
    description.add_options()
        ("gdb", po::value(&gdb)->value_name("HOST:PORT"), "GDB remote server: QEMU -gdb, OpenOCD's GDB port, a probe's")
        ("openocd", po::value(&openocd)->value_name("HOST:PORT"), "OpenOCD's Tcl RPC port (6666 by default): sample "
                                                                  "through OpenOCD instead of GDB (--mode)")
        ("mode", po::value(&mode)->value_name("MODE"), "--openocd: halt (halt, read pc lr sp xPSR, resume; one round "
                                                       "trip per sample) or pcsr (DWT_PCSR read while the core runs)")
        ("batch", po::value(&batch)->value_name("N"), batch_help.c_str())
        ("samples", po::value(&samples)->value_name("N"), "stop after N samples")
        ("duration", po::value(&duration)->value_name("TIME"), "stop after this long (100ms, 10s, 2min)")
        ("interval", po::value(&interval)->value_name("TIME|N"),
         "mean interval between samples: a time (wall pacing, default 1ms) or an instruction count (icount pacing, "
         "default 20000)")
        ("shape", po::value(&shape)->value_name("NAME"), "exponential (default), uniform (mean +- jitter) or fixed "
                                                         "(prone to lockstep; for experiments)")
        ("jitter", po::value(&jitter)->value_name("F"), "uniform shape: interval spread as a fraction of the mean")
        ("pace", po::value(&pace)->value_name("CLOCK"), "wall (default) or icount: stops at exact instruction counts "
                                                        "through QEMU record/replay (-icount shift=0,rr=replay)")
        ("qmp", po::value(&qmp)->value_name("HOST:PORT"), "--pace icount: QEMU's QMP port for query-replay (default: "
                                                         "QEMU's monitor through the GDB connection)")
        ("seed", po::value(&seed)->value_name("N"), "seed of the interval generator (default: random)")
        ("stacks", po::bool_switch(&stacks), "--gdb: unwind the call stack at every halt (DWARF call-frame "
                                             "information, exception frames); report --by stack, inclusive shares")
        ("stack-bytes", po::value(&stack_bytes)->value_name("N"), "--stacks: bytes of stack read with each halt "
                                                                  "(default 512; deeper frames cost more reads)")
        ("record", po::value(&samples_file)->value_name("FILE"), "the samples file (also -o)")
        ("read-onchip", po::bool_switch(&read_onchip), "instead of sampling, read the reference on-chip sampler's "
                                                      "ring or histogram from target memory; -o writes it as a dump")
        ("at", po::value(&stop_at)->value_name("FUNCTION"), "--read-onchip: first let the target run until it "
                                                            "reaches FUNCTION (a breakpoint), e.g. prof_dump");
    add_report_options(description, report);
    const std::string usage =
        "usage: mcuprof record --gdb HOST:PORT --elf ELF -o FILE [options]\n"
        "       mcuprof record --openocd HOST:PORT --mode halt|pcsr --elf ELF -o FILE [options]\n\n"
        "Samples the program counter of running firmware by halting it at random intervals, writes\n"
        "every sample to FILE as it comes (mcuprof report reads it), and prints the profile.\n"
        "Ctrl-C stops the recording; the target is always left running.";
    std::string unused;
    if (!parse_command(args, usage, description, unused))
        return 0;
    if (!unused.empty())
        throw UsageError("record takes no positional argument ('" + unused + "')");
    // -o names the samples file (or, with --read-onchip, the dump) here; the report goes to
    // standard output.
    if (samples_file.empty())
        samples_file = report.output;
    report.output.clear();
    if (gdb.empty() == openocd.empty())
        throw UsageError("exactly one of --gdb HOST:PORT and --openocd HOST:PORT is required");
    if (!openocd.empty() && read_onchip)
        throw UsageError("--read-onchip goes with --gdb");
    if (openocd.empty() && !mode.empty())
        throw UsageError("--mode goes with --openocd");
    if (!batch.empty() && mode != "pcsr")
        throw UsageError("--batch goes with --openocd HOST:PORT --mode pcsr");
    if (read_onchip)
        return read_onchip_command(transport::Endpoint::parse(gdb, "--gdb"), stop_at, samples_file, report);
    if (!stop_at.empty())
        throw UsageError("--at goes with --read-onchip");
    if (samples_file.empty())
        throw UsageError("-o FILE is required: the samples file");
    if (report.elf.empty())
        throw UsageError("--elf FILE is required: the ELF of the firmware that runs");

    sources::RspSamplerOptions options;
    if (!gdb.empty())
        options.gdb = transport::Endpoint::parse(gdb, "--gdb");
    if (pace == "icount") {
        options.pacing = sources::Pacing::icount;
        if (!qmp.empty())
            options.qmp = transport::Endpoint::parse(qmp, "--qmp");
        options.interval = interval.empty() ? 20000.0 : parse_count(interval, "--interval");
    } else if (pace == "wall") {
        options.interval = interval.empty() ? 1e-3 : std::chrono::duration<double>(parse_duration(interval, "--interval")).count();
    } else {
        throw UsageError("--pace takes wall or icount, not '" + pace + "'");
    }
    if (shape == "exponential")
        options.shape = sources::IntervalGenerator::Shape::exponential;
    else if (shape == "uniform")
        options.shape = sources::IntervalGenerator::Shape::uniform;
    else if (shape == "fixed")
        options.shape = sources::IntervalGenerator::Shape::fixed;
    else
        throw UsageError("--shape takes exponential, uniform or fixed, not '" + shape + "'");
    options.jitter = jitter;
    options.seed = seed;
    if (stacks) {
        if (!openocd.empty())
            throw UsageError("--stacks goes with --gdb (OpenOCD's GDB port serves it too)");
        if (stack_bytes < 32 || stack_bytes > 65536 || stack_bytes % 4 != 0)
            throw UsageError("--stack-bytes takes a multiple of 4 from 32 to 65536");
        sources::StackSamplingOptions s;
        s.unwinder = std::make_shared<const core::Unwinder>(report.elf);
        s.window_bytes = stack_bytes;
        options.stacks = s;
    }
    if (openocd.empty()) {
        // FreeRTOS (or a kernel that looks like it): tag every sample with the running task.
        try {
            options.tasks = sources::find_freertos_tasks(core::DataLayout(report.elf));
        } catch (const core::Error&) {
            // no DWARF: no task names, the samples are still good
        }
    }

    sources::SamplingPlan plan;
    if (samples != 0)
        plan.samples = samples;
    if (!duration.empty())
        plan.duration = parse_duration(duration, "--duration");
    if (!plan.samples && !plan.duration)
        plan.samples = 10000;

    std::unique_ptr<sources::SampleSource> source;
    if (!openocd.empty()) {
        if (pace != "wall")
            throw UsageError("--pace icount goes with --gdb");
        sources::OpenocdSamplerOptions o;
        o.tcl = transport::Endpoint::parse(openocd, "--openocd");
        if (mode == "halt" || mode.empty())
            o.mode = sources::OpenocdMode::halt;
        else if (mode == "pcsr")
            o.mode = sources::OpenocdMode::pcsr;
        else
            throw UsageError("--mode takes halt or pcsr, not '" + mode + "'");
        o.shape = options.shape;
        o.interval = options.interval;
        o.jitter = options.jitter;
        o.seed = options.seed;
        if (!batch.empty()) {
            const double reads = parse_count(batch, "--batch");
            if (reads != std::floor(reads) || reads > 10000)
                throw UsageError("--batch takes a whole number from 1 to 10000, not '" + batch + "'");
            o.batch = unsigned(reads);
        }
        source = std::make_unique<sources::OpenocdSampler>(o);
    } else {
        source = std::make_unique<sources::RspHaltingSampler>(options);
    }
    sources::SampleSource& sampler = *source;
    nlohmann::json header = sampler.describe();
    header["elf"] = report.elf;
    header["started"] = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count();
    sources::RecordingWriter writer(samples_file, header);
    RecordingSink sink(writer);

    stop_requested.store(false);
    auto previous_int = std::signal(SIGINT, on_stop_signal);
    auto previous_term = std::signal(SIGTERM, on_stop_signal);
    const sources::SamplerStats stats = sampler.run(sink, plan, stop_requested);
    std::signal(SIGINT, previous_int);
    std::signal(SIGTERM, previous_term);
    sink.end_progress();
    writer.summary(stats.to_json());
    writer.flush();

    std::fprintf(stderr, "mcuprof record: %llu samples in %.2f s (%.0f samples/s), %s; %s; samples in %s\n",
                 static_cast<unsigned long long>(stats.samples), stats.wall_seconds, stats.rate(),
                 core::describe_sampler(stats.to_json()).c_str(), stats.end_reason.c_str(), samples_file.c_str());
    if (stats.samples == 0)
        throw sources::Error(samples_file, "", "no samples were recorded: " + stats.end_reason);

    report.input = samples_file;
    write_profile(sources::to_samples(sources::read_recording(samples_file), std::nullopt), report);
    if (stats.link_lost) {
        // The profile above is of a run cut short: say so last, and in the exit code, so a
        // script can tell it from a complete recording.
        std::fprintf(stderr, "mcuprof record: stopped early, %s; the %llu samples recorded are in %s\n",
                     stats.end_reason.c_str(), static_cast<unsigned long long>(stats.samples), samples_file.c_str());
        return exit_link_lost;
    }
    return 0;
}

} // namespace mcuprof::cli
