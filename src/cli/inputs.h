#pragma once
// Turns a recorded input of any kind into samples: the one place that knows which reader
// each kind of file needs.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "mcuprof/core/samples.h"
#include "mcuprof/sources/recording.h"

namespace mcuprof::cli {

struct InputSelection {
    std::optional<size_t> chunk;   // on-chip dumps: the K-th dump
    std::optional<size_t> first;   // the first N samples
    bool swo_sync = false;         // SWO: decode from the first synchronization packet
    std::optional<std::chrono::nanoseconds> swo_duration;   // SWO streams: stop reading after this long
    const std::atomic<bool>* stop = nullptr;                // SWO streams: set to end the capture
    sources::RecordedFirmware* firmware = nullptr;          // recordings: set to the firmware they sampled
};

// Finds the kind from the content; throws sources::Error for an unknown one and
// UsageError for a selection that does not apply to it.
core::SampleSet load_samples(const std::string& input, const InputSelection& selection);

} // namespace mcuprof::cli
