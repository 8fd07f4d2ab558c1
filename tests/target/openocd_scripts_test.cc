// The OpenOCD halt script run by OpenOCD's own Jim Tcl, with read_memory and write_memory
// answered by a small model of the debug registers written here in Tcl (ARMv7-M ARM C1.6:
// DHCSR C_HALT sets S_HALT, a DCRSR write sets S_REGRDY when the transfer is done). OpenOCD
// runs the file at its configuration stage, where no target exists, so the two commands are
// ours; `apply`, `catch` and the rest are Jim's as they are when mcuprof samples.
#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <unistd.h>

#include "mcuprof/cortex_m.h"
#include "mcuprof/target/openocd_scripts.h"

using namespace mcuprof::sources;

namespace {

// The model: DHCSR (0xE000EDF0) reads S_HALT while C_HALT is written set and S_REGRDY after a
// DCRSR write unless `regrdy` is 0 (a register transfer that never ends); every write is logged.
std::string debug_register_model(bool regrdy)
{
    return "set ::dhcsr 1\nset ::regrdy " + std::string(regrdy ? "1" : "0") + "\nset ::writes {}\n" + R"TCL(
proc read_memory {address width count} {
    if {$address == 0xE000EDF0} {
        set status [expr {$::dhcsr & 0xFFFF}]
        if {$::dhcsr & 2} {set status [expr {$status | 0x20000}]}
        if {$::regrdy} {set status [expr {$status | 0x10000}]}
        return [lrange [list $status 0 0x08000101] 0 [expr {$count - 1}]]
    }
    return [lrepeat $count 0]
}
proc write_memory {address width data} {
    lappend ::writes [format "0x%08X" $address] {*}$data
    if {$address == 0xE000EDF0} {set ::dhcsr [lindex $data 0]}
}
)TCL";
}

struct ScriptRun {
    std::string output;   // what the file printed, OpenOCD's own lines among it
    bool halted_after = false;
};

// Runs `script` in OpenOCD beside the model and says whether the core is halted after it.
ScriptRun run_in_openocd(const std::string& script, bool regrdy)
{
    const std::filesystem::path file =
        std::filesystem::temp_directory_path() / ("mcuprof-halt-script-" + std::to_string(getpid()) + ".tcl");
    {
        std::ofstream out(file);
        out << debug_register_model(regrdy) << "if {[catch {" << script << "} result]} {puts \"script-error: $result\"}\n"
            << "puts \"halted-after: [expr {($::dhcsr & 2) != 0}]\"\nputs \"writes: $::writes\"\nshutdown\n";
    }
    ScriptRun run;
    const std::string command = "openocd -f " + file.string() + " 2>&1";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
    REQUIRE(pipe);
    std::array<char, 4096> buffer{};
    while (fgets(buffer.data(), buffer.size(), pipe.get()))
        run.output += buffer.data();
    std::filesystem::remove(file);
    run.halted_after = run.output.find("halted-after: 1") != std::string::npos;
    REQUIRE_MESSAGE((run.halted_after || run.output.find("halted-after: 0") != std::string::npos), run.output);
    return run;
}

} // namespace

TEST_CASE("OpenOCD halt script kept halted for stacks: a failed register read resumes the core in the same script")
{
    HaltRequest request;
    request.all_registers = true;
    request.stay_halted = true;
    request.memory = {{0x20000000, 64}};
    const std::string script = halt_script({}, request, false);

    // The transfers end: the core stays halted for the unwinder's reads, as asked.
    const ScriptRun kept = run_in_openocd(script, true);
    CHECK_MESSAGE(kept.output.find("script-error") == std::string::npos, kept.output);
    CHECK_MESSAGE(kept.halted_after, kept.output);

    // S_REGRDY never set: the script fails, and resumes the core before it does (DHCSR written
    // back as found, C_HALT clear), since no later script knows the halt was ours.
    const ScriptRun failed = run_in_openocd(script, false);
    CHECK_MESSAGE(failed.output.find("script-error: DHCSR") != std::string::npos, failed.output);
    CHECK_MESSAGE(!failed.halted_after, failed.output);

    // Without stay_halted the script resumes whether the reads failed or not.
    request.stay_halted = false;
    CHECK_FALSE(run_in_openocd(halt_script({}, request, false), true).halted_after);
    CHECK_FALSE(run_in_openocd(halt_script({}, request, false), false).halted_after);
}
