#pragma once
// The sink every live command writes its recording through (record, top): each sample,
// notice and task into the samples file as it comes, handed to the kernel at least every
// 100 ms and at every notice, so a crash of mcuprof loses at most the last 100 ms.
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "mcuprof/image/image_set.h"
#include "mcuprof/sampler/live.h"
#include "mcuprof/inputs/recording.h"

namespace mcuprof::sources {

class RecordingSink : public SampleSink {
public:
    // `flushed` (when given) is called after each timed flush, with the samples so far: a
    // moment to show progress.
    explicit RecordingSink(RecordingWriter& writer, std::function<void(uint64_t samples)> flushed = {});

    void sample(const LiveSample& s) override;
    void event(const std::string& kind, const std::string& message) override;
    void task(uint32_t control_block, const std::string& name) override;

private:
    RecordingWriter& writer_;
    std::function<void(uint64_t)> flushed_callback_;
    uint64_t samples_ = 0;
    std::chrono::steady_clock::time_point flushed_ = std::chrono::steady_clock::now();
};

// A recording's header: what the source says of itself, the firmware's images with their
// identities, and when it started.
RunHeader recording_header(const SampleSource& source, const core::ImageSet& images);

} // namespace mcuprof::sources
