#pragma once
// Detects sampling in lockstep with a periodic program, from the samples alone.
//
// When the sampling period and the program's loop share a common divisor, the sampler
// visits only a few points of the loop and then goes round them again: the address
// sequence repeats with a short period, and whatever lies between those points is never
// seen (186 points of a 5022-instruction loop, say, repeating every 186 samples). Independent samples repeat only by chance: two samples `p` apart are equal
// with probability sum(q_a^2) over the address shares q_a. A lag at which nearly all
// samples match, far above that chance level, is lockstep.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace mcuprof::core {

struct LockstepFinding {
    size_t period = 0;            // samples after which the sequence repeats
    size_t distinct = 0;          // distinct addresses in the sequence
    size_t samples = 0;           // length of the sequence examined
    double match_fraction = 0;    // share of samples equal to the one `period` later
    double chance_fraction = 0;   // the same share expected of independent samples
};

// Looks at the last part of the sequence (after start-up transients), up to
// `window` samples; needs at least 64 samples and 3 full periods.
std::optional<LockstepFinding> detect_lockstep(std::span<const uint32_t> pcs, size_t window = 16384);

} // namespace mcuprof::core
