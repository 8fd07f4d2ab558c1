#pragma once
// DWT_PCSR read by OpenOCD's own `profile` command, one chunk per Tcl round trip
// (docs/live.md, "PCSR through `profile` chunks"). `profile SECONDS FILE LOW HIGH` reads
// DWT_PCSR in passes of 1024 until SECONDS have passed (checked after each pass; 0: one
// pass) or 10000 reads are made, and writes a gmon.out histogram: over an ST-Link
// (dapdirect_swd) or any adapter where OpenOCD drives the DAP, each pass is ONE
// non-incrementing MEM-AP block read (cortex_m_profiling -> mem_ap_read_buf_noincr), one USB
// command, where a Tcl `read_memory` costs a command or three per word. Each call also costs
// a fixed dozen commands (a first PCSR read and three polls of DHCSR, OpenOCD 0.12's
// target.c and cortex_m.c), so the chunks are sized by time to gather up to the 10000 reads
// a call may make (seconds_for). What is lost: the order of the reads inside a chunk (a
// histogram has none; the chunk's samples come out in random order) and reads outside the
// window, which OpenOCD drops and which are counted here.
//
// The window: 256 KiB (with 2-byte buckets, the most `profile` writes: 128 Ki, so each bucket
// is one halfword, one Thumb instruction address): the 256 KiB-aligned block that holds the
// PC of a single DWT_PCSR read (place, or place_window when none was given).
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "mcuprof/inputs/gmon_reader.h"
#include "mcuprof/link/tcl_client.h"

namespace mcuprof::sources {

class PcsrProfileReader {
public:
    // `gmon_path`: where OpenOCD writes its histogram, read back here (OpenOCD runs on this
    // machine); `seed` orders each chunk's samples.
    PcsrProfileReader(std::string gmon_path, uint64_t seed);
    // Removes the file OpenOCD wrote for this reader (no error when there is none): it is
    // ours, and 256 KiB a recording.
    ~PcsrProfileReader();
    PcsrProfileReader(const PcsrProfileReader&) = delete;
    PcsrProfileReader& operator=(const PcsrProfileReader&) = delete;

    // The DWT_PCSR reads of one `profile 0` pass (OpenOCD 0.12's cortex_m_profiling), and
    // the most one `profile` call makes (handle_profile_command's MAX_PROFILE_SAMPLE_NUM).
    static constexpr unsigned chunk_reads = 1024;
    static constexpr unsigned most_reads_per_call = 10000;

    // The SECONDS of the next `profile` call for `wanted` reads at `reads_per_second` (the
    // last call's rate as OpenOCD wrote it into gmon.out; 0 when not known yet), where a
    // `profile 0` call makes `pass_reads` (1024 where OpenOCD drives the DAP; 1 under hla,
    // where profile reads one word at a time). `profile` checks the time after each pass and
    // stops at 10000 reads, so N seconds give the passes of N x rate reads and one more, at
    // most 10000: when 10000 are wanted, enough seconds to reach them at a rate a fifth
    // below the last call's (10 while the rate is not known; a call stops at the cap, so a
    // generous call costs nothing); else the most seconds whose passes stay within `wanted`
    // even at a quarter above the rate, so no pass is read in vain (0: one pass; but at least
    // a second when a pass is a single read: a call per read would cost more). At most 10 s.
    static unsigned seconds_for(uint64_t wanted, double reads_per_second, uint64_t pass_reads);

    // The window placed at the PC of a DWT_PCSR read made elsewhere (counted here as this
    // reader's placing read); 0xFFFFFFFF (halted) leaves it to the first chunk.
    void place(uint32_t pc);

    // One chunk: one `profile` call, at most `wanted` PCs of its reads (a uniformly random
    // subset when it made more), in random order. Throws transport::Error (protocol) when
    // OpenOCD's answer or file cannot be read.
    std::vector<uint32_t> read(transport::TclClient& tcl, uint64_t wanted);

    uint64_t reads() const { return reads_; }             // DWT_PCSR reads OpenOCD made
    uint64_t outside() const { return outside_; }         // of them outside the window (0xFFFFFFFF: halted)
    uint64_t unused() const { return unused_; }           // read but not delivered: the window's
                                                          // placing read, a chunk past `wanted`
    uint64_t calls() const { return calls_; }             // `profile` calls made
    // The mean reads of a call (0 before the first).
    unsigned reads_per_call() const { return calls_ ? unsigned((profile_reads_ + calls_ / 2) / calls_) : 0; }
    uint32_t window_low() const { return low_; }

private:
    void place_window(transport::TclClient& tcl);
    // Runs `profile SECONDS` over the window; returns the histogram OpenOCD wrote and, in
    // `read_count`, the reads it reports.
    GmonFile::Histogram profile_chunk(transport::TclClient& tcl, unsigned seconds, uint64_t& read_count);

    std::string gmon_path_;
    std::mt19937_64 random_;
    bool placed_ = false;
    uint32_t low_ = 0;
    uint64_t reads_ = 0;
    uint64_t outside_ = 0;
    uint64_t unused_ = 0;
    uint64_t calls_ = 0;
    uint64_t profile_reads_ = 0;
    double last_rate_ = 0;          // reads per second of the last call
    uint64_t pass_reads_ = 0;       // the reads of a `profile 0` call, once one was made
};

} // namespace mcuprof::sources
