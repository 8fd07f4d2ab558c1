#include "mcuprof/inputs/swo_reader.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mcuprof/printf_string.h"
#include "mcuprof/inputs/error.h"
#include "mcuprof/inputs/recording.h"
#include "mcuprof/link/error.h"
#include "mcuprof/link/tcp_connection.h"

namespace mcuprof::sources {
namespace {

constexpr std::string_view tcp_prefix = "tcp:";
constexpr size_t chunk_size = 1024 * 1024;
constexpr int wait_step_ms = 200;   // how long a live source waits before looking at StopWhen again

// A regular file, mapped: the parser reads the page cache in place, chunk by chunk, with
// no copy (a copy into a buffer cost more than the parsing).
class MappedSource : public ByteSource {
public:
    MappedSource(int fd, uint64_t size, std::string name) : name_(std::move(name)), size_(size)
    {
        if (size_ == 0)
            return;
        // Populating the mapping at once is cheaper than a page fault per 4 KiB, but only
        // for a capture that fits comfortably in memory; a larger one is faulted in as read.
        const int populate = size_ <= (uint64_t(1) << 30) ? MAP_POPULATE : 0;
        data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | populate, fd, 0);
        if (data_ == MAP_FAILED)
            throw Error(name_, "", std::string("cannot map: ") + std::strerror(errno));
        ::madvise(data_, size_, MADV_SEQUENTIAL);
    }
    ~MappedSource() override
    {
        if (size_ != 0)
            ::munmap(data_, size_);
    }
    std::span<const uint8_t> next(const StopWhen& stop) override
    {
        if (at_ == size_ || stop.now())
            return {};
        const uint64_t n = std::min<uint64_t>(chunk_size, size_ - at_);
        const std::span<const uint8_t> chunk(static_cast<const uint8_t*>(data_) + at_, n);
        at_ += n;
        return chunk;
    }
    const std::string& name() const override { return name_; }
    uint64_t size_hint() const override { return size_; }

private:
    std::string name_;
    uint64_t size_;
    void* data_ = nullptr;
    uint64_t at_ = 0;
};

// Standard input, a pipe or a device, read with read(2); poll(2) first so that a quiet
// pipe still lets Ctrl-C and --duration be seen.
class DescriptorSource : public ByteSource {
public:
    DescriptorSource(int fd, std::string name, bool owned)
        : fd_(fd), name_(std::move(name)), owned_(owned), buffer_(chunk_size)
    {
    }
    ~DescriptorSource() override
    {
        if (owned_)
            ::close(fd_);
    }
    std::span<const uint8_t> next(const StopWhen& stop) override
    {
        for (;;) {
            if (stop.now())
                return {};
            pollfd wait{fd_, POLLIN, 0};
            const int ready = ::poll(&wait, 1, wait_step_ms);
            if (ready == 0 || (ready < 0 && errno == EINTR))
                continue;
            const ssize_t got = ::read(fd_, buffer_.data(), buffer_.size());
            if (got >= 0) {
                offset_ += uint64_t(got);
                return std::span<const uint8_t>(buffer_.data(), size_t(got));
            }
            if (errno == EINTR || errno == EAGAIN)
                continue;
            throw Error(name_, printf_string("offset %" PRIu64, offset_), std::string("read failed: ") + std::strerror(errno));
        }
    }
    const std::string& name() const override { return name_; }

private:
    int fd_;
    std::string name_;
    bool owned_;
    std::vector<uint8_t> buffer_;
    uint64_t offset_ = 0;
};

// OpenOCD's trace output ("tpiu config ... :PORT") or any server that streams the bytes;
// the end of the stream is the peer closing the connection.
class TcpSource : public ByteSource {
public:
    explicit TcpSource(const std::string& address)
        : endpoint_(transport::Endpoint::parse(address, "swo tcp " + address)),
          name_("tcp " + endpoint_.text()),
          connection_(endpoint_, std::chrono::seconds(5), name_)
    {
    }
    std::span<const uint8_t> next(const StopWhen& stop) override
    {
        received_.clear();
        while (received_.empty()) {
            if (closed_ || stop.now())
                return {};
            try {
                connection_.try_read_some(received_, std::chrono::milliseconds(wait_step_ms));
            } catch (const transport::Error& e) {
                if (e.kind() != transport::Error::Kind::closed)
                    throw;
                closed_ = true;
            }
        }
        return std::span(reinterpret_cast<const uint8_t*>(received_.data()), received_.size());
    }
    const std::string& name() const override { return name_; }

private:
    transport::Endpoint endpoint_;
    std::string name_;
    transport::TcpConnection connection_;
    std::string received_;
    bool closed_ = false;
};

class MemorySource : public ByteSource {
public:
    MemorySource(std::string_view bytes, std::string name, size_t chunk)
        : bytes_(bytes), name_(std::move(name)), chunk_(std::max<size_t>(chunk, 1))
    {
    }
    std::span<const uint8_t> next(const StopWhen& stop) override
    {
        if (stop.now())
            return {};
        const size_t n = std::min(chunk_, bytes_.size() - at_);
        const std::span<const uint8_t> chunk(reinterpret_cast<const uint8_t*>(bytes_.data()) + at_, n);
        at_ += n;
        return chunk;
    }
    const std::string& name() const override { return name_; }
    uint64_t size_hint() const override { return bytes_.size(); }

private:
    std::string_view bytes_;
    std::string name_;
    size_t chunk_;
    size_t at_ = 0;
};

class PrefixedSource : public ByteSource {
public:
    PrefixedSource(std::string head, std::unique_ptr<ByteSource> rest) : head_(std::move(head)), rest_(std::move(rest))
    {
    }
    std::span<const uint8_t> next(const StopWhen& stop) override
    {
        if (!head_given_ && !head_.empty()) {
            head_given_ = true;
            return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(head_.data()), head_.size());
        }
        return rest_->next(stop);
    }
    const std::string& name() const override { return rest_->name(); }

private:
    std::string head_;
    std::unique_ptr<ByteSource> rest_;
    bool head_given_ = false;
};

// Keeps the PCs in order and counts the sleep samples, up to a limit.
class SampleCollector : public ItmPacketSink {
public:
    explicit SampleCollector(core::SampleSet& samples, uint64_t limit) : samples_(samples), limit_(limit) {}
    // Without a limit the PCs come as plain values (the parser's fast path); with one, as
    // packets, so that PCs and sleep samples are counted in their order.
    bool wants_pc_values() const override { return limit_ == 0; }
    void receive_pcs(std::span<const uint32_t> pcs) override
    {
        samples_.pcs.insert(samples_.pcs.end(), pcs.begin(), pcs.end());
    }
    void receive(std::span<const ItmPacket> packets) override
    {
        if (limit_ != 0) {   // keep the packets up to the limit-th sample
            uint64_t room = limit_ - std::min<uint64_t>(limit_, samples_.pcs.size() + sleeping_);
            size_t end = 0;
            for (; end < packets.size() && room > 0; ++end)
                room -= packets[end].kind == ItmKind::pc_sample || packets[end].kind == ItmKind::sleep_sample;
            packets = packets.first(end);
        }
        // Without a branch per packet: PC samples and the rest come mixed, so a branch on the
        // kind is mispredicted often. Every value is written, and only a PC's is kept.
        std::vector<uint32_t>& pcs = samples_.pcs;
        const size_t before = pcs.size();
        pcs.resize(before + packets.size());
        uint32_t* out = pcs.data() + before;
        size_t kept = 0;
        uint64_t sleeping = 0;
        for (const ItmPacket& p : packets) {
            out[kept] = uint32_t(p.value);
            kept += p.kind == ItmKind::pc_sample;
            sleeping += p.kind == ItmKind::sleep_sample;
        }
        pcs.resize(before + kept);
        sleeping_ += sleeping;
    }
    bool full() const { return limit_ != 0 && samples_.pcs.size() + sleeping_ >= limit_; }
    uint64_t sleeping() const { return sleeping_; }

private:
    core::SampleSet& samples_;
    uint64_t limit_;
    uint64_t sleeping_ = 0;
};

class PacketLister : public ItmPacketSink {
public:
    PacketLister(std::ostream& out, uint64_t limit) : out_(out), limit_(limit) {}
    void receive(std::span<const ItmPacket> packets) override
    {
        for (const ItmPacket& p : packets) {
            if (full())
                return;
            samples_ += p.kind == ItmKind::pc_sample || p.kind == ItmKind::sleep_sample;
            out_ << printf_string("%08" PRIx64 "  ", p.offset) << describe(p) << '\n';
        }
    }
    bool full() const { return limit_ != 0 && samples_ >= limit_; }

private:
    std::ostream& out_;
    uint64_t limit_;
    uint64_t samples_ = 0;
};

// The PC and sleep samples of a live stream, each written to the recording as it comes, in
// stream order, up to `limit` (0: all); the writer flushed after each chunk.
class RecordingCollector : public ItmPacketSink {
public:
    RecordingCollector(RecordingWriter& writer, uint64_t limit, double period_ns)
        : writer_(writer), limit_(limit), period_ns_(period_ns)
    {
    }
    void receive(std::span<const ItmPacket> packets) override
    {
        for (const ItmPacket& p : packets) {
            if ((p.kind != ItmKind::pc_sample && p.kind != ItmKind::sleep_sample) || full())
                continue;
            LiveSample s;
            s.time_ns = uint64_t(double(samples_) * period_ns_);
            // A sleep packet carries no PC (ARMv7-M ARM D4.3.3): the sample is "(sleep)" by its flag.
            s.found_asleep = p.kind == ItmKind::sleep_sample;
            s.pc = s.found_asleep ? 0 : uint32_t(p.value);
            writer_.sample(s);
            ++samples_;
        }
        writer_.flush();
    }
    bool full() const { return limit_ != 0 && samples_ >= limit_; }
    uint64_t samples() const { return samples_; }

private:
    RecordingWriter& writer_;
    uint64_t limit_;
    double period_ns_;
    uint64_t samples_ = 0;
};

} // namespace

bool StopWhen::now() const
{
    return (flag != nullptr && flag->load()) || (deadline && std::chrono::steady_clock::now() >= *deadline);
}

SwoOutcome feed_swo(ByteSource& source, const SwoOptions& options, ItmPacketSink& sink,
                    const std::function<bool()>& full)
{
    ItmParser parser({.wait_for_sync = options.wait_for_sync});
    StopWhen stop;
    stop.flag = options.stop;
    if (options.max_time.count() > 0)
        stop.deadline = std::chrono::steady_clock::now() + options.max_time;
    auto is_full = [&] { return full && full(); };
    SwoOutcome outcome;
    while (!is_full()) {
        const std::span<const uint8_t> chunk = source.next(stop);
        if (chunk.empty())
            break;
        parser.feed(chunk, sink);
    }
    outcome.interrupted = stop.flag != nullptr && stop.flag->load();
    outcome.timed_out = stop.deadline && std::chrono::steady_clock::now() >= *stop.deadline;
    if (!is_full() && !outcome.interrupted && !outcome.timed_out)
        parser.finish(sink);
    outcome.counts = parser.counts();
    return outcome;
}

std::vector<std::string> swo_notes(const SwoOutcome& outcome, const SwoOptions& options)
{
    const ItmCounts& c = outcome.counts;
    std::vector<std::string> notes;
    if (c[ItmKind::overflow] > 0)
        notes.push_back(printf_string(
            "%" PRIu64 " overflow packets: the ITM dropped packets because the SWO line could not carry them "
            "all; lower the sampling rate (DWT_CTRL.CYCTAP, POSTPRESET) or raise the SWO baud rate",
            c[ItmKind::overflow]));
    if (c[ItmKind::bad] > 0)
        notes.push_back(printf_string(
            "%" PRIu64 " bad packets (reserved headers or malformed): the capture holds garbage or started in "
            "the middle of a packet%s",
            c[ItmKind::bad], options.wait_for_sync ? "; the bytes up to the next synchronization packet were skipped"
                                                   : "; --sync decodes from synchronization packets only"));
    if (options.wait_for_sync && c[ItmKind::sync] == 0)
        notes.push_back("no synchronization packet in the capture: nothing was decoded (--sync)");
    else if (c.skipped_bytes > 0)
        notes.push_back(printf_string("%" PRIu64 " bytes skipped while waiting for a synchronization packet", c.skipped_bytes));
    if (c.truncated > 0)
        notes.push_back("the capture ends in the middle of a packet; that packet was dropped");
    if (outcome.interrupted)
        notes.push_back("reading stopped by Ctrl-C");
    return notes;
}

bool is_stream_input(std::string_view input)
{
    return input == "-" || input.starts_with(tcp_prefix);
}

std::unique_ptr<ByteSource> open_byte_source(const std::string& input)
{
    if (input == "-")
        return std::make_unique<DescriptorSource>(0, "standard input", false);
    if (input.starts_with(tcp_prefix))
        return std::make_unique<TcpSource>(input.substr(tcp_prefix.size()));
    const int fd = ::open(input.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw Error(input, "", std::string("cannot open: ") + std::strerror(errno));
    struct stat status = {};
    if (::fstat(fd, &status) == 0 && S_ISREG(status.st_mode)) {
        try {
            auto mapped = std::make_unique<MappedSource>(fd, uint64_t(status.st_size), input);
            ::close(fd);   // the mapping stays
            return mapped;
        } catch (...) {
            ::close(fd);
            throw;
        }
    }
    return std::make_unique<DescriptorSource>(fd, input, true);   // a FIFO or a device
}

std::unique_ptr<ByteSource> prefixed_byte_source(std::string head, std::unique_ptr<ByteSource> rest)
{
    return std::make_unique<PrefixedSource>(std::move(head), std::move(rest));
}

std::unique_ptr<ByteSource> memory_byte_source(std::string_view bytes, std::string name, size_t chunk)
{
    return std::make_unique<MemorySource>(bytes, std::move(name), chunk);
}

bool looks_like_swo(std::string_view head)
{
    // A capture started with the trace: zeros of a sync packet (ARMv7-M D4.2.1) first.
    const size_t zeros = head.find_first_not_of('\0');
    if (zeros != std::string_view::npos && zeros >= 5 && uint8_t(head[zeros]) == 0x80)
        return true;
    // Otherwise (started mid-stream) the packets must decode almost cleanly, and PC
    // samples (0x17 ...) be a good share of them: text and other binaries are neither.
    struct Nothing : ItmPacketSink {
        void receive(std::span<const ItmPacket>) override {}
    } ignore;
    ItmParser parser;
    parser.feed(head, ignore);
    const ItmCounts& c = parser.counts();
    const uint64_t packets = c.total_packets();
    const uint64_t samples = c[ItmKind::pc_sample] + c[ItmKind::sleep_sample];
    return packets >= 8 && c[ItmKind::bad] * 50 <= packets && samples * 5 >= packets;
}

core::SampleSet read_swo(ByteSource& source, const SwoOptions& options)
{
    core::SampleSet samples;
    samples.measures_time = true;   // the DWT samples every N cycles (and sends sleep packets)
    // At most one PC per 5 bytes: reserving that once saves the copies of a growing vector.
    // (and a batch more: the collector sizes the vector for a whole batch before trimming it).
    const uint64_t most = source.size_hint() / 5 + 4096;
    samples.pcs.reserve(size_t(options.max_samples != 0 ? std::min(most, options.max_samples + 4096) : most));
    // Tens of megabytes of PCs: huge pages spare a page fault per 4 KiB (Linux THP in madvise mode).
    if (samples.pcs.capacity() * sizeof(uint32_t) >= (size_t(8) << 20)) {
        const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
        const uintptr_t begin = (uintptr_t(samples.pcs.data()) + page - 1) & ~(page - 1);
        const uintptr_t end = uintptr_t(samples.pcs.data() + samples.pcs.capacity()) & ~(page - 1);
        if (end > begin)
            ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
    }
    SampleCollector collector(samples, options.max_samples);
    const SwoOutcome outcome = feed_swo(source, options, collector, [&] { return collector.full(); });
    const ItmCounts& c = outcome.counts;

    if (collector.sleeping() > 0)
        samples.without_address[sleep_row] = collector.sleeping();
    samples.origin = printf_string("SWO capture %s, %" PRIu64 " bytes; packets: ", source.name().c_str(), c.bytes) + summary(c);
    samples.notes = swo_notes(outcome, options);
    if (samples.pcs.empty() && collector.sleeping() == 0 && c.bytes > 0)
        samples.notes.push_back(
            "no PC sample packets: is PC sampling on (DWT_CTRL.PCSAMPLENA, bit 12) and are DWT packets let "
            "into the stream (ITM_TCR.DWTENA, bit 3)?");
    return samples;
}

SwoRecorded record_swo(ByteSource& source, const SwoOptions& options, double period_seconds, RecordingWriter& writer)
{
    RecordingCollector collector(writer, options.max_samples, period_seconds * 1e9);
    SwoRecorded recorded;
    recorded.outcome = feed_swo(source, options, collector, [&] { return collector.full(); });
    recorded.samples = collector.samples();
    const SwoOutcome& outcome = recorded.outcome;
    recorded.end = collector.full()        ? printf_string("%" PRIu64 " samples reached", options.max_samples)
                   : outcome.interrupted ? "interrupted"
                   : outcome.timed_out   ? "the duration reached"
                                         : "the stream ended";
    for (const std::string& note : swo_notes(outcome, options))
        writer.notice("swo", note);
    writer.flush();
    return recorded;
}

core::SampleSet read_swo(const std::string& input, const SwoOptions& options)
{
    const std::unique_ptr<ByteSource> source = open_byte_source(input);
    return read_swo(*source, options);
}

ItmCounts list_swo_packets(ByteSource& source, const SwoOptions& options, std::ostream& out)
{
    PacketLister lister(out, options.max_samples);
    const SwoOutcome outcome = feed_swo(source, options, lister, [&] { return lister.full(); });
    const ItmCounts& c = outcome.counts;
    out << printf_string("# %" PRIu64 " bytes, %" PRIu64 " skipped, %" PRIu64 " truncated; packets: ", c.bytes,
                         c.skipped_bytes, c.truncated)
        << summary(c) << '\n';
    return c;
}

std::string describe(const ItmPacket& p)
{
    const std::string kind(name_of(p.kind));
    switch (p.kind) {
    case ItmKind::sync:
    case ItmKind::overflow:
    case ItmKind::sleep_sample:
        return kind;
    case ItmKind::pc_sample:
    case ItmKind::global_timestamp_2:
        return printf_string("%s 0x%08" PRIx64, kind.c_str(), p.value);
    case ItmKind::local_timestamp:
        return printf_string("%s %" PRIu64 " tc %u", kind.c_str(), p.value, unsigned(p.flags));
    case ItmKind::global_timestamp_1:
        return printf_string("%s 0x%07" PRIx64 "%s%s", kind.c_str(), p.value,
                             (p.flags & global_timestamp_clock_change) ? " clock-change" : "",
                             (p.flags & global_timestamp_wrap) ? " wrap" : "");
    case ItmKind::extension:
        return printf_string("%s sh %u ex 0x%" PRIx64, kind.c_str(), unsigned(p.flags), p.value);
    case ItmKind::instrumentation:
        return printf_string("%s port %u 0x%0*" PRIx64 " (%u bytes)", kind.c_str(), p.channel, 2 * p.payload_size, p.value,
                             unsigned(p.payload_size));
    case ItmKind::event_counter: {
        std::string which;
        const char* names[] = {"cpi", "exc", "sleep", "lsu", "fold", "postcnt"};
        for (int bit = 0; bit < 6; ++bit)
            if (p.value & (1u << bit))
                which += std::string(" ") + names[bit];
        return printf_string("%s 0x%02" PRIx64, kind.c_str(), p.value) + which;
    }
    case ItmKind::exception_trace: {
        const char* function = p.flags == exception_entered ? "entered"
                              : p.flags == exception_exited ? "exited"
                                                            : "returned";
        return printf_string("%s %" PRIu64 " %s", kind.c_str(), p.value, function);
    }
    case ItmKind::data_trace_pc:
        return printf_string("%s comparator %u 0x%08" PRIx64, kind.c_str(), p.channel, p.value);
    case ItmKind::data_trace_address:
        return printf_string("%s comparator %u 0x%04" PRIx64, kind.c_str(), p.channel, p.value);
    case ItmKind::data_trace_value:
        return printf_string("%s comparator %u %s 0x%0*" PRIx64 " (%u bytes)", kind.c_str(), p.channel,
                             p.flags ? "write" : "read", 2 * p.payload_size, p.value, unsigned(p.payload_size));
    case ItmKind::bad:
        return printf_string("%s header 0x%02x: ", kind.c_str(), unsigned(p.header)) +
               std::string(name_of(ItmBadReason(p.flags)));
    }
    return kind;
}

} // namespace mcuprof::sources
