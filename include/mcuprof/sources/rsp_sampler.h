#pragma once
// The halting sampler over the GDB remote protocol: interrupt, read PC, LR, SP and xPSR,
// resume, at random intervals. Works with any GDB server (QEMU's gdbstub, OpenOCD's GDB
// port, probe servers). On QEMU it can pace by instructions instead of wall-clock time:
// with record/replay, QMP's replay-break stops the guest at an exact instruction count,
// so the samples carry none of QEMU's own timing (docs/method.md).
#include <memory>
#include <optional>

#include "mcuprof/sources/live.h"
#include "mcuprof/sources/rtos_awareness.h"
#include "mcuprof/sources/stack_sampling.h"
#include "mcuprof/transport/rsp_client.h"
#include "mcuprof/transport/tcp_connection.h"

namespace mcuprof::transport {
class QmpClient;
}

namespace mcuprof::sources {

enum class Pacing {
    wall,     // intervals of wall-clock time, the stop by interrupt (any GDB server)
    icount,   // intervals of instructions, the stop by QEMU's replay_break (record/replay)
};

struct RspSamplerOptions {
    transport::Endpoint gdb;
    Pacing pacing = Pacing::wall;
    std::optional<transport::Endpoint> qmp;   // icount pacing: QMP for query-replay (else the GDB monitor)
    IntervalGenerator::Shape shape = IntervalGenerator::Shape::exponential;
    double interval = 1e-3;     // mean: seconds, or instructions when pacing by icount
    double jitter = 0.5;        // uniform shape only
    uint64_t seed = 0;          // 0: from the system's random source
    transport::Duration timeout = std::chrono::seconds(3);
    std::optional<StackSamplingOptions> stacks;   // unwind the call stack at every halt
    std::optional<TaskLayout> tasks;              // tag each sample with the running task
};

class RspHaltingSampler : public SampleSource {
public:
    // Connects and reads the target description; throws transport::Error.
    explicit RspHaltingSampler(const RspSamplerOptions& options);
    ~RspHaltingSampler() override;

    nlohmann::json describe() const override;
    SamplerStats run(SampleSink& sink, const SamplingPlan& plan, const std::atomic<bool>& stop) override;

private:
    uint64_t current_icount();
    // After a lost link: a new connection and a detach, which resumes the target.
    void resume_over_a_new_link(SampleSink& sink);

    RspSamplerOptions options_;
    uint64_t seed_;
    std::unique_ptr<transport::RspClient> gdb_;
    std::unique_ptr<transport::QmpClient> qmp_;
    transport::StopReply initial_stop_;
};

} // namespace mcuprof::sources
