#include "mcuprof/target/pcsr_profile_reader.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <regex>

#include "mcuprof/inputs/error.h"
#include "mcuprof/target/tcl_script.h"
#include "mcuprof/link/error.h"

namespace mcuprof::sources {
namespace {

// 128 Ki buckets of 2 bytes: write_gmon's bucket limit at one bucket per halfword.
constexpr uint32_t window_bytes = 2 * 128 * 1024;

// The longest `profile` call asked for: a slow target (hla_swd, a loaded host) gets fewer than
// 10000 reads a call rather than a call so long that Ctrl-C waits for it.
constexpr double longest_call_seconds = 10;

// How much faster (or slower) than the last call's rate the next call is planned for: the
// host's load moves it from call to call.
constexpr double rate_margin = 1.25;

} // namespace

PcsrProfileReader::PcsrProfileReader(std::string gmon_path, uint64_t seed)
    : gmon_path_(std::move(gmon_path)), random_(seed)
{
}

PcsrProfileReader::~PcsrProfileReader()
{
    std::error_code ignored;
    std::filesystem::remove(gmon_path_, ignored);
}

unsigned PcsrProfileReader::seconds_for(uint64_t wanted, double reads_per_second, uint64_t pass_reads)
{
    pass_reads = std::max<uint64_t>(1, pass_reads);
    if (wanted >= most_reads_per_call) {
        // Any call long enough reads the cap and stops there, so a call asked for too long
        // costs nothing and one too short breaks the run into more calls than needed (each
        // with its fixed commands, and a tail of short calls at the end of a --samples run):
        // long enough at a rate a fifth below the last call's (1 / 1.25), the longest while
        // the rate is not known (on a real probe the cap comes within a tenth of a second).
        const double seconds = reads_per_second > 0
                                   ? std::ceil(rate_margin * most_reads_per_call / reads_per_second)
                                   : longest_call_seconds;
        return unsigned(std::clamp(seconds, 1.0, longest_call_seconds));
    }
    if (reads_per_second <= 0 || wanted <= pass_reads)
        return 0;
    // N seconds read the passes that end by N and the one that ends after: stay within the
    // whole passes wanted, with a margin for a rate a quarter faster than the last call's
    // (the host's load moves it from call to call); a pass read in vain costs far more than
    // one more call's fixed commands.
    const double passes_wanted = double(wanted / pass_reads * pass_reads);
    double seconds = std::max(0.0, std::ceil(passes_wanted / (rate_margin * reads_per_second)) - 1);
    if (seconds == 0 && pass_reads == 1)
        seconds = 1;
    return unsigned(std::min(seconds, longest_call_seconds));
}

GmonFile::Histogram PcsrProfileReader::profile_chunk(transport::TclClient& tcl, unsigned seconds,
                                                     uint64_t& read_count)
{
    // The read count is only in its log line, which `capture` (TclClient::command) returns.
    const std::string low = std::to_string(low_);
    const std::string high = std::to_string(uint64_t(low_) + window_bytes);
    // The call lasts SECONDS and the pass that ends after them: at a slow rate (a loaded host,
    // a slow probe) that pass alone can take seconds, beyond the client's time-out.
    const double pass_seconds =
        last_rate_ > 0 ? double(pass_reads_ ? pass_reads_ : chunk_reads) / last_rate_ : longest_call_seconds;
    const auto runs_for = std::chrono::duration_cast<transport::Duration>(
        std::chrono::duration<double>(seconds + std::max(longest_call_seconds, 2 * pass_seconds)));
    const std::string said = tcl.command({"profile", std::to_string(seconds), gmon_path_, low, high}, runs_for);
    static const std::regex completed(R"(Profiling completed\. (\d+) samples)");
    std::smatch m;
    if (!std::regex_search(said, m, completed))
        throw transport::Error(transport::Error::Kind::protocol, tcl.peer(), "profile",
                               "no \"Profiling completed\" line in its answer: " + said.substr(0, 200));
    read_count = std::stoull(m[1].str());
    // OpenOCD's answer, as the link's other answers: a file it wrote wrong (or not at all)
    // ends the recording as a protocol error (the samples kept, the target left running), not
    // as bad input.
    GmonFile file;
    try {
        file = read_gmon_records(gmon_path_);
    } catch (const Error& e) {
        throw transport::Error(transport::Error::Kind::protocol, e.file(), e.place(), e.problem());
    }
    if (file.histograms.size() != 1)
        throw transport::Error(transport::Error::Kind::protocol, gmon_path_, "gmon.out",
                               std::to_string(file.histograms.size()) + " histograms, not the one profile writes");
    return std::move(file.histograms.front());
}

void PcsrProfileReader::place(uint32_t pc)
{
    // The 256 KiB-aligned block that holds the PC, so firmware of up to 256 KiB that starts
    // on such a boundary (flash at 0x08000000 on an STM32, 0 elsewhere) is covered from its
    // first byte wherever the PC falls.
    ++reads_;
    ++unused_;
    if (pc == 0xFFFFFFFF)
        return;   // halted just now
    low_ = pc & ~(window_bytes - 1);
    placed_ = true;
}

void PcsrProfileReader::place_window(transport::TclClient& tcl)
{
    // One PC from a single read (the core may be halted by someone for a moment: a few tries).
    for (int attempt = 0; attempt < 16 && !placed_; ++attempt) {
        place(tcl::parse_word(tcl.eval("read_memory 0xE000101C 32 1"), tcl.peer(), "DWT_PCSR"));
    }
    if (!placed_)
        throw transport::Error(transport::Error::Kind::protocol, tcl.peer(), "DWT_PCSR",
                               "reads 0xFFFFFFFF (core halted) 16 times: no PC to place the profile window at");
}

std::vector<uint32_t> PcsrProfileReader::read(transport::TclClient& tcl, uint64_t wanted)
{
    if (!placed_)
        place_window(tcl);
    const unsigned seconds = seconds_for(wanted, last_rate_, pass_reads_ ? pass_reads_ : chunk_reads);
    uint64_t read_count = 0;
    const auto asked = std::chrono::steady_clock::now();
    const GmonFile::Histogram h = profile_chunk(tcl, seconds, read_count);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
    // OpenOCD's rate (its reads over its own clock, in whole ms): a call shorter than a
    // millisecond has none worth the name (0, or the float's overflow), then the round trip's.
    last_rate_ = h.rate > 0 && h.rate < 100'000'000 ? double(h.rate) : took > 0 ? double(read_count) / took : 0.0;
    if (seconds == 0 && !pass_reads_)
        pass_reads_ = read_count;
    profile_reads_ += read_count;
    ++calls_;
    if (h.low != low_ || h.high != uint64_t(low_) + window_bytes || h.counts.size() != window_bytes / 2)
        throw transport::Error(transport::Error::Kind::protocol, gmon_path_, "gmon.out",
                               "not the window asked for (" + std::to_string(h.counts.size()) + " buckets from " +
                                   std::to_string(h.low) + ", not " + std::to_string(low_) + ")");
    std::vector<uint32_t> pcs;
    for (uint32_t i = 0; i < h.counts.size(); ++i)
        pcs.insert(pcs.end(), h.counts[i], low_ + 2 * i);
    reads_ += read_count;
    outside_ += read_count - std::min<uint64_t>(read_count, pcs.size());
    std::shuffle(pcs.begin(), pcs.end(), random_);
    if (pcs.size() > wanted) {
        unused_ += pcs.size() - wanted;
        pcs.resize(wanted);
    }
    return pcs;
}

} // namespace mcuprof::sources
