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

int report_command(const Arguments& args);
int truth_command(const Arguments& args);
int record_command(const Arguments& args);
int top_command(const Arguments& args);
int diff_command(const Arguments& args);
int vprobe_command(const Arguments& args);
int swo_command(const Arguments& args);

} // namespace mcuprof::cli
