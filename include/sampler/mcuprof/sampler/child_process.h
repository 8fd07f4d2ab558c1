#pragma once
// A program mcuprof starts and owns for one run: QEMU (--qemu) or OpenOCD (--chip). It runs in
// its own process group, so a terminal's Ctrl-C reaches mcuprof alone, which then ends it; it
// is killed with mcuprof (PR_SET_PDEATHSIG, proc(5)'s prctl); its standard error goes to a
// log file the errors quote; the destructor stops and reaps it: nothing is left running on
// any path.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mcuprof::sources {

class ChildProcess {
public:
    // Starts args[0] (looked up in PATH) with stdin and stdout on /dev/null and stderr into
    // `log_path` (created or emptied). Throws sources::Error when it cannot be forked; a
    // program that cannot be run exits with status 127, saying why in the log.
    ChildProcess(const std::vector<std::string>& args, const std::string& log_path);
    virtual ~ChildProcess();
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    // Whether it still runs (reaps it when it ended).
    bool running();
    // Waits for it to end by itself, up to `timeout`; false when it still runs.
    bool wait(std::chrono::milliseconds timeout);
    // SIGTERM (the program shuts down cleanly: QEMU's plugin writes its counts, OpenOCD
    // closes the probe), SIGKILL after `grace` (at once for 0); reaped either way.
    void stop(std::chrono::milliseconds grace = std::chrono::seconds(5));
    // "exited with status 1" / "was killed by signal 9" once it ended, else "still runs".
    std::string how_it_ended() const;
    // Whether it ended with exit status 0.
    bool exited_cleanly() const;
    int pid() const { return pid_; }
    const std::string& log_path() const { return log_path_; }

private:
    int pid_ = -1;
    std::optional<int> status_;
    std::string log_path_;
};

// The command line as a user would type it (the recording's header names QEMU's and OpenOCD's).
std::string command_line(const std::vector<std::string>& args);

// A TCP port on 127.0.0.1 that was free a moment ago (bind port 0, read it, close). Another
// process may take it before the child binds it; the child then fails saying so, and the
// caller tries again with a new port. `what` names the port in the error.
uint16_t free_loopback_port(const std::string& what);

} // namespace mcuprof::sources
