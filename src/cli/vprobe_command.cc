// mcuprof vprobe: a virtual JTAG probe for OpenOCD (its remote_bitbang driver) in front
// of a GDB remote server (QEMU's gdbstub). See docs/vprobe.md.
#include <chrono>
#include <cstdio>

#include <boost/program_options.hpp>

#include "mcuprof/transport/rsp_client.h"
#include "mcuprof/vprobe/error.h"
#include "mcuprof/vprobe/rsp_target.h"
#include "mcuprof/vprobe/virtual_probe.h"
#include "options.h"

namespace po = boost::program_options;

namespace mcuprof::cli {

int vprobe_command(const Arguments& args)
{
    std::string gdb;
    std::string listen = "127.0.0.1";
    int port = -1;
    bool no_pcsr = false;
    po::options_description description("Options");
    description.add_options()
        ("gdb", po::value(&gdb)->value_name("HOST:PORT"), "the target: a GDB remote server (QEMU -gdb tcp::PORT)")
        ("port", po::value(&port)->value_name("N"), "serve OpenOCD's remote_bitbang on this TCP port (0: a free "
                                                     "one, printed)")
        ("listen", po::value(&listen)->value_name("ADDRESS"), "the address to listen on (default 127.0.0.1)")
        ("no-pcsr", po::bool_switch(&no_pcsr), "model a core without DWT_PCSR (reads 0, as on a Cortex-M0/M0+)");
    const std::string usage =
        "usage: mcuprof vprobe --gdb HOST:PORT --port N\n\n"
        "A virtual JTAG probe: serves OpenOCD's remote_bitbang protocol and simulates, bit by bit,\n"
        "the JTAG TAP, ARM JTAG-DP, MEM-AP and Cortex-M debug registers of the core behind the GDB\n"
        "server, so the real OpenOCD debugs and profiles it as a board on a probe:\n"
        "    openocd -f configs/openocd/qemu-vprobe.cfg -c \"remote_bitbang port N\" -c init\n"
        "It ends when OpenOCD quits or disconnects, or on Ctrl-C; the target is left running.\n"
        "SIGUSR1 prints its counters (JTAG clocks, DP/AP scans, ...) and goes on.";
    std::string unused;
    if (!parse_command(args, usage, description, unused))
        return 0;
    if (!unused.empty())
        throw UsageError("vprobe takes no positional argument ('" + unused + "')");
    if (gdb.empty())
        throw UsageError("--gdb HOST:PORT is required");
    if (port < 0 || port > 65535)
        throw UsageError(port == -1 ? "--port N is required" : "--port takes 0 to 65535");
    const transport::Endpoint endpoint = transport::Endpoint::parse(gdb, "--gdb");

    transport::RspClient rsp(endpoint, transport::RspClient::Options{});
    rsp.handshake();   // connecting stops the target
    vprobe::RspTarget target(rsp, true);
    // A board on a probe runs until the debugger halts it: so does the target here (also
    // one started halted, QEMU -S). C_DEBUGEN is 0 until OpenOCD sets it.
    target.resume();

    vprobe::CortexMDebug::Options cortex;
    cortex.pcsr = !no_pcsr;
    vprobe::VirtualProbe probe(target, cortex);
    vprobe::RemoteBitbangServer server(probe, listen, static_cast<uint16_t>(port));
    std::fprintf(stderr, "mcuprof vprobe: remote_bitbang on %s:%u, target %s\n", listen.c_str(), server.port(),
                 rsp.peer().c_str());
    server.on_idle = [&target] { target.idle(); };
    target.on_gone = [](const std::string& reason) {
        std::fprintf(stderr, "mcuprof vprobe: %s; its core answers nothing now (OpenOCD sees a dead board)\n",
                     reason.c_str());
    };
    server.on_connected = [](const std::string& who) {
        std::fprintf(stderr, "mcuprof vprobe: OpenOCD connected from %s\n", who.c_str());
    };

    const auto started = std::chrono::steady_clock::now();
    // One line of what the probe did so far, at the end and on SIGUSR1 (for benchmarks).
    auto print_counters = [&](const char* when, const char* state) {
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        const auto& stats = target.stats();
        std::fprintf(stderr,
                     "mcuprof vprobe: %s after %.1f s; %llu JTAG clocks, %llu DP/AP scans, %llu MEM-AP transfers, "
                     "%llu register transfers, %llu PCSR samples, %llu GDB memory requests (%llu cache hits), "
                     "%llu halts for accesses; %s\n",
                     when, seconds, static_cast<unsigned long long>(probe.tap().rising_edges()),
                     static_cast<unsigned long long>(probe.dp().scans()),
                     static_cast<unsigned long long>(probe.ap().transfers()),
                     static_cast<unsigned long long>(probe.cortex().register_transfers()),
                     static_cast<unsigned long long>(probe.cortex().pc_samples()),
                     static_cast<unsigned long long>(stats.memory_requests),
                     static_cast<unsigned long long>(stats.cache_hits),
                     static_cast<unsigned long long>(stats.access_halts),
                     target.gone_reason().empty() ? state : "the target is gone");
    };
    server.on_report = [&] { print_counters("counters", "session going on"); };
    vprobe::RemoteBitbangServer::End end;
    try {
        end = server.serve(true);
    } catch (const mcuprof::Error&) {
        try {
            target.detach();   // leave the target running if it is still there
        } catch (const mcuprof::Error&) {
        }
        throw;
    }
    target.detach();

    const char* why = end == vprobe::RemoteBitbangServer::End::quit           ? "OpenOCD quit"
                      : end == vprobe::RemoteBitbangServer::End::disconnected ? "OpenOCD disconnected"
                                                                               : "stopped";
    print_counters(why, "target detached, running");
    if (!target.gone_reason().empty())
        throw vprobe::Error(rsp.peer(), "", target.gone_reason() + " during the session");
    return 0;
}

} // namespace mcuprof::cli
