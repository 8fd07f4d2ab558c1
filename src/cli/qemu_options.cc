#include "qemu_options.h"

#include <cmath>
#include <filesystem>

#include "mcuprof/inputs/error.h"
#include "commands.h"
#include "interrupt.h"
#include "options.h"
#include "sampling.h"

namespace po = boost::program_options;

namespace mcuprof::cli {
namespace {

// Without --interval, the budget counts this many instructions a sample, and the interval is
// the recorded run's length over the samples wanted.
constexpr double default_interval = 20000;
constexpr uint64_t default_samples = 10000;

} // namespace

void add_qemu_options(po::options_description& description, QemuOptions& o)
{
    description.add_options()
        ("qemu", po::value(&o.machine)->value_name("MACHINE"),
         "start QEMU (-M MACHINE -kernel ELF), record the run to the firmware's exit or --instructions, and "
         "sample its replay at exact instruction counts")
        ("qemu-arg", po::value(&o.args)->value_name("ARG")->composing(),
         "--qemu: one more QEMU argument (repeat the option for more)")
        ("instructions", po::value(&o.instructions)->value_name("N"),
         "--qemu: end the run once it has executed N instructions, unless the firmware exits first "
         "(default: room for --samples at --interval; truth: 200M)")
        ("truth-plugin", po::value(&o.plugin)->value_name("FILE"),
         "--qemu: the truth plugin (default: libtruth.so beside mcuprof, or in the installed lib/mcuprof)")
        ("census", po::value(&o.census)->value_name("FILE"),
         "--qemu: also keep the truth plugin's exact count of every instruction of the run in FILE (mcuprof "
         "truth FILE reads it)");
}

sources::QemuLaunch qemu_launch(const QemuOptions& o, const core::ImageSet& images, uint64_t default_budget)
{
    sources::QemuLaunch launch;
    launch.program = sources::QemuLaunch::default_program();
    launch.machine = o.machine;
    launch.elf = images.main().path();
    launch.extra_args = o.args;
    // The other images of the target beside -kernel: QEMU's generic loader puts an ELF's
    // segments where they load (QEMU's docs/system/generic-loader.rst); a comma inside an
    // option's value is written twice.
    for (size_t i = 1; i < images.images().size(); ++i) {
        std::string path;
        for (const char c : images.images()[i].path())
            path += c == ',' ? std::string(",,") : std::string(1, c);
        launch.extra_args.insert(launch.extra_args.end(), {"-device", "loader,file=" + path});
    }
    launch.plugin = o.plugin.empty() ? sources::find_truth_plugin(MCUPROF_PLUGIN_INSTALL_DIR) : o.plugin;
    launch.instruction_budget = default_budget;
    if (!o.instructions.empty()) {
        const double budget = parse_count(o.instructions, "--instructions");
        if (budget < 1 || budget != std::floor(budget))
            throw UsageError("--instructions takes a whole number of instructions, not '" + o.instructions + "'");
        launch.instruction_budget = uint64_t(budget);
    }
    return launch;
}

std::unique_ptr<sources::QemuSession> record_in_qemu(const QemuOptions& o, const core::ImageSet& images,
                                                     uint64_t default_budget)
{
    auto session = std::make_unique<sources::QemuSession>(qemu_launch(o, images, default_budget));
    {
        const StopOnSignal stop;
        session->record(StopOnSignal::requested);
    }
    if (!o.census.empty()) {
        std::error_code error;
        std::filesystem::copy_file(session->recorded().counts_path, o.census,
                                   std::filesystem::copy_options::overwrite_existing, error);
        if (error)
            throw sources::Error(o.census, "", "cannot write the census: " + error.message());
    }
    return session;
}

std::unique_ptr<sources::SampleSource> make_qemu_sample_source(const LiveSampling& s,
                                                               const std::optional<sources::WatchedVariable>& variable,
                                                               const core::ImageSet& images)
{
    const uint64_t samples = s.samples.value_or(default_samples);
    const double interval = s.interval_given ? s.pacing.interval : 0;
    // Room for N exponential intervals: their sum is N +- sqrt(N) means, so with 5 standard
    // deviations to spare --samples N is reached before the run ends.
    const double room = double(samples) + 5 * std::sqrt(double(samples));
    const auto budget = uint64_t(room * (interval > 0 ? interval : default_interval));
    std::unique_ptr<sources::QemuSession> session = record_in_qemu(s.qemu, images, budget);

    // Without --interval the samples spread over the whole recorded run: about --samples of them.
    LiveSampling replay = s;
    replay.link = LiveSampling::Link::gdb;
    replay.qemu = {};
    replay.pacing.pacing = sources::Pacing::icount;
    if (interval == 0)
        replay.pacing.interval =
            double(std::llround(std::max(1.0, double(session->recorded().instructions) / double(samples))));
    return sources::replay_for_sampling(std::move(session), interval == 0, [&](const transport::Endpoint& gdb) {
        replay.gdb = gdb;
        return make_sample_source(replay, variable, images);
    });
}

} // namespace mcuprof::cli
