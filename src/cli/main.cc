// mcuprof: where Cortex-M firmware spends its time, from samples of its program counter.
// This file only dispatches to a command and turns errors into messages and exit codes:
// 0 ok, 1 usage, 2 bad input (one line naming the file, the place and the problem); a
// command may add its own (commands.h).
#include <iostream>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "commands.h"
#include "options.h"
#include "version.h"
#include "mcuprof/error.h"

namespace {

const char* const overview =
    "usage: mcuprof COMMAND [options]\n"
    "\n"
    "Commands:\n"
    "  record (--gdb HOST:PORT|DEVICE | --openocd HOST[:PORT]) --elf ELF -o FILE\n"
    "               sample a running target into a samples file, print its profile\n"
    "  top (--gdb HOST:PORT|DEVICE | --openocd HOST[:PORT]) --elf ELF\n"
    "               the hottest functions live, refreshed in place\n"
    "  report INPUT --elf ELF\n"
    "               the profile of a samples file, an on-chip sampler dump, truth\n"
    "               counts, an SWO capture or a gmon.out\n"
    "  truth COUNTS --elf ELF\n"
    "               the exact profile from the QEMU truth plugin's counts\n"
    "  diff A B --elf ELF\n"
    "               two profiles side by side, differences beyond 3 standard errors\n"
    "               marked\n"
    "  swo --openocd HOST[:PORT] --elf ELF --cpu-hz F\n"
    "               DWT PC sampling over SWO set up through OpenOCD, profiled live\n"
    "  vprobe --gdb HOST:PORT|DEVICE --port N\n"
    "               a virtual JTAG probe: OpenOCD (remote_bitbang) debugs the target\n"
    "               of a GDB server\n"
    "\n"
    "mcuprof COMMAND --help shows a command's options.\n";

// An error is one line, also when it carries another program's text (QEMU's monitor,
// OpenOCD's Tcl replies) with line breaks in it.
std::string one_line(std::string text)
{
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
        text.pop_back();
    std::string line;
    for (char c : text) {
        if (c == '\r')
            continue;
        if (c == '\n')
            line += " / ";
        else
            line += c;
    }
    return line;
}

} // namespace

int main(int argc, char** argv)
{
    using namespace mcuprof::cli;
    const std::map<std::string, int (*)(const Arguments&)> commands = {
        {"report", report_command},
        {"truth", truth_command},
        {"record", record_command},
        {"top", top_command},
        {"diff", diff_command},
        {"vprobe", vprobe_command},
        {"swo", swo_command},
    };
    if (argc < 2) {
        std::cerr << overview;
        return 1;
    }
    const std::string name = argv[1];
    if (name == "--help" || name == "-h" || name == "help") {
        std::cout << overview;
        return 0;
    }
    if (name == "--version") {
        std::cout << "mcuprof " MCUPROF_VERSION "\n";
        return 0;
    }
    auto command = commands.find(name);
    if (command == commands.end()) {
        std::vector<std::string> names;
        for (const auto& known : commands)
            names.push_back(known.first);
        const std::string guess = nearest(name, names);
        std::cerr << "mcuprof: unknown command '" << name << "'"
                  << (guess.empty() ? "" : "; did you mean " + guess + "?") << "\n\n" << overview;
        return 1;
    }
    try {
        return command->second(Arguments(argv + 2, argv + argc));
    } catch (const UsageError& e) {
        std::cerr << "mcuprof " << name << ": " << one_line(e.what()) << " (see mcuprof " << name << " --help)\n";
        return 1;
    } catch (const mcuprof::Error& e) {
        std::cerr << "mcuprof " << name << ": " << one_line(e.what()) << '\n';
        return 2;
    } catch (const std::bad_alloc&) {
        std::cerr << "mcuprof " << name << ": out of memory\n";
        return 2;
    } catch (const std::exception& e) {
        // Not the input's fault nor the link's: a defect, said as one line, never an abort
        // that leaves a recording without its summary.
        std::cerr << "mcuprof " << name << ": internal error: " << one_line(e.what())
                  << " (a defect of mcuprof; please report it with the command line)\n";
        return 4;
    }
}
