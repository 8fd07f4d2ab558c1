#pragma once
// The one way a command learns of Ctrl-C (SIGINT) and SIGTERM: a flag set by the signal
// handler, polled by the work that must end cleanly (a sampler leaves the target running and
// keeps its samples; an SWO capture reports what came).
#include <atomic>

namespace mcuprof::cli {

// While it lives, SIGINT and SIGTERM set `requested` instead of ending the process; the
// handlers found are restored after. Every further signal sets the flag again, so a sampler
// between a halt and its resume is never killed.
class StopOnSignal {
public:
    StopOnSignal();
    ~StopOnSignal();
    StopOnSignal(const StopOnSignal&) = delete;
    StopOnSignal& operator=(const StopOnSignal&) = delete;

    static std::atomic<bool> requested;
};

// For the rest of the process, SIGINT sets the same flag once; a second Ctrl-C kills (for a
// capture blocked on a pipe that never ends). Returns the flag.
const std::atomic<bool>* stop_on_interrupt();

} // namespace mcuprof::cli
