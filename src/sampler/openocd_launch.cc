#include "mcuprof/sampler/openocd_launch.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "mcuprof/inputs/error.h"
#include "mcuprof/link/error.h"
#include "mcuprof/link/tcp_connection.h"
#include "mcuprof/link/usb_holders.h"
#include "mcuprof/sampler/child_process.h"
#include "mcuprof/target/stlink_link.h"

namespace mcuprof::sources {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The families users bring, by OpenOCD 0.12's target script (docs/boards.md has the table with
// each probe). Cores from the vendors' reference manuals.
const std::vector<ChipFacts> chips = {
    {"stm32f0x", "STM32F0", "Cortex-M0", ""},
    {"stm32f1x", "STM32F1", "Cortex-M3", ""},
    {"stm32f2x", "STM32F2", "Cortex-M3", ""},
    {"stm32f3x", "STM32F3", "Cortex-M4", ""},
    {"stm32f4x", "STM32F4", "Cortex-M4", ""},
    {"stm32f7x", "STM32F7", "Cortex-M7", ""},
    {"stm32g0x", "STM32G0", "Cortex-M0+", ""},
    {"stm32g4x", "STM32G4", "Cortex-M4", ""},
    {"stm32h7x", "STM32H7", "Cortex-M7",
     "the dual-core parts (H745/H755/H747/H757) add a Cortex-M4 as a second target when DUAL_CORE is set "
     "(-c \"set DUAL_CORE 1\" through --openocd, configs/openocd/stm32h745-stlink.cfg)"},
    {"stm32l0", "STM32L0", "Cortex-M0+", ""},
    {"stm32l1", "STM32L1", "Cortex-M3", ""},
    {"stm32l4x", "STM32L4", "Cortex-M4", ""},
    {"stm32l5x", "STM32L5", "Cortex-M33", ""},
    {"stm32u5x", "STM32U5", "Cortex-M33", ""},
    {"stm32wbx", "STM32WB", "Cortex-M4", "the radio's Cortex-M0+ is not reachable from the debug port"},
    {"stm32wlx", "STM32WL", "Cortex-M4", ""},
    {"nrf51", "nRF51", "Cortex-M0", ""},
    {"nrf52", "nRF52", "Cortex-M4", ""},
    {"rp2040", "RP2040", "Cortex-M0+",
     "two cores on a multidrop SWD bus (SWD v2): a CMSIS-DAP probe (the Raspberry Pi Debug Probe) reaches it, "
     "an ST-Link's firmware does not"},
    {"at91samdXX", "SAMD21", "Cortex-M0+", ""},
    {"atsame5x", "SAMD51/SAME5x", "Cortex-M4", ""},
    {"stellaris", "Stellaris/Tiva C", "Cortex-M3/M4",
     "through an ST-Link's high-level commands (--probe stlink) the script's expected SWD ID is compared "
     "exactly and a Cortex-M3 r1 part fails it; CMSIS-DAP and J-Link are not affected"},
};

// Chips by name: the first `count` scripts of `names` nearest to `chip` (a shared prefix first,
// then the length of the common prefix).
std::vector<std::string> nearest(const std::vector<std::string>& names, const std::string& chip, size_t count)
{
    auto common = [&](const std::string& name) {
        size_t n = 0;
        while (n < name.size() && n < chip.size() && std::tolower(name[n]) == std::tolower(chip[n]))
            ++n;
        return n;
    };
    std::vector<std::string> sorted = names;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [&](const std::string& a, const std::string& b) { return common(a) > common(b); });
    sorted.resize(std::min(count, sorted.size()));
    return sorted;
}

std::string joined(const std::vector<std::string>& words, const char* separator)
{
    std::string text;
    for (const std::string& w : words)
        text += (text.empty() ? "" : separator) + w;
    return text;
}

std::string read_text(const std::string& path)
{
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// OpenOCD's log for this run: in the temporary folder, one per mcuprof process.
std::string log_path_for_run()
{
    return (fs::temp_directory_path() / ("mcuprof-openocd-" + std::to_string(::getpid()) + ".log")).string();
}

// A sysfs attribute's first line ("0483"), empty when absent.
std::string attribute(const fs::path& file)
{
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);
    return line;
}

// Whether the USB device in sysfs folder `device` is a probe of that kind: ST's vendor ID
// 0x0483 with an ST-LINK product ID (stlink_usb_endpoints knows them),
// SEGGER's 0x1366, or a product string naming CMSIS-DAP (the CMSIS-DAP specification requires it).
bool is_probe(const fs::path& device, OpenocdProbe::Kind kind)
{
    const std::string vendor = attribute(device / "idVendor");
    const std::string product = attribute(device / "idProduct");
    switch (kind) {
    case OpenocdProbe::Kind::stlink:
        return vendor == "0483" && stlink::stlink_usb_endpoints(uint16_t(std::strtoul(product.c_str(), nullptr, 16)));
    case OpenocdProbe::Kind::jlink:
        return vendor == "1366";
    case OpenocdProbe::Kind::cmsis_dap:
        return attribute(device / "product").find("CMSIS-DAP") != std::string::npos;
    case OpenocdProbe::Kind::stlink_server:
        return false;
    }
    return false;
}

// OpenOCD mcuprof started, the sampler on its Tcl port; OpenOCD stops when this goes.
class OpenocdRunSource : public SampleSource {
public:
    OpenocdRunSource(std::unique_ptr<StartedOpenocd> openocd, std::unique_ptr<SampleSource> sampler)
        : openocd_(std::move(openocd)), sampler_(std::move(sampler))
    {
    }
    ~OpenocdRunSource() override
    {
        sampler_.reset();   // the sampler leaves the core running and closes its connection first
        openocd_.reset();
    }

    RunHeader run_header() const override
    {
        RunHeader h = sampler_->run_header();
        h.openocd_run = openocd_->run();
        return h;
    }

    SamplerStats run(SampleSink& sink, const SamplingPlan& plan, const std::atomic<bool>& stop) override
    {
        try {
            SamplerStats stats = sampler_->run(sink, plan, stop);
            if (stats.link_lost)
                stats.end_reason = openocd_->explain(stats.end_reason);
            return stats;
        } catch (...) {
            openocd_->keep_log();
            throw;
        }
    }

private:
    std::unique_ptr<StartedOpenocd> openocd_;
    std::unique_ptr<SampleSource> sampler_;
};

} // namespace

std::vector<std::string> usb_probe_holders(OpenocdProbe::Kind probe, const std::string& sys_root,
                                           const std::string& proc_root)
{
    std::vector<std::string> nodes;
    std::error_code error;
    for (const fs::directory_entry& device : fs::directory_iterator(fs::path(sys_root) / "bus/usb/devices", error)) {
        if (!is_probe(device.path(), probe))
            continue;
        nodes.push_back(transport::usb_device_node(unsigned(std::atoi(attribute(device.path() / "busnum").c_str())),
                                                   unsigned(std::atoi(attribute(device.path() / "devnum").c_str()))));
    }
    return transport::processes_holding(nodes, proc_root);
}

std::string OpenocdProbe::text() const
{
    switch (kind) {
    case Kind::stlink:
        return "stlink";
    case Kind::cmsis_dap:
        return "cmsis-dap";
    case Kind::jlink:
        return "jlink";
    case Kind::stlink_server:
        return "stlink-server:127.0.0.1:" + std::to_string(server_port);
    }
    return "?";
}

const std::vector<ChipFacts>& known_chips()
{
    return chips;
}

const ChipFacts* chip_facts(std::string_view script)
{
    for (const ChipFacts& c : chips)
        if (c.script == script)
            return &c;
    return nullptr;
}

std::string OpenocdLaunch::default_program()
{
    const char* program = std::getenv("MCUPROF_OPENOCD");
    return program != nullptr && *program != '\0' ? program : "openocd";
}

std::vector<std::string> openocd_script_folders(const std::string& program)
{
    std::vector<std::string> folders;
    std::error_code error;
    if (const char* env = std::getenv("OPENOCD_SCRIPTS"); env != nullptr && *env != '\0') {
        std::istringstream list(env);
        for (std::string folder; std::getline(list, folder, ':');)
            if (!folder.empty() && fs::is_directory(folder, error))
                folders.push_back(folder);
    }
    // The program as PATH finds it, then its prefix's share/openocd/scripts (Debian's /usr).
    fs::path binary;
    if (program.find('/') != std::string::npos) {
        binary = program;
    } else if (const char* path = std::getenv("PATH")) {
        std::istringstream dirs(path);
        for (std::string dir; std::getline(dirs, dir, ':');)
            if (!dir.empty() && ::access((fs::path(dir) / program).c_str(), X_OK) == 0) {
                binary = fs::path(dir) / program;
                break;
            }
    }
    if (!binary.empty()) {
        const fs::path real = fs::weakly_canonical(binary, error);
        const fs::path scripts = real.parent_path().parent_path() / "share" / "openocd" / "scripts";
        if (!error && fs::is_directory(scripts, error))
            folders.push_back(scripts.string());
    }
    return folders;
}

std::optional<std::string> missing_target_script(const OpenocdLaunch& launch)
{
    const std::vector<std::string> folders = openocd_script_folders(launch.program);
    if (folders.empty())
        return std::nullopt;
    std::vector<std::string> names;
    std::error_code error;
    for (const std::string& folder : folders) {
        if (fs::is_regular_file(fs::path(folder) / "target" / (launch.chip + ".cfg"), error))
            return std::nullopt;
        for (const fs::directory_entry& entry : fs::directory_iterator(fs::path(folder) / "target", error))
            if (entry.path().extension() == ".cfg")
                names.push_back(entry.path().stem().string());
    }
    std::sort(names.begin(), names.end());
    return "--chip " + launch.chip + ": OpenOCD has no target/" + launch.chip + ".cfg (looked in " +
           joined(folders, ", ") + "); nearest: " + joined(nearest(names, launch.chip, 5), ", ") +
           " (docs/boards.md lists the families and their scripts)";
}

std::vector<std::string> openocd_command(const OpenocdLaunch& launch, uint16_t tcl_port)
{
    std::vector<std::string> args{launch.program};
    auto command = [&](const std::string& c) {
        args.push_back("-c");
        args.push_back(c);
    };
    auto file = [&](const std::string& f) {
        args.push_back("-f");
        args.push_back(f);
    };
    // The ports first: the Tcl port mcuprof samples over, on loopback only; no GDB or telnet
    // port, which nobody was told of (a debugger beside mcuprof: run OpenOCD yourself, --openocd).
    command("bindto 127.0.0.1");
    command("tcl_port " + std::to_string(tcl_port));
    command("gdb_port disabled");
    command("telnet_port disabled");
    switch (launch.probe.kind) {
    case OpenocdProbe::Kind::stlink:   // hla_swd: the probe's own high-level commands
        file("interface/stlink.cfg");
        break;
    case OpenocdProbe::Kind::stlink_server:
        file("interface/stlink.cfg");
        command("hla_stlink_backend tcp " + std::to_string(launch.probe.server_port));
        break;
    // J-Link and CMSIS-DAP offer JTAG too (J-Link's first); Cortex-M boards wire SWD.
    case OpenocdProbe::Kind::cmsis_dap:
        file("interface/cmsis-dap.cfg");
        command("transport select swd");
        break;
    case OpenocdProbe::Kind::jlink:
        file("interface/jlink.cfg");
        command("transport select swd");
        break;
    }
    file("target/" + launch.chip + ".cfg");
    // Sampling attaches to running firmware and never resets it: no reset line is declared
    // (configs/openocd/stm32f4-sampling.cfg).
    command("reset_config none");
    command("init");
    return args;
}

std::string openocd_failure(const std::string& log_text, const OpenocdLaunch& launch)
{
    std::vector<std::string> said;
    std::istringstream lines(log_text);
    for (std::string line; std::getline(lines, line);) {
        while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
            line.pop_back();
        std::string text;
        if (line.rfind("Error: ", 0) == 0)
            text = line.substr(7);
        else if (line.rfind("Warn : UNEXPECTED", 0) == 0)
            text = line.substr(7);
        else if (line.rfind("cannot run ", 0) == 0)   // ChildProcess: the program is not there
            text = line;
        if (!text.empty() && std::find(said.begin(), said.end(), text) == said.end())
            said.push_back(text);
    }
    if (said.size() > 4)
        said.resize(4);
    std::string message = said.empty() ? "it said nothing that names an error" : joined(said, "; ");
    auto has = [&](std::string_view words) { return log_text.find(words) != std::string::npos; };
    if (has("UNEXPECTED idcode") || has("expected 1 of 1"))
        message += " (the debug port answered with another part's ID: is --chip " + launch.chip +
                   " the chip on the board, and is the board powered?)";
    else if (has("cannot connect to stlink server"))
        message += " (nothing listens on " + launch.probe.text().substr(std::string("stlink-server:").size()) +
                   ": is ST's stlink-server, or `mcuprof vprobe --stlink-port`, running?)";
    else if (launch.probe.kind == OpenocdProbe::Kind::stlink && has("open failed"))
        message += " (no ST-Link could be opened on USB: not plugged in, no permission to it (Debian's openocd "
                   "package installs the udev rules: replug the probe after installing it), or held by another "
                   "program: another OpenOCD, STM32CubeIDE's ST-LINK GDB server or ST's stlink-server; "
                   "--probe stlink-server:PORT shares the probe through that server)";
    else if (has("init mode failed") || has("unable to connect to the target") || has("examination failed"))
        message += " (the probe found no core that answers: the board's power, the SWD wiring, or firmware that "
                   "disables the debug pins or sleeps deeply)";
    else if (has("cannot run "))
        message += " (install OpenOCD: Debian's openocd package, or name it in $MCUPROF_OPENOCD)";
    if (const std::vector<std::string> holders = usb_probe_holders(launch.probe.kind); !holders.empty())
        message += "; the probe is open in " + joined(holders, ", ");
    if (const ChipFacts* facts = chip_facts(launch.chip); facts != nullptr && !facts->note.empty())
        message += "; " + std::string(facts->family) + ": " + std::string(facts->note);
    return message;
}

StartedOpenocd::StartedOpenocd(const OpenocdLaunch& launch) : launch_(launch), log_(log_path_for_run())
{
    for (int attempt = 1;; ++attempt) {
        const uint16_t port = free_loopback_port("openocd tcl");
        const std::vector<std::string> command = openocd_command(launch, port);
        process_ = std::make_unique<ChildProcess>(command, log_);
        run_ = RunHeader::OpenocdRun{launch.chip, launch.probe.text(), command_line(command)};
        tcl_.port = port;
        // OpenOCD opens its Tcl port once `init` has examined the target; with a real probe that
        // can take seconds (a slow SWD clock, a flash probe), on a loaded machine longer still.
        const Clock::time_point deadline = Clock::now() + std::chrono::seconds(60);
        while (process_->running()) {
            try {
                transport::TcpConnection(tcl_, std::chrono::seconds(1), "openocd tcl");
                return;   // listening (the connection closes again at once)
            } catch (const transport::Error&) {
            }
            if (Clock::now() >= deadline) {
                keep_log();
                throw Error(launch.program, "--chip " + launch.chip,
                            "OpenOCD did not open its Tcl port within 60 s; its log: " + log_);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        const std::string said = read_text(log_);
        if (said.find("couldn't bind tcl to socket") != std::string::npos && attempt < 3)
            continue;   // the port was taken between free_loopback_port and OpenOCD's bind
        keep_log();
        throw Error(launch.program, "--chip " + launch.chip + " --probe " + launch.probe.text(),
                    "OpenOCD " + process_->how_it_ended() + ": " + openocd_failure(said, launch) + "; its log: " + log_);
    }
}

StartedOpenocd::~StartedOpenocd()
{
    process_->stop(std::chrono::seconds(5));
    if (!keep_log_) {
        std::error_code ignored;
        fs::remove(log_, ignored);
    }
}

std::string StartedOpenocd::explain(const std::string& problem)
{
    keep_log();
    const std::string ended = process_->running() ? "" : " (OpenOCD " + process_->how_it_ended() + ")";
    return problem + ended + "; OpenOCD: " + openocd_failure(read_text(log_), launch_) + "; its log: " + log_;
}

std::unique_ptr<SampleSource> start_openocd_for_sampling(
    const OpenocdLaunch& launch,
    const std::function<std::unique_ptr<SampleSource>(const transport::Endpoint& tcl)>& connect)
{
    auto openocd = std::make_unique<StartedOpenocd>(launch);
    try {
        std::unique_ptr<SampleSource> sampler = connect(openocd->tcl());
        return std::make_unique<OpenocdRunSource>(std::move(openocd), std::move(sampler));
    } catch (const transport::Error& e) {
        // Up, but the target is not usable (not examined, neither running nor halted).
        throw Error(launch.program, "--chip " + launch.chip, openocd->explain(e.what()));
    }
}

} // namespace mcuprof::sources
