#pragma once
// DWT_PCSR read by OpenOCD's own `profile` command, one short chunk per Tcl round trip
// (docs/live.md, "PCSR through `profile` chunks"). `profile 0 FILE LOW HIGH` reads DWT_PCSR
// 1024 times and writes a gmon.out histogram: over an ST-Link (dapdirect_swd) or any adapter
// where OpenOCD drives the DAP, the 1024 reads are ONE non-incrementing MEM-AP block read
// (cortex_m_profiling -> mem_ap_read_buf_noincr), one USB command, where a Tcl `read_memory`
// costs a command or three per word. What is lost: the order of the reads inside a chunk
// (a histogram has none; the chunk's samples come out in random order) and reads outside
// the window, which OpenOCD drops and which are counted here.
//
// The window: 256 KiB (with 2-byte buckets, the most `profile` writes: 128 Ki, so each bucket
// is one halfword, one Thumb instruction address): the 256 KiB-aligned block that holds the
// PC of a single DWT_PCSR read (place_window).
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "mcuprof/transport/tcl_client.h"

namespace mcuprof::sources {

class PcsrProfileReader {
public:
    // `gmon_path`: where OpenOCD writes its histogram, read back here (OpenOCD runs on this
    // machine); `seed` orders each chunk's samples.
    PcsrProfileReader(std::string gmon_path, uint64_t seed);

    // The DWT_PCSR reads of one `profile 0` pass (OpenOCD 0.12's cortex_m_profiling).
    static constexpr unsigned chunk_reads = 1024;

    // One chunk: at most `wanted` PCs of the reads (a uniformly random subset when the
    // chunk has more), in random order. Throws transport::Error (protocol) when OpenOCD's
    // answer or file cannot be read.
    std::vector<uint32_t> read(transport::TclClient& tcl, uint64_t wanted);

    uint64_t reads() const { return reads_; }             // DWT_PCSR reads OpenOCD made
    uint64_t outside() const { return outside_; }         // of them outside the window (0xFFFFFFFF: halted)
    uint64_t unused() const { return unused_; }           // read but not delivered: the window's
                                                          // placing read, a chunk past `wanted`
    uint32_t window_low() const { return low_; }

    // The gmon.out OpenOCD writes (src/target/target.c, write_gmon): low_pc, high_pc and
    // the bucket counts; public for tests.
    struct Histogram {
        uint32_t low = 0;
        uint32_t high = 0;
        std::vector<uint16_t> buckets;
    };
    static Histogram parse_gmon(const std::string& bytes, const std::string& path);

private:
    void place_window(transport::TclClient& tcl);
    // Runs `profile 0` over the window; returns the histogram OpenOCD wrote and, in
    // `read_count`, the reads it reports.
    Histogram profile_chunk(transport::TclClient& tcl, uint64_t& read_count);

    std::string gmon_path_;
    std::mt19937_64 random_;
    bool placed_ = false;
    uint32_t low_ = 0;
    uint64_t reads_ = 0;
    uint64_t outside_ = 0;
    uint64_t unused_ = 0;
};

} // namespace mcuprof::sources
