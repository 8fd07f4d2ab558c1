#pragma once
// A sampled PC's callers, as the unwinder (unwinder.h) finds them, and why a chain ended: what
// the unwinder hands up, and what every source of stacks (a recording, a live halt) carries.
#include <cstdint>
#include <string_view>
#include <vector>

namespace mcuprof::core {

// Why an unwinder ended a chain: at its outermost frame (root) or before it, truncated.
// Recordings keep it with every stack (docs/formats.md, record type 4), so the numbers
// are stable: new reasons go at the end.
enum class UnwindStop : uint8_t {
    root, depth, unreadable, no_frame_info, bad_frame, psp_unknown,
    handler_only,    // a chain taken in an exception handler that never reached the exception return
    not_recorded,    // truncated, by a recording that predates the reasons
    null_return,     // a saved return address of 0 or 0xFFFFFFFF outside the reset handler
    secure_caller,   // complete: Non-secure code entered from the Secure state (FNC_RETURN)
    nonsecure_unknown,   // a return to the Non-secure state, whose stack pointers are unknown
    outside_image,       // the sampled PC lies outside the ELF's code (another image's)
};
constexpr uint32_t unwind_stop_count = 12;
// Whether a chain that ended so reached its outermost frame.
constexpr bool is_complete(UnwindStop stop) { return stop == UnwindStop::root || stop == UnwindStop::secure_caller; }
std::string_view describe(UnwindStop stop);

// The callers of one sampled PC, as an unwinder found them, innermost caller first (Thumb
// bit clear): for a call, its return address minus 2, an address inside the call
// instruction, so that lines and inlined frames are those of the call; across an exception
// frame, the interrupted instruction itself. `truncated`: the unwinder stopped before the outermost
// frame (depth limit, a corrupted stack, memory it could not read, an unknown frame), for
// the reason `stop` gives.
struct CallStack {
    std::vector<uint32_t> callers;
    bool truncated = false;
    UnwindStop stop = UnwindStop::root;
};

} // namespace mcuprof::core
