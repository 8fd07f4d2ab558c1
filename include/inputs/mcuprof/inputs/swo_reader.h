#pragma once
// Reader of SWO captures: the raw ITM/DWT packet stream a probe records from the SWO pin,
// or OpenOCD serves on its trace TCP port. It is read in chunks (memory does not grow with
// the stream beyond the samples kept) from a file, standard input or a TCP connection, and
// turned into samples: periodic PC sample packets in order, sleep samples as their own row.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mcuprof/profile/samples.h"
#include "mcuprof/inputs/itm_parser.h"

namespace mcuprof::sources {

// Row name of the samples the DWT took while the core slept (1-byte PC sample packets).
inline constexpr const char* sleep_row = "(sleep)";

// When a reader of a live stream should stop waiting for more bytes.
struct StopWhen {
    const std::atomic<bool>* flag = nullptr;   // set from a signal handler (Ctrl-C)
    std::optional<std::chrono::steady_clock::time_point> deadline;
    bool now() const;
};

// Bytes in chunks, from wherever they come.
class ByteSource {
public:
    virtual ~ByteSource() = default;
    // The next bytes, valid until the next call; empty at the end of the stream or once
    // `stop` says so. A live source waits for bytes in short steps, so that `stop` is seen
    // within a fraction of a second.
    virtual std::span<const uint8_t> next(const StopWhen& stop) = 0;
    // "swo.bin", "standard input", "tcp 127.0.0.1:3443": for errors and the report header.
    virtual const std::string& name() const = 0;
    // The stream's length if known in advance (a file), else 0.
    virtual uint64_t size_hint() const { return 0; }
};

// True for the inputs read as a stream, whose kind cannot be looked at first:
// "-" (standard input) and "tcp:HOST:PORT".
bool is_stream_input(std::string_view input);
// Opens a file, "-" or "tcp:HOST:PORT" (connects). Throws sources::Error or transport::Error.
std::unique_ptr<ByteSource> open_byte_source(const std::string& input);
// A source over bytes in memory, handed out `chunk` bytes at a time (tests, detection).
std::unique_ptr<ByteSource> memory_byte_source(std::string_view bytes, std::string name, size_t chunk = 64 * 1024);
// `head` (bytes already taken from `rest` to look at them), then the rest of `rest`.
std::unique_ptr<ByteSource> prefixed_byte_source(std::string head, std::unique_ptr<ByteSource> rest);

// Whether the first bytes of a file are an SWO capture: they begin with a synchronization
// packet, or decode as ITM packets with next to nothing bad and a good share of PC samples.
bool looks_like_swo(std::string_view head);

struct SwoOptions {
    bool wait_for_sync = false;                 // --sync: see ItmParserOptions
    uint64_t max_samples = 0;                   // stop after this many samples (PC and sleep); 0: all
    std::chrono::nanoseconds max_time{0};       // stop reading after this long; 0: until the end
    const std::atomic<bool>* stop = nullptr;    // stop reading when set
};

// Feeds the source through an ITM parser into the sink until the stream ends, the options
// say stop (time, Ctrl-C), or `full` (when given) says the sink wants no more.
struct SwoOutcome {
    ItmCounts counts;
    bool interrupted = false;   // Ctrl-C
    bool timed_out = false;     // --duration
};
SwoOutcome feed_swo(ByteSource& source, const SwoOptions& options, ItmPacketSink& sink,
                    const std::function<bool()>& full = {});
// What every reader of a capture notes: overflow and bad packets, bytes skipped waiting for
// a synchronization packet, a packet cut by the end, Ctrl-C.
std::vector<std::string> swo_notes(const SwoOutcome& outcome, const SwoOptions& options);

// A capture's samples: `pcs` in stream order, sleep samples under without_address[sleep_row],
// the packet counts in `origin`, and notes on what went wrong (overflow, bad packets, a cut).
core::SampleSet read_swo(ByteSource& source, const SwoOptions& options);
core::SampleSet read_swo(const std::string& input, const SwoOptions& options);

class RecordingWriter;
// A live stream into a recording (mcuprof swo -o): each PC and sleep sample written as it
// comes, in stream order, timed by the DWT's nominal period (sample index x `period_seconds`);
// then swo_notes as notices (overflow, bad packets, ...), which every report shows.
struct SwoRecorded {
    uint64_t samples = 0;   // written, PC and sleep
    SwoOutcome outcome;
    std::string end;        // why the capture ended, in words
};
SwoRecorded record_swo(ByteSource& source, const SwoOptions& options, double period_seconds, RecordingWriter& writer);

// The --packets listing: one line per packet ("offset kind details"), then the counts.
ItmCounts list_swo_packets(ByteSource& source, const SwoOptions& options, std::ostream& out);
// One packet in words: "pc 0x080002b4", "exception 15 entered", "itm port 1 0x12345678 (4 bytes)".
std::string describe(const ItmPacket& packet);

} // namespace mcuprof::sources
