#include <boost/program_options.hpp>

#include "mcuprof/sources/truth_reader.h"
#include "options.h"
#include "qemu_options.h"
#include "profile_output.h"

namespace po = boost::program_options;

namespace mcuprof::cli {

int truth_command(const Arguments& args)
{
    ReportOptions options;
    QemuOptions qemu;
    po::options_description description("Options");
    add_report_options(description, options);
    add_qemu_options(description, qemu);
    const std::string usage =
        "usage: mcuprof truth COUNTS --elf ELF [options]\n"
        "       mcuprof truth --qemu MACHINE --elf ELF [--instructions N] [--qemu-arg ARG ...] [options]\n\n"
        "Reports the ground truth: the QEMU plugin's count of every executed instruction\n"
        "(firmware-ref/truth), in the same shapes as a profile; \"samples\" are instructions.\n"
        "With --qemu, mcuprof runs the firmware in QEMU with the plugin itself, to its exit or\n"
        "--instructions (default 200M).";
    if (!parse_command(args, usage, description, options.input))
        return 0;
    if (!qemu.machine.empty()) {
        if (!options.input.empty())
            throw UsageError("truth takes a COUNTS file or --qemu MACHINE, not both");
        if (options.elf.empty())
            throw UsageError("--elf FILE is required: the firmware QEMU runs");
        const auto session = record_in_qemu(qemu, options.elf, 200'000'000);
        // The counts the report names: the census kept (--census), else the session's own.
        options.input = qemu.census.empty() ? session->recorded().counts_path : qemu.census;
        write_profile(sources::read_truth(options.input), options);
        return 0;
    }
    if (options.input.empty())
        throw UsageError("truth needs a COUNTS file, or --qemu MACHINE");
    write_profile(sources::read_truth(options.input), options);
    return 0;
}

} // namespace mcuprof::cli
