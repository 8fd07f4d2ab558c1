#pragma once
// Which reader a file needs, found from its content rather than its name.
#include <string>
#include <string_view>

namespace mcuprof::sources {

enum class InputKind { dump, truth_counts, recording, swo, gmon, unknown };

InputKind detect_input(std::string_view head);
// Reads the start of the file; throws sources::Error if it cannot be opened.
InputKind detect_input_file(const std::string& path);
std::string_view describe(InputKind kind);

} // namespace mcuprof::sources
