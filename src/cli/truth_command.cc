#include <boost/program_options.hpp>

#include "mcuprof/sources/truth_reader.h"
#include "options.h"
#include "profile_output.h"

namespace po = boost::program_options;

namespace mcuprof::cli {

int truth_command(const Arguments& args)
{
    ReportOptions options;
    CommandLine line("truth", "usage: mcuprof truth COUNTS --elf ELF [options]\n\n"
                              "Reports the ground truth: the QEMU plugin's count of every executed\n"
                              "instruction (firmware-ref/truth), in the same shapes as a profile;\n"
                              "\"samples\" are instructions.");
    std::vector<std::string> inputs;
    line.positionals(inputs, 1, 1, "one COUNTS file");
    // Truth counts carry no task tags: no --by task.
    ReportChoices choices;
    choices.groupings = {"function", "line", "address", "stack"};
    add_report_options(line, options, choices);
    if (!line.parse(args))
        return 0;
    line.require("elf", "the ELF of the firmware that ran");
    check_report_options(line, options, choices, format_of(core::profile_formats(), options.format).binary);
    options.input = inputs.front();
    write_profile(sources::read_truth(options.input), options);
    return 0;
}

} // namespace mcuprof::cli
