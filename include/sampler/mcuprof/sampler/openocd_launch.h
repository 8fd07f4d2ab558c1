#pragma once
// OpenOCD started and stopped by mcuprof itself, from the chip's own target script and the
// probe's own interface script (record|top --chip NAME --probe PROBE; docs/boards.md).
//
// The command line is OpenOCD's stock scripts and the settings configs/openocd/*-sampling.cfg
// documents: the interface script (SWD where the probe offers a choice), target/NAME.cfg
// unchanged, no reset line (mcuprof attaches to running firmware and never resets it), the
// Tcl port on a free loopback port, GDB and telnet ports off, then `init`. OpenOCD's standard
// error goes to a log file; its first errors, with the log's name, are the message when it
// does not come up. It runs as a ChildProcess: stopped at the end, on Ctrl-C and on every error.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mcuprof/link/tcp_connection.h"
#include "mcuprof/sampler/child_process.h"
#include "mcuprof/sampler/live.h"

namespace mcuprof::sources {

// --probe: what OpenOCD reaches the chip through.
struct OpenocdProbe {
    enum class Kind { stlink, cmsis_dap, jlink, stlink_server };
    Kind kind = Kind::stlink;
    // Kind::stlink_server: ST's stlink-server (or `mcuprof vprobe --stlink-port`) on 127.0.0.1,
    // the only address OpenOCD 0.12's st-link TCP backend connects to (stlink_usb.c).
    uint16_t server_port = 7184;

    // "stlink", "cmsis-dap", "jlink", "stlink-server:127.0.0.1:7184".
    std::string text() const;
};

// What the table knows of a chip family OpenOCD has a target script for (docs/boards.md).
struct ChipFacts {
    std::string_view script;    // target/SCRIPT.cfg
    std::string_view family;    // "STM32F4", "nRF52"
    std::string_view core;      // "Cortex-M4"
    std::string_view note;      // what a user should know when OpenOCD fails there (probes, cores)
};

// The families in the table; nullptr for a script it does not have (OpenOCD may still have it).
const ChipFacts* chip_facts(std::string_view script);
const std::vector<ChipFacts>& known_chips();

struct OpenocdLaunch {
    std::string program = default_program();   // $MCUPROF_OPENOCD overrides "openocd"
    std::string chip;                           // target/CHIP.cfg
    OpenocdProbe probe;

    static std::string default_program();
};

// The folders OpenOCD looks for scripts in, as it does (OpenOCD's User's Guide, "Configuration
// Basics"): $OPENOCD_SCRIPTS, then PREFIX/share/openocd/scripts beside the program. Those
// that exist.
std::vector<std::string> openocd_script_folders(const std::string& program);

// When none of the folders has target/CHIP.cfg: the problem in words, naming the folders and
// the scripts whose names are nearest. Nothing when it is there, or when no folder is found
// (OpenOCD then says what it cannot open).
std::optional<std::string> missing_target_script(const OpenocdLaunch& launch);

// OpenOCD's command line for the launch, its Tcl port on `tcl_port`.
std::vector<std::string> openocd_command(const OpenocdLaunch& launch, uint16_t tcl_port);

// An OpenOCD mcuprof started, up and listening on its Tcl port. The destructor stops it and
// removes its log, unless the log was kept (keep_log, explain): after a run that did not end well.
class StartedOpenocd {
public:
    // Starts OpenOCD and waits for its Tcl port (up to 60 s; a port taken meanwhile is tried
    // again with another). OpenOCD's own errors (no probe, another chip, a probe held by
    // another program) throw sources::Error with its words, a hint, and the log's name.
    explicit StartedOpenocd(const OpenocdLaunch& launch);
    ~StartedOpenocd();
    StartedOpenocd(const StartedOpenocd&) = delete;
    StartedOpenocd& operator=(const StartedOpenocd&) = delete;

    const transport::Endpoint& tcl() const { return tcl_; }
    // For the recording's header: the chip, the probe, the command line.
    const RunHeader::OpenocdRun& run() const { return run_; }
    void keep_log() { keep_log_ = true; }
    // `problem` (the link's, while OpenOCD ran) with OpenOCD's words from its log and the log's
    // name, which is then kept.
    std::string explain(const std::string& problem);

private:
    OpenocdLaunch launch_;
    std::string log_;
    std::unique_ptr<ChildProcess> process_;
    RunHeader::OpenocdRun run_;
    transport::Endpoint tcl_;
    bool keep_log_ = false;
};

// Starts OpenOCD (StartedOpenocd) and calls `connect` with its Tcl port; the source returned
// owns OpenOCD and stops it when it goes, and its header names the command line. A link error
// from `connect` throws sources::Error with OpenOCD's words.
std::unique_ptr<SampleSource> start_openocd_for_sampling(
    const OpenocdLaunch& launch,
    const std::function<std::unique_ptr<SampleSource>(const transport::Endpoint& tcl)>& connect);

// The programs that hold the probe's USB device open, "openocd (pid 812)", found as lsof would:
// the probe's devices under SYS/bus/usb/devices (the ST-Link's and SEGGER's vendor and product
// IDs, a CMSIS-DAP's product string), their nodes /dev/bus/usb/BBB/DDD among the descriptors in
// PROC/PID/fd of every other process. Empty when none is seen (the holder may be another user's).
std::vector<std::string> usb_probe_holders(OpenocdProbe::Kind probe, const std::string& sys_root = "/sys",
                                           const std::string& proc_root = "/proc");

// The lines of an OpenOCD log that say what went wrong ("Error: ..." and its warnings of an
// unexpected ID), joined on one line, with a hint where the words are known ones.
std::string openocd_failure(const std::string& log_text, const OpenocdLaunch& launch);

} // namespace mcuprof::sources
