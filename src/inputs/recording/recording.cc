#include "mcuprof/inputs/recording.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <boost/crc.hpp>

#include "mcuprof/image/error.h"
#include "mcuprof/inputs/error.h"
#include "mcuprof/inputs/text_file.h"
#include "mcuprof/hex.h"

namespace mcuprof::sources {
namespace {

// "mcuprof" and the DOS end-of-file byte: `file` and `head` show it as text, and no
// text input starts this way.
constexpr char magic[8] = {'m', 'c', 'u', 'p', 'r', 'o', 'f', '\x1a'};
constexpr size_t record_head = 8;   // u16 type, u16 length, u32 CRC-32 of the payload

// A stack record and a value record follow the sample record they belong to (types 4 and 5,
// added in version 1: readers that predate them skip them as unknown types).
enum RecordType : uint16_t {
    sample_record = 1,
    event_record = 2,
    summary_record = 3,
    stack_record = 4,
    value_record = 5,   // u32: the watched variable's bits at the halt (the header's "variable")
};
constexpr uint32_t sample_tagged = 1u;         // sample flags bit 0
constexpr uint32_t sample_starts_burst = 2u;   // sample flags bit 1
constexpr uint32_t sample_found_asleep = 4u;   // sample flags bit 2: DHCSR.S_SLEEP before the halt
// Bits 8-15: the core of a multi-core chip (added in version 1: older recordings have 0 there,
// core 0, and older readers ignore them).
constexpr uint32_t sample_core_shift = 8;
constexpr uint32_t stack_truncated = 1u;   // flags bit 0
constexpr uint32_t stack_stop_shift = 1;   // flags bits 1-4: why the chain ended (core::UnwindStop)
constexpr size_t sample_size = 32;
// A sample of a core after core 0, from a link that measured when each core stopped: two more
// u32, the bounds of its stop after core 0's in ns (added in version 1: older readers read the
// first 32 bytes and skip the rest).
constexpr size_t sample_size_with_stop = 40;

void put32(std::string& out, uint32_t v)
{
    for (int i = 0; i < 4; ++i)
        out.push_back(static_cast<char>(v >> (8 * i)));
}

uint32_t get32(const char* p)
{
    return uint32_t(uint8_t(p[0])) | uint32_t(uint8_t(p[1])) << 8 | uint32_t(uint8_t(p[2])) << 16 |
           uint32_t(uint8_t(p[3])) << 24;
}

uint32_t crc32(std::string_view bytes)
{
    boost::crc_32_type crc;
    crc.process_bytes(bytes.data(), bytes.size());
    return crc.checksum();
}

std::string offset_text(size_t offset)
{
    return "offset " + std::to_string(offset);
}

} // namespace

RecordingWriter::RecordingWriter(const std::string& path, const RunHeader& header) : path_(path)
{
    file_ = std::fopen(path.c_str(), "wb");
    if (file_ == nullptr)
        throw Error(path, "", std::string("cannot create: ") + std::strerror(errno));
    const std::string text = to_json(header).dump();
    std::string head(magic, sizeof magic);
    put32(head, recording_version);
    put32(head, uint32_t(text.size()));
    head += text;
    if (std::fwrite(head.data(), 1, head.size(), file_) != head.size())
        throw Error(path, "", "cannot write the header");
    flush();
}

RecordingWriter::~RecordingWriter()
{
    if (file_ != nullptr)
        std::fclose(file_);
}

void RecordingWriter::record(uint16_t type, const std::string& payload)
{
    std::string head;
    head.push_back(static_cast<char>(type));
    head.push_back(static_cast<char>(type >> 8));
    head.push_back(static_cast<char>(payload.size()));
    head.push_back(static_cast<char>(payload.size() >> 8));
    put32(head, crc32(payload));
    if (std::fwrite(head.data(), 1, head.size(), file_) != head.size() ||
        std::fwrite(payload.data(), 1, payload.size(), file_) != payload.size())
        throw Error(path_, "", std::string("write failed: ") + std::strerror(errno));
}

void RecordingWriter::sample(const LiveSample& s)
{
    std::string payload;
    payload.reserve(sample_size);
    put32(payload, uint32_t(s.time_ns));
    put32(payload, uint32_t(s.time_ns >> 32));
    put32(payload, s.pc);
    put32(payload, s.lr);
    put32(payload, s.sp);
    put32(payload, s.xpsr);
    put32(payload, s.tag);
    put32(payload, (s.tagged ? sample_tagged : 0u) | (s.starts_burst ? sample_starts_burst : 0u) |
                       (s.found_asleep ? sample_found_asleep : 0u) | (s.core & 0xFFu) << sample_core_shift);
    if (s.stop_after) {   // u32 ns each, capped: a halt's cores are never seconds apart
        put32(payload, uint32_t(std::min<uint64_t>(s.stop_after->at_least_ns, UINT32_MAX)));
        put32(payload, uint32_t(std::min<uint64_t>(s.stop_after->at_most_ns, UINT32_MAX)));
    }
    record(sample_record, payload);
    if (s.stack) {
        // u32 flags, then one u32 per caller (innermost first). The length field caps a
        // record at 65535 bytes: far beyond any depth limit.
        std::string frames;
        put32(frames, (s.stack->truncated ? stack_truncated : 0u) | uint32_t(s.stack->stop) << stack_stop_shift);
        for (size_t i = 0; i < s.stack->callers.size() && frames.size() + 4 <= 65535; ++i)
            put32(frames, s.stack->callers[i]);
        record(stack_record, frames);
    }
    if (s.value) {
        std::string value;
        put32(value, *s.value);
        record(value_record, value);
    }
}

void RecordingWriter::event(const nlohmann::json& e)
{
    record(event_record, e.dump().substr(0, 65535));
}

void RecordingWriter::notice(const std::string& kind, const std::string& message)
{
    event({{"kind", kind}, {"message", message}});
}

void RecordingWriter::task(uint32_t control_block, const std::string& name)
{
    event({{"kind", "task"}, {"address", hex32(control_block)}, {"name", name}});
}

void RecordingWriter::summary(const core::SamplerFigures& figures)
{
    record(summary_record, to_json(figures).dump().substr(0, 65535));
}

void RecordingWriter::flush()
{
    if (std::fflush(file_) != 0)
        throw Error(path_, "", std::string("write failed: ") + std::strerror(errno));
}

bool is_recording(std::string_view head)
{
    return head.size() >= sizeof magic && head.substr(0, sizeof magic) == std::string_view(magic, sizeof magic);
}

Recording read_recording(const std::string& path, const ReadProgress& progress)
{
    const MappedFile file(path);
    return parse_recording(file.bytes(), path, progress);
}

namespace {

// The magic, the format version and the run header; returns where the records begin.
size_t parse_head(std::string_view bytes, Recording& r)
{
    const std::string& path = r.path;
    if (!is_recording(bytes))
        throw Error(path, "offset 0", "not an mcuprof recording (no magic)");
    if (bytes.size() < 16)
        throw Error(path, "offset 8", "the header is cut short");
    const uint32_t version = get32(bytes.data() + 8);
    if (version > recording_version)
        throw Error(path, "offset 8",
                    "recording format version " + std::to_string(version) + " is newer than this mcuprof reads (" +
                        std::to_string(recording_version) + "); use a newer mcuprof");
    const uint32_t header_size = get32(bytes.data() + 12);
    if (16 + size_t(header_size) > bytes.size())
        throw Error(path, "offset 12", "the header is cut short");
    const nlohmann::json header = nlohmann::json::parse(bytes.substr(16, header_size), nullptr, false);
    if (!header.is_object())
        throw Error(path, "offset 16", "the header is not a JSON object");
    r.header = run_header_from_json(header);
    return 16 + header_size;
}

// A sample record's payload (docs/formats.md, "Recording", type 0); `at` names its offset.
LiveSample decode_sample(std::string_view payload, const std::string& path, size_t at)
{
    if (payload.size() < sample_size)
        throw Error(path, offset_text(at), "sample record of " + std::to_string(payload.size()) + " bytes, want 32");
    const char* d = payload.data();
    LiveSample s;
    s.time_ns = uint64_t(get32(d)) | uint64_t(get32(d + 4)) << 32;
    s.pc = get32(d + 8);
    s.lr = get32(d + 12);
    s.sp = get32(d + 16);
    s.xpsr = get32(d + 20);
    s.tag = get32(d + 24);
    const uint32_t flags = get32(d + 28);
    s.tagged = (flags & sample_tagged) != 0;
    s.starts_burst = (flags & sample_starts_burst) != 0;
    s.found_asleep = (flags & sample_found_asleep) != 0;
    s.core = (flags >> sample_core_shift) & 0xFFu;
    if (payload.size() >= sample_size_with_stop)
        s.stop_after = core::StopBounds{get32(d + 32), get32(d + 36)};
    return s;
}

// A stack record's payload (type 1): its flags word, then the callers.
core::CallStack decode_stack(std::string_view payload, const std::string& path, size_t at)
{
    if (payload.size() < 4 || payload.size() % 4 != 0)
        throw Error(path, offset_text(at), "stack record of " + std::to_string(payload.size()) + " bytes");
    core::CallStack stack;
    const uint32_t flags = get32(payload.data());
    stack.truncated = (flags & stack_truncated) != 0;
    const uint32_t stop = (flags >> stack_stop_shift) & 0xFu;
    if (!stack.truncated)   // complete: at the root, or where the Secure state called
        stack.stop = stop == uint32_t(core::UnwindStop::secure_caller) ? core::UnwindStop::secure_caller
                                                                       : core::UnwindStop::root;
    else if (stop == 0 || stop >= core::unwind_stop_count)
        stack.stop = core::UnwindStop::not_recorded;   // older recordings carry no reason
    else
        stack.stop = core::UnwindStop(stop);
    for (size_t i = 4; i < payload.size(); i += 4)
        stack.callers.push_back(get32(payload.data() + i));
    return stack;
}

// One record, checked, into `r`.
void add_record(Recording& r, uint16_t type, std::string_view payload, size_t at)
{
    const std::string& path = r.path;
    switch (type) {
    case sample_record:
        r.samples.push_back(decode_sample(payload, path, at));
        break;
    case stack_record:
        if (r.samples.empty() || r.samples.back().stack)
            throw Error(path, offset_text(at), "stack record without its sample");
        r.samples.back().stack = decode_stack(payload, path, at);
        break;
    case value_record:
        if (r.samples.empty() || r.samples.back().value)
            throw Error(path, offset_text(at), "value record without its sample");
        if (payload.size() != 4)
            throw Error(path, offset_text(at), "value record of " + std::to_string(payload.size()) + " bytes, want 4");
        r.samples.back().value = get32(payload.data());
        break;
    case event_record:
    case summary_record: {
        nlohmann::json j = nlohmann::json::parse(payload, nullptr, false);
        if (!j.is_object())
            throw Error(path, offset_text(at), "record is not a JSON object");
        if (type == event_record) {
            r.events.push_back(std::move(j));
            break;
        }
        try {
            r.summary = core::sampler_figures_from_json(j, path + " " + offset_text(at) + " (summary)");
        } catch (const core::Error& e) {
            r.summary.reset();
            r.summary_problem = e.what();
        }
        break;
    }
    default:
        break;   // a record kind from a newer minor version: skipped
    }
}

} // namespace

Recording parse_recording(std::string_view bytes, const std::string& path, const ReadProgress& progress)
{
    Recording r;
    r.path = path;
    size_t at = parse_head(bytes, r);
    size_t next_report = read_progress_step;
    while (at < bytes.size()) {
        if (progress && at >= next_report) {
            progress(at, bytes.size());
            next_report = at + read_progress_step;
        }
        const size_t left = bytes.size() - at;
        const char* p = bytes.data() + at;
        const size_t length = left >= 4 ? size_t(uint8_t(p[2])) | size_t(uint8_t(p[3])) << 8 : 0;
        if (left < record_head || left < record_head + length) {
            r.torn_tail = true;   // the writer stopped in the middle of this record
            break;
        }
        const uint16_t type = uint16_t(uint8_t(p[0]) | uint8_t(p[1]) << 8);
        const std::string_view payload(p + record_head, length);
        const bool last = at + record_head + length == bytes.size();
        if (crc32(payload) != get32(p + 4)) {
            if (last) {
                r.torn_tail = true;
                break;
            }
            throw Error(path, offset_text(at), "record fails its CRC check: the file is damaged");
        }
        add_record(r, type, payload, at);
        at += record_head + length;
    }
    return r;
}

namespace {

// A text field of a JSON object, or `fallback` when it is missing or not text: the JSON
// parts of a recording come from a file, and a damaged one must not stop the report.
std::string text_of(const nlohmann::json& object, const char* key, const std::string& fallback)
{
    auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

// How the halts stopped the cores, with each halt's spread (its latest core's stop after core
// 0's) from the samples that carry their stop's bounds.
core::CoreStops core_stops_of(const RunHeader::CoreStops& stops, const std::vector<LiveSample>& samples, size_t n)
{
    core::CoreStops c;
    c.how = stops.how;
    c.simultaneous = stops.skew == CoreSkew::none;
    std::optional<core::StopBounds> spread;
    auto close_halt = [&] {
        if (spread) {
            c.at_least_us.push_back(double(spread->at_least_ns) / 1000);
            c.at_most_us.push_back(double(spread->at_most_ns) / 1000);
        }
        spread.reset();
    };
    for (size_t i = 0; i < n; ++i) {
        const LiveSample& s = samples[i];
        if (s.core == 0)
            close_halt();   // core 0's sample opens each halt
        else if (s.stop_after)
            spread = core::StopBounds{std::max(spread ? spread->at_least_ns : 0, s.stop_after->at_least_ns),
                                      std::max(spread ? spread->at_most_ns : 0, s.stop_after->at_most_ns)};
    }
    close_halt();
    return c;
}

// The variable watched at every halt (--by var:NAME), when every sample carries its value.
void add_variable(core::SampleSet& out, const RecordedVariable& watched, const std::vector<LiveSample>& samples,
                  size_t n)
{
    bool every = n > 0;
    for (size_t i = 0; i < n && every; ++i)
        every = samples[i].value.has_value();
    if (!every) {
        out.notes.push_back("the variable " + watched.name + " could not be read at every halt: no grouping by it");
        return;
    }
    out.variable = watched.name;
    out.values.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        const uint32_t bits = *samples[i].value;
        out.values.push_back(bits);
        if (out.value_names.count(bits) == 0)
            out.value_names[bits] = watched.name_of(bits);
    }
}

// The end of the run is part of the sampler's figures ("end"); what went wrong is a note.
// Tasks met while recording: {"kind": "task", "address": "0x20000100", "name": "motor"}.
void add_events(core::SampleSet& out, const std::vector<nlohmann::json>& events)
{
    for (const nlohmann::json& e : events) {
        const std::string kind = text_of(e, "kind", "");
        uint32_t address = 0;
        if (kind == "task" && parse_hex32(text_of(e, "address", ""), address))
            out.tag_names[address] = text_of(e, "name", "?");
        else if (kind != "target-exit" && kind != "task" && kind != "firmware-verified")
            out.notes.push_back(text_of(e, "message", e.dump()));
    }
}

} // namespace

core::SampleSet to_samples(const Recording& recording, std::optional<size_t> first)
{
    const RunHeader& header = recording.header;
    const std::vector<LiveSample>& samples = recording.samples;
    core::SampleSet out;
    out.origin = std::string("recording (") + (header.link.source ? to_string(*header.link.source) : "live") +
                 "): " + recording.path;
    const size_t n = std::min(samples.size(), first.value_or(SIZE_MAX));
    bool tagged = false;
    bool stacks = false;
    bool several_cores = false;
    for (size_t i = 0; i < n; ++i) {
        tagged |= samples[i].tagged;
        stacks |= samples[i].stack.has_value();
        several_cores |= samples[i].core != 0;
    }
    // A halt reads xPSR, whose IPSR is the exception the core was in; DWT_PCSR and the DWT's SWO
    // samples give the PC only. A --mode pcsr,halt recording of a core without DWT_PCSR sampled
    // by halts (its `fallback` event), though its header, written before, says pcsr: its
    // samples are independent halts, not reads back to back.
    const bool fell_back = std::any_of(recording.events.begin(), recording.events.end(), [](const nlohmann::json& e) {
        return e.is_object() && e.value("kind", nlohmann::json()) == "fallback";
    });
    const bool halted = header.halts() || fell_back;
    out.measures_time = header.measures_time();
    out.reads_pcsr = header.reads_pcsr() && !fell_back;
    out.wall_clock_halts = halted && out.measures_time;   // halts paced by the wall clock
    for (const RunHeader::Core& c : header.link.cores)   // every core sampled, named
        out.core_names[c.core] = c.name;
    several_cores |= out.core_names.size() > 1;
    if (several_cores && header.link.core_stops)
        out.core_stops = core_stops_of(*header.link.core_stops, samples, n);
    out.pcs.reserve(n);
    out.times_ns.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        out.pcs.push_back(samples[i].pc);
        if (several_cores)
            out.cores.push_back(samples[i].core);
        out.times_ns.push_back(samples[i].time_ns);
        if (halted)
            out.exceptions.push_back(samples[i].xpsr & 0x1FFu);   // IPSR, xPSR bits 8:0
        if (tagged)
            out.tags.push_back(samples[i].tag);
        if (stacks)   // a sample the sampler could not unwind at all is a stack of one, cut short
            out.stacks.push_back(samples[i].stack.value_or(core::CallStack{{}, true}));
        if (samples[i].starts_burst)
            out.bursts.push_back(i);
        if (samples[i].found_asleep)
            out.found_asleep.push_back(i);
    }
    // Reads before the first marked start (none, as the samplers write them) are a burst too.
    if (!out.bursts.empty() && out.bursts.front() != 0)
        out.bursts.insert(out.bursts.begin(), 0);
    if (header.variable)
        add_variable(out, *header.variable, samples, n);
    out.tag_names.insert(header.tasks.begin(), header.tasks.end());
    if (header.bias)   // a bias the sampler knew of when it started (wall-clock halts of an emulator)
        out.warnings.push_back({"emulator-bias", *header.bias});
    // A --qemu run recorded to the firmware's exit: its instruction count is the whole run's.
    if (header.qemu && header.qemu->exited)
        out.run_instructions = header.qemu->instructions;
    if (recording.summary) {
        out.sampler = *recording.summary;
        // How the samples were taken, from the header, beside the figures (the HTML report
        // shows them with the rate and duty).
        out.sampler->method = header.method ? to_string(*header.method) : "";
        if (header.pacing)
            out.sampler->pacing = to_json(*header.pacing).dump();
    }
    else if (!recording.summary_problem.empty())
        out.notes.push_back("the recording's summary is unreadable and was left out");
    if (recording.torn_tail)
        out.notes.push_back("the recording's last record was cut short (a crash or a full disk?) and was dropped");
    add_events(out, recording.events);
    if (n == 0)
        throw Error(recording.path, "", "the recording holds no samples");
    return out;
}

RecordedFirmware recorded_firmware(const RunHeader& header)
{
    RecordedFirmware firmware;
    for (size_t i = 0; i < header.images.size(); ++i) {
        const RunHeader::Image& image = header.images[i];
        RecordedFirmware& recorded = i == 0 ? firmware : firmware.more.emplace_back();
        recorded.path = image.elf_path;
        recorded.identity = image.elf_identity;
    }
    return firmware;
}

namespace {

RunHeader::Image image_fields(const core::Image& image)
{
    const std::string& elf_path = image.path();
    std::error_code failed;
    const std::filesystem::path absolute = std::filesystem::absolute(elf_path, failed);
    return {elf_path, failed ? elf_path : absolute.lexically_normal().string(), image.identity()};
}

} // namespace

std::vector<RunHeader::Image> firmware_fields(const core::ImageSet& images)
{
    std::vector<RunHeader::Image> fields;
    for (const core::Image& image : images.images())
        fields.push_back(image_fields(image));
    return fields;
}

} // namespace mcuprof::sources
