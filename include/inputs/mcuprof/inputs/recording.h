#pragma once
// The samples file a live recording writes as it goes, and `mcuprof report` reads
// (format in docs/formats.md). Append-only: a header, then self-checking records. A
// recording cut short by a crash or a power loss keeps every whole record; a torn last
// record is dropped and said so.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcuprof/profile/samples.h"
#include "mcuprof/image/image_set.h"
#include "mcuprof/inputs/run_header.h"
#include "mcuprof/inputs/text_file.h"

namespace mcuprof::sources {

inline constexpr uint32_t recording_version = 1;

struct LiveSample {
    uint64_t time_ns = 0;     // since the recording started
    uint32_t pc = 0;
    uint32_t lr = 0;
    uint32_t sp = 0;
    uint32_t xpsr = 0;        // IPSR, bits 8:0: 0 in thread mode, else the exception number
    uint32_t tag = 0;         // current task (control block address) when tagged
    bool tagged = false;
    // The first read of a burst of back-to-back reads (a DWT_PCSR batch, a `profile` chunk):
    // the samples up to the next such start are correlated (core::SampleSet::bursts).
    bool starts_burst = false;
    uint32_t core = 0;        // which core of a multi-core chip (0 on one core), 0 to 255
    // The halt found the core asleep (DHCSR.S_SLEEP, HaltState::asleep): "(sleep)" whatever its PC.
    bool found_asleep = false;
    // A core after core 0 at a halt whose link measured it: how long after core 0's its stop came
    // (HaltState::stop_after).
    std::optional<core::StopBounds> stop_after;
    std::optional<core::CallStack> stack;   // the callers, when the sampler unwound the stack
    std::optional<uint32_t> value;          // the watched variable's bits (--by var:NAME)
};

class RecordingWriter {
public:
    // Creates (truncates) the file and writes the header. Throws sources::Error.
    RecordingWriter(const std::string& path, const RunHeader& header);
    ~RecordingWriter();
    RecordingWriter(const RecordingWriter&) = delete;
    RecordingWriter& operator=(const RecordingWriter&) = delete;

    void sample(const LiveSample& s);
    // Something that happened (a fallback, a resume, the end): {"kind": ..., "message": ...}.
    void notice(const std::string& kind, const std::string& message);
    // A task met for the first time: {"kind": "task", "address": "0x...", "name": ...}.
    void task(uint32_t control_block, const std::string& name);
    // An event record as given (the two above are its forms; tests write others).
    void event(const nlohmann::json& e);
    // The sampler's own figures, once, at the end.
    void summary(const core::SamplerFigures& figures);
    // Hands what was written to the kernel: a crash of mcuprof after this loses nothing.
    void flush();
    const std::string& path() const { return path_; }

private:
    void record(uint16_t type, const std::string& payload);
    std::string path_;
    std::FILE* file_ = nullptr;
};

struct Recording {
    std::string path;
    RunHeader header;
    std::vector<LiveSample> samples;
    std::vector<nlohmann::json> events;
    std::optional<core::SamplerFigures> summary;   // without the header's method and pacing
    std::string summary_problem;   // why a summary record was left out, when one was
    bool torn_tail = false;    // a last record cut short was dropped
};

// Throws sources::Error naming the file and the byte offset.
Recording read_recording(const std::string& path, const ReadProgress& progress = {});
Recording parse_recording(std::string_view bytes, const std::string& path, const ReadProgress& progress = {});
bool is_recording(std::string_view head);

core::SampleSet to_samples(const Recording& recording, std::optional<size_t> first);

// The firmware a recording sampled, as its header says: the ELF's absolute path and its
// identity. Recordings made before these were stored give an empty path and no identity.
struct RecordedFirmware {
    std::string path;
    std::optional<core::FirmwareIdentity> identity;
    std::vector<RecordedFirmware> more;   // the other images the target ran ("more_elves")
};
RecordedFirmware recorded_firmware(const RunHeader& header);
// The header's images (RunHeader::images): the set's images in order, each its
// path as given, absolute, and its identity. Throws core::Error for an image whose sections
// cannot be read.
std::vector<RunHeader::Image> firmware_fields(const core::ImageSet& images);

} // namespace mcuprof::sources
