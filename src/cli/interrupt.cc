#include "interrupt.h"

#include <csignal>

namespace mcuprof::cli {

std::atomic<bool> StopOnSignal::requested{false};

namespace {

extern "C" void on_stop_signal(int)
{
    StopOnSignal::requested.store(true);
}

struct sigaction previous_int, previous_term;

// SA_RESTART resumes an interrupted system call (as std::signal does): a sampler polls the
// flag between halts. Without it a blocked poll() or read() returns at once (EINTR), and a
// capture waiting on its input sees the flag.
void catch_signal(int signal, int flags, struct sigaction* previous)
{
    struct sigaction action = {};
    action.sa_handler = on_stop_signal;
    action.sa_flags = flags;
    sigemptyset(&action.sa_mask);
    sigaction(signal, &action, previous);
}

} // namespace

StopOnSignal::StopOnSignal()
{
    requested.store(false);
    catch_signal(SIGINT, SA_RESTART, &previous_int);
    catch_signal(SIGTERM, SA_RESTART, &previous_term);
}

StopOnSignal::~StopOnSignal()
{
    sigaction(SIGINT, &previous_int, nullptr);
    sigaction(SIGTERM, &previous_term, nullptr);
}

const std::atomic<bool>* stop_on_interrupt()
{
    catch_signal(SIGINT, SA_RESETHAND, nullptr);
    return &StopOnSignal::requested;
}

} // namespace mcuprof::cli
