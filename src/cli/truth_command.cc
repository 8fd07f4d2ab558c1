#include <boost/program_options.hpp>

#include "mcuprof/inputs/truth_reader.h"
#include "options.h"
#include "qemu_options.h"
#include "profile_output.h"

namespace po = boost::program_options;

namespace mcuprof::cli {

int truth_command(const Arguments& args)
{
    ReportOptions options;
    CommandLine line("truth", "usage: mcuprof truth COUNTS --elf ELF [options]\n"
                              "       mcuprof truth --qemu MACHINE --elf ELF [--instructions N]\n"
                              "                     [--qemu-arg ARG ...] [options]\n\n"
                              "Reports the ground truth: the QEMU plugin's count of every executed\n"
                              "instruction (firmware-ref/truth), in the same shapes as a profile;\n"
                              "\"samples\" are instructions. With --qemu, mcuprof runs the firmware\n"
                              "in QEMU with the plugin itself, to its exit or --instructions\n"
                              "(default 200M).");
    std::vector<std::string> inputs;
    line.positionals(inputs, 0, 1, "one COUNTS file");
    // Truth counts carry no task tags: no --by task.
    ReportChoices choices;
    choices.groupings = {"function", "line", "address", "stack", "core"};
    add_report_options(line, options, choices);
    QemuOptions qemu;
    add_qemu_options(line.description(), qemu);
    if (!line.parse(args))
        return 0;
    line.require("elf", "the ELF of the firmware that ran");
    check_report_options(line, options, choices, format_of(core::profile_formats(), options.format).binary);
    line.only_with({"qemu-arg", "instructions", "census", "truth-plugin"}, !qemu.machine.empty(), "--qemu MACHINE");
    if (!qemu.machine.empty() && !inputs.empty())
        throw UsageError("truth takes a COUNTS file or --qemu MACHINE, not both");
    if (qemu.machine.empty() && inputs.empty())
        throw UsageError("truth needs a COUNTS file, or --qemu MACHINE");
    const core::ImageSet images = open_images(options);
    images.symbols();   // a wrong ELF before QEMU runs
    if (!qemu.machine.empty()) {
        const auto session = record_in_qemu(qemu, images, 200'000'000);
        // The counts the report names: the census kept (--census), else the session's own.
        options.input = qemu.census.empty() ? session->recorded().counts_path : qemu.census;
        core::SampleSet census = sources::read_truth(options.input);
        // Without --census the session's counts file is a temporary one, gone when the session
        // ends: the report names the run that made it instead.
        if (qemu.census.empty())
            census.origin = "exact instruction counts (QEMU truth plugin): truth --qemu " + qemu.machine + " " +
                            elf_arguments(options.elves);
        write_profile(census, options, images);
        return 0;
    }
    options.input = inputs.front();
    write_profile(sources::read_truth(options.input), options, images);
    return 0;
}

} // namespace mcuprof::cli
