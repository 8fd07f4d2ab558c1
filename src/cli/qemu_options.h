#pragma once
// --qemu MACHINE: mcuprof starts QEMU itself, records the run and samples its replay at exact
// instruction counts (record, top), or counts every instruction (truth). The options, and
// the sample source they build; the work is in sampler/qemu_session.h.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "mcuprof/image/image_set.h"
#include "mcuprof/sampler/live.h"
#include "mcuprof/sampler/qemu_session.h"
#include "mcuprof/sampler/watched_variable.h"

namespace mcuprof::cli {

struct QemuOptions {
    std::string machine;                 // --qemu: empty when QEMU is not ours to start
    std::vector<std::string> args;       // --qemu-arg, each one argument
    std::string instructions;            // --instructions: the run's budget
    std::string plugin;                  // --truth-plugin: else the one shipped with the tool
    std::string census;                  // --census FILE: keep the plugin's counts of the run
};

void add_qemu_options(boost::program_options::options_description& description, QemuOptions& options);

// The launch the options ask for: the main image as -kernel, every other one put where it
// loads; `default_budget` when --instructions is not given.
sources::QemuLaunch qemu_launch(const QemuOptions& options, const core::ImageSet& images, uint64_t default_budget);

// Records the run (Ctrl-C ends it with an error) and copies its census to --census.
std::unique_ptr<sources::QemuSession> record_in_qemu(const QemuOptions& options, const core::ImageSet& images,
                                                     uint64_t default_budget);

struct LiveSampling;

// record/top --qemu: the run recorded, then its replay sampled by instruction count with the
// other sampling options (--samples, --interval, --stacks, ...); `variable` as make_sample_source's.
std::unique_ptr<sources::SampleSource> make_qemu_sample_source(const LiveSampling& sampling,
                                                               const std::optional<sources::WatchedVariable>& variable,
                                                               const core::ImageSet& images);

} // namespace mcuprof::cli
