#pragma once
// The kinds of recorded input, one row each: what a file is (found from its content rather
// than its name), how it is read, and which selections apply to it. A new input kind is its
// reader's file and one row of input_kinds().
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "mcuprof/profile/samples.h"
#include "mcuprof/inputs/recording.h"
#include "mcuprof/inputs/swo_reader.h"
#include "mcuprof/inputs/text_file.h"

namespace mcuprof::sources {

enum class InputKind { dump, truth_counts, recording, swo, gmon, unknown };

// What a reader is asked for beyond the input itself.
struct InputSelection {
    std::optional<size_t> chunk;        // on-chip dumps: the K-th dump
    std::optional<size_t> first;        // the first N samples
    SwoOptions swo;                     // SWO captures: sync, duration, stop (max_samples is `first`)
    RecordedFirmware* firmware = nullptr;   // recordings: set to the firmware they sampled
    ReadProgress progress;              // large files: how far the reading got
};

// The SWO reader's options of a selection: its own, with `first` as the sample limit.
SwoOptions swo_options(const InputSelection& selection);

// An input as its reader takes it: a file by its path, or bytes already read (standard
// input), or a stream still being read (an SWO stream on standard input).
struct InputBytes {
    std::string name;                       // the path, or "standard input"
    const std::string* bytes = nullptr;     // the whole input, when it was read already
    ByteSource* stream = nullptr;           // an SWO stream
};

// The selections beyond --first a kind accepts.
enum InputOption : unsigned { accepts_chunk = 1u << 0, accepts_swo = 1u << 1, accepts_first = 1u << 2 };

struct InputKindRow {
    InputKind kind;
    std::string_view description;   // "on-chip sampler dump"
    std::string_view expected;      // what the unknown-input error says to expect
    std::string_view first_refused; // why --first does not apply, when it does not
    bool (*sniff)(std::string_view head);
    core::SampleSet (*read)(const InputBytes& input, const InputSelection& selection);
    unsigned accepts;               // InputOption bits
};

// In the order their sniffs are tried.
std::span<const InputKindRow> input_kinds();
// The row of a kind; nullptr for unknown.
const InputKindRow* input_kind_row(InputKind kind);

InputKind detect_input(std::string_view head);
// Reads the start of the file; throws sources::Error if it cannot be opened.
InputKind detect_input_file(const std::string& path);
std::string_view describe(InputKind kind);
// "not a recognised input: expected ...", from the rows.
std::string unrecognised_input_message();

} // namespace mcuprof::sources
