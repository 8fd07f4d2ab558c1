// mcuprof vprobe: a virtual probe for OpenOCD (its remote_bitbang driver over JTAG, or its
// st-link driver over SWD through the stlink-server protocol) in front of a GDB remote
// server (QEMU's gdbstub). See docs/vprobe.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include <sys/prctl.h>

#include <boost/program_options.hpp>

#include "mcuprof/link/rsp_client.h"
#include "mcuprof/vprobe/chip.h"
#include "mcuprof/vprobe/error.h"
#include "mcuprof/vprobe/pc_file.h"
#include "mcuprof/vprobe/rsp_target.h"
#include "mcuprof/vprobe/stlink_server.h"
#include "mcuprof/vprobe/virtual_probe.h"
#include "options.h"

namespace po = boost::program_options;

namespace mcuprof::cli {

namespace {

const char* const vprobe_usage =
    "usage: mcuprof vprobe --gdb HOST:PORT|DEVICE (--port N | --stlink-port N)\n"
    "                      [--chip NAME] [--latency DURATION] [--pc-file PATH]\n"
    "                      [--no-dwt] [--no-halt]\n\n"
    "A virtual probe: simulates the debug port, MEM-AP and Cortex-M debug registers\n"
    "of the core behind the GDB server, so the real OpenOCD debugs and profiles it as\n"
    "a board on a probe.\n"
    "--port serves OpenOCD's remote_bitbang protocol (JTAG, simulated bit by bit):\n"
    "    openocd -f configs/openocd/qemu-vprobe.cfg -c \"remote_bitbang port N\" \\\n"
    "        -c init\n"
    "--stlink-port serves ST's stlink-server protocol (an STLINK-V3 on SWD), for\n"
    "OpenOCD's hla_swd transport (the default):\n"
    "    openocd -f configs/openocd/qemu-stlink.cfg -c \"hla_stlink_backend tcp N\" \\\n"
    "        -c init\n"
    "or its dapdirect_swd transport (OpenOCD drives the DAP; profile reads fastest):\n"
    "    openocd -c \"set STLINK_TRANSPORT dapdirect_swd\" \\\n"
    "        -f configs/openocd/qemu-stlink.cfg -c \"st-link backend tcp N\" -c init\n"
    "--chip NAME shows the debugger the part QEMU's machine models, as OpenOCD's\n"
    "target/NAME.cfg expects it (its DP's IDs, the ID registers its scripts read):\n"
    "    openocd -f interface/stlink.cfg -c \"hla_stlink_backend tcp N\" \\\n"
    "        -f target/nrf51.cfg -c init\n"
    "The st-link server takes several clients at once (two OpenOCDs, OpenOCD and a\n"
    "sampler), as ST's stlink-server does.\n"
    "It ends when OpenOCD (the last client) quits or disconnects, or on Ctrl-C;\n"
    "the target is left running. SIGUSR1 prints its counters (DP/AP accesses, probe\n"
    "commands, ...) and goes on.";

struct VprobeOptions {
    std::string gdb;
    unsigned baud = 0;
    std::string listen = "127.0.0.1";
    bool stlink = false;
    uint16_t port = 0;
    std::chrono::nanoseconds latency{0};
    bool no_dwt = false;
    bool no_halt = false;
    std::string pc_file;
    const vprobe::Chip* chip = &vprobe::generic_chip();
};

// Parses and checks every option before the GDB server is contacted. False when --help
// was shown.
bool parse_vprobe_options(const Arguments& args, VprobeOptions& o)
{
    CommandLine line("vprobe", vprobe_usage);
    int port = -1;
    int stlink_port = -1;
    std::string latency = "0";
    std::string chip;
    const std::string chip_help = "show the part QEMU's machine models as OpenOCD's target/NAME.cfg expects it: its "
                                  "DP's IDCODE/DPIDR and the ID registers its scripts read (" +
                                  vprobe::chip_names() + "; default: a generic Cortex-M3/M4 DP)";
    line.options()
        ("gdb", po::value(&o.gdb)->value_name("HOST:PORT|DEVICE"), "the target: a GDB remote server (QEMU -gdb tcp::PORT), "
                                                                   "or a serial device or pty")
        ("baud", po::value(&o.baud)->value_name("N"), "--gdb DEVICE: the serial line's speed (default 115200)")
        ("port", po::value(&port)->value_name("N"), "serve OpenOCD's remote_bitbang (JTAG) on this TCP port (0: a "
                                                     "free one, printed)")
        ("stlink-port", po::value(&stlink_port)->value_name("N"),
         "serve the stlink-server protocol (an STLINK-V3 on SWD) on this TCP port instead (0: a free one, printed)")
        ("chip", po::value(&chip)->value_name("NAME"), chip_help.c_str())
        ("listen", po::value(&o.listen)->value_name("ADDRESS"), "the address to listen on (default 127.0.0.1)")
        ("latency", po::value(&latency)->value_name("DURATION"),
         "answer each request this long after it arrived, as a USB probe does (1ms: ST-LINK/V2 at full speed, "
         "125us: STLINK-V3 at high speed; default 0)")
        ("no-dwt", po::bool_switch(&o.no_dwt), "model a part built without the DWT (its registers, DWT_CTRL and "
                                               "DWT_PCSR too, read 0), as a Cortex-M0, M0+ or M23 may be (without "
                                               "it every core has DWT_PCSR)")
        ("no-halt", po::bool_switch(&o.no_halt), "model a part that does not allow halting debug (DHCSR.C_DEBUGEN "
                                                 "reads 0, a halt request is ignored; memory still answers)")
        ("pc-file", po::value(&o.pc_file)->value_name("PATH"),
         "answer DWT_PCSR from the truth plugin's PC file (QEMU -plugin libtruth.so,pcfile=PATH) without halting "
         "the target, as silicon does; without it each read is a brief halt of QEMU");
    if (!line.parse(args))
        return false;
    line.require("gdb", "the GDB server of the target");
    if (line.given("port") && line.given("stlink-port"))
        throw UsageError("--port and --stlink-port do not go together: one of --port N (remote_bitbang) or "
                         "--stlink-port N (st-link)");
    if (!line.given("port") && !line.given("stlink-port"))
        throw UsageError("one of --port N (remote_bitbang) or --stlink-port N (st-link) is required");
    o.stlink = line.given("stlink-port");
    if (const int chosen = o.stlink ? stlink_port : port; chosen < 0 || chosen > 65535)
        throw UsageError(std::string(o.stlink ? "--stlink-port" : "--port") + " takes 0 to 65535");
    else
        o.port = static_cast<uint16_t>(chosen);
    if (line.given("chip")) {
        o.chip = vprobe::find_chip(chip);
        if (o.chip == nullptr)
            throw UsageError("--chip takes one of " + vprobe::chip_names() + ", not '" + chip + "'");
        if (!o.stlink && !o.chip->jtag_idcode)
            throw UsageError("--chip " + chip + ": the " + std::string(o.chip->part) +
                             " has no JTAG port (SWD only), which --port serves; use --stlink-port");
    }
    o.latency = latency == "0" ? std::chrono::nanoseconds(0) : parse_duration(latency, "--latency");
    if (line.given("pc-file") && o.no_dwt)
        throw UsageError("--pc-file answers DWT_PCSR, which --no-dwt removes: give one of them");
    if (o.latency > std::chrono::milliseconds(100))
        throw UsageError("--latency is at most 100ms (OpenOCD's st-link driver gives up after 1 s)");
    transport::LinkAddress::parse(o.gdb, "--gdb", o.baud);
    return true;
}

// One line of what the probe did so far, at the end and on SIGUSR1 (for benchmarks).
void print_counters(vprobe::VirtualProbe& probe, vprobe::RspTarget& target,
                    vprobe::StlinkServer* stlink_server, std::chrono::steady_clock::time_point started,
                    const char* when, const char* state)
{
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const auto& stats = target.stats();
    uint64_t ap_transfers = 0, register_transfers = 0, pc_samples = 0;   // every core's
    for (unsigned core = 0; core < probe.cores(); ++core) {
        ap_transfers += probe.ap(core).transfers();
        register_transfers += probe.cortex(core).register_transfers();
        pc_samples += probe.cortex(core).pc_samples();
    }
    std::string front_end;
    if (stlink_server)
        front_end = std::to_string(stlink_server->probe().usb_commands()) + " USB commands, ";
    else
        front_end = std::to_string(probe.tap().rising_edges()) + " JTAG clocks, ";
    std::fprintf(stderr,
                 "mcuprof vprobe: %s after %.1f s; %s%llu DP/AP scans, %llu MEM-AP transfers, "
                 "%llu register transfers, %llu PCSR samples, %llu GDB memory requests (%llu cache hits), "
                 "%llu halts for accesses, %llu special-register stub runs (%llu steps); %s\n",
                 when, seconds, front_end.c_str(), static_cast<unsigned long long>(probe.dp().scans()),
                 static_cast<unsigned long long>(ap_transfers),
                 static_cast<unsigned long long>(register_transfers),
                 static_cast<unsigned long long>(pc_samples),
                 static_cast<unsigned long long>(stats.memory_requests),
                 static_cast<unsigned long long>(stats.cache_hits),
                 static_cast<unsigned long long>(stats.access_halts),
                 static_cast<unsigned long long>(stats.stub_runs), static_cast<unsigned long long>(stats.stub_steps),
                 target.gone_reason().empty() ? state : "the target is gone");
    if (!stats.halt_skews.empty()) {
        // The time between the first core's halt and each other core's, as their requests arrived.
        std::vector<double> skews = stats.halt_skews;
        std::sort(skews.begin(), skews.end());
        auto at = [&](double q) { return 1e6 * skews[std::min(skews.size() - 1, size_t(q * double(skews.size())))]; };
        std::fprintf(stderr,
                     "mcuprof vprobe: %zu halts of a core after another's: their halt requests %.0f us apart "
                     "(p50), %.0f us (p99); the machine was stopped from the first (all-stop)\n",
                     skews.size(), at(0.5), at(0.99));
    }
    if (stlink_server) {   // which OpenOCD code sent them (docs/live.md, "What a `profile` call costs")
        std::fprintf(stderr, "mcuprof vprobe: USB commands by kind: %s\n",
                     stlink_server->probe().usb_command_kinds_text().c_str());
        // Each client's own share of the one probe (several may be connected at once).
        std::fprintf(stderr, "mcuprof vprobe: USB commands by connection: %s\n",
                     stlink_server->probe().usb_commands_by_connection_text().c_str());
    }
}

// --pc-file: the truth plugin's PC file, one slot per core, as DWT_PCSR's source; none without it.
std::unique_ptr<vprobe::PcFile> open_pc_file(const VprobeOptions& o, unsigned cores,
                                             vprobe::CortexMDebug::Options& cortex)
{
    if (o.pc_file.empty())
        return nullptr;
    std::unique_ptr<vprobe::PcFile> pc_file;
    try {
        pc_file = std::make_unique<vprobe::PcFile>(o.pc_file);
    } catch (const std::runtime_error& e) {
        throw UsageError(e.what());
    }
    if (pc_file->cores() < cores)
        throw UsageError("--pc-file " + o.pc_file + " has " + std::to_string(pc_file->cores()) +
                         " vCPU slots, the target " + std::to_string(cores) + " cores");
    cortex.running_pc = [file = pc_file.get()](unsigned core) { return file->pc(core); };
    return pc_file;
}

// The first line on stderr: where the probe listens (the rigs read the port from it), the
// target, each core's AP, the PCSR source and the chip.
void print_listening(const VprobeOptions& o, unsigned port, const std::string& peer, unsigned cores)
{
    std::string aps;
    if (cores > 1)
        for (unsigned core = 0; core < cores; ++core)
            aps += (core ? ", " : "; ") + std::string("core ") + std::to_string(core) + " on AP" + std::to_string(core);
    const std::string pcsr = o.pc_file.empty() ? std::string() : "; DWT_PCSR from " + o.pc_file;
    const std::string chip =
        o.chip->name.empty() ? std::string() : "; chip " + std::string(o.chip->name) + " (" + std::string(o.chip->part) + ")";
    std::fprintf(stderr, "mcuprof vprobe: %s on %s:%u, target %s%s%s%s\n", o.stlink ? "st-link" : "remote_bitbang",
                 o.listen.c_str(), port, peer.c_str(), aps.c_str(), pcsr.c_str(), chip.c_str());
}

} // namespace

int vprobe_command(const Arguments& args)
{
    VprobeOptions o;
    if (!parse_vprobe_options(args, o))
        return 0;
    if (o.latency.count() > 0)
        ::prctl(PR_SET_TIMERSLACK, 1UL);   // the kernel's default 50 us slack would blur 125 us
    // QEMU's replies wait on its host: a loaded host can stop its threads for seconds (a
    // stall a core on a probe never has), and a halt that timed out here would be a fault of
    // the rig, not of the target. So the gdbstub gets 15 s, not RspClient's default 3 s
    // (docs/live.md, "The hla_swd PCSR residue"); a QEMU that exits closes the socket at once.
    transport::RspClient rsp(transport::LinkAddress::parse(o.gdb, "--gdb", o.baud),
                             transport::RspClient::Options{std::chrono::seconds(15)});
    rsp.handshake();   // connecting stops the target
    vprobe::RspTarget target(rsp, true);
    // Every core of a multi-core machine (QEMU: a GDB process per CPU cluster), each behind an
    // access port of its own.
    const unsigned cores = target.attach_cores(true);
    // A board on a probe runs until the debugger halts it: so does the target here (also
    // one started halted, QEMU -S). C_DEBUGEN is 0 until OpenOCD sets it.
    target.resume();

    vprobe::CortexMDebug::Options cortex;
    cortex.dwt = !o.no_dwt;
    cortex.halting = !o.no_halt;
    std::unique_ptr<vprobe::PcFile> pc_file = open_pc_file(o, cores, cortex);
    std::vector<vprobe::DebugTarget*> core_targets;
    for (unsigned core = 0; core < cores; ++core)
        core_targets.push_back(&target.core(core));
    vprobe::VirtualProbe probe(core_targets, cortex, *o.chip);
    std::unique_ptr<vprobe::RemoteBitbangServer> bitbang;
    std::unique_ptr<vprobe::StlinkServer> stlink_server;
    vprobe::ProbeServer* server = nullptr;
    if (o.stlink) {
        stlink_server = std::make_unique<vprobe::StlinkServer>(probe, o.listen, o.port);
        server = stlink_server.get();
    } else {
        bitbang = std::make_unique<vprobe::RemoteBitbangServer>(probe, o.listen, o.port);
        server = bitbang.get();
    }
    server->reply_latency = o.latency;
    print_listening(o, server->port(), rsp.peer(), cores);
    server->on_idle = [&target] { target.idle(); };
    target.on_gone = [](const std::string& reason) {
        std::fprintf(stderr, "mcuprof vprobe: %s; its core answers nothing now (OpenOCD sees a dead board)\n",
                     reason.c_str());
    };
    server->on_connected = [](const std::string& who) {
        std::fprintf(stderr, "mcuprof vprobe: OpenOCD connected from %s\n", who.c_str());
    };
    if (stlink_server)   // its clients come and go; the vprobe ends with the last one
        server->on_disconnected = [](const std::string& who) {
            std::fprintf(stderr, "mcuprof vprobe: the client from %s has gone\n", who.c_str());
        };
    const auto started = std::chrono::steady_clock::now();
    server->on_report = [&] {
        print_counters(probe, target, stlink_server.get(), started, "counters", "session going on");
    };
    vprobe::ProbeServer::End end;
    try {
        end = stlink_server ? stlink_server->serve(true) : bitbang->serve(true);
    } catch (const mcuprof::Error&) {
        try {
            target.detach();   // leave the target running if it is still there
        } catch (const mcuprof::Error&) {
        }
        throw;
    }
    target.detach();
    const char* why = end == vprobe::ProbeServer::End::quit           ? "OpenOCD quit"
                      : end == vprobe::ProbeServer::End::disconnected ? "OpenOCD disconnected"
                                                                       : "stopped";
    print_counters(probe, target, stlink_server.get(), started, why, "target detached, running");
    if (!target.gone_reason().empty())
        throw vprobe::Error(rsp.peer(), "", target.gone_reason() + " during the session");
    return 0;
}

} // namespace mcuprof::cli
