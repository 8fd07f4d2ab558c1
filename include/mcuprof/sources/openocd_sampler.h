#pragma once
// Sampling through OpenOCD's Tcl RPC port (docs/live.md, "Over OpenOCD's Tcl port").
//   halt: one round trip per sample halts the current target, reads pc, lr, sp and xPSR
//         (get_reg) and resumes it, at random intervals like the RSP sampler.
//   pcsr: DEMCR.TRCENA is set once, then DWT_PCSR is read K times per round trip by a loop
//         inside OpenOCD's Tcl while the core runs; the loop cannot randomize, so a random
//         host-side wait separates the batches. 0xFFFFFFFF (core halted) is dropped and
//         counted; a PCSR that reads 0 (absent) falls back to halt mode with an event.
// The target is left running whatever happens (signal, error, link loss when possible).
#include <memory>
#include <string>
#include <vector>

#include "mcuprof/sources/live.h"
#include "mcuprof/transport/tcl_client.h"
#include "mcuprof/transport/tcp_connection.h"

namespace mcuprof::sources {

enum class OpenocdMode { halt, pcsr };

struct OpenocdSamplerOptions {
    transport::Endpoint tcl;
    OpenocdMode mode = OpenocdMode::halt;
    IntervalGenerator::Shape shape = IntervalGenerator::Shape::exponential;
    double interval = 1e-3;     // mean seconds between samples (halt) or between batches (pcsr)
    double jitter = 0.5;
    uint64_t seed = 0;          // 0: from the system's random source
    unsigned batch = 16;        // pcsr: DWT_PCSR reads per round trip
    // pcsr: when set, DWT_PCSR is read by OpenOCD's `profile` in chunks of 1024, its
    // histogram written here (PcsrProfileReader) instead of `read_memory` batches.
    std::string pcsr_profile_gmon;
    transport::Duration timeout = std::chrono::seconds(10);
};

class OpenocdSampler : public SampleSource {
public:
    // Connects and finds the current target; throws transport::Error.
    explicit OpenocdSampler(const OpenocdSamplerOptions& options);
    ~OpenocdSampler() override;

    nlohmann::json describe() const override;
    SamplerStats run(SampleSink& sink, const SamplingPlan& plan, const std::atomic<bool>& stop) override;

    // OpenOCD's answers, parsed (public for the fuzz target); both throw transport::Error
    // (protocol) naming `peer`. read_memory's: 32-bit words, decimal or 0x hex, by spaces;
    static std::vector<uint32_t> parse_words(const std::string& text, const std::string& peer,
                                             const std::string& what);
    // get_reg's: "pc 0x0800033e lr 0x080003bd sp 0x2001ffd8 xPSR 0x01000000".
    static LiveSample parse_registers(const std::string& text, const std::string& peer);

private:
    bool halted();
    // Resumes the target if it is halted, over a new connection when the link was lost.
    void leave_running(SampleSink& sink, bool link_lost);

    OpenocdSamplerOptions options_;
    uint64_t seed_;
    std::unique_ptr<transport::TclClient> tcl_;
    std::string target_;
    std::string target_type_;
    size_t target_count_ = 0;
    std::string initial_state_;
};

} // namespace mcuprof::sources
