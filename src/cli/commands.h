#pragma once
// One function per command; main.cc dispatches and catches errors once.
#include <stdexcept>
#include <string>
#include <vector>

namespace mcuprof::cli {

// Wrong command-line words: exit code 1 with the command's usage hint.
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

using Arguments = std::vector<std::string>;

// record: the link to the target's server dropped during the recording; the samples so far
// are kept and their profile printed (0 ok, 1 usage, 2 error are in main.cc).
constexpr int exit_link_lost = 3;
constexpr int exit_runtime_error = 2;   // bad input, or the server's error that ended a recording
// diff --fail-above: a function's share grew beyond the gate (docs/ci.md).
constexpr int exit_gate_failed = 4;

int report_command(const Arguments& args);
int truth_command(const Arguments& args);
int record_command(const Arguments& args);
int top_command(const Arguments& args);
int diff_command(const Arguments& args);
int vprobe_command(const Arguments& args);
int swo_command(const Arguments& args);

} // namespace mcuprof::cli
