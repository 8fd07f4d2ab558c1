// Times mcuprof's SWO reader in this process, the way bench/itm_bench.py times the peers'
// parse functions: a capture file in, the ordered PCs out (mapping, parsing, collecting).
//     itm_parse_timer CAPTURE RUNS
// prints "seconds S pcs N sleep K digest D": the median of RUNS runs, and a digest of the
// PC sequence (the sum of (i + 1) * pc[i], modulo 2^64) for the bench to check against the peers'.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "mcuprof/error.h"
#include "mcuprof/inputs/swo_reader.h"

int main(int argc, char** argv)
{
    if (argc != 3) {
        std::fprintf(stderr, "usage: itm_parse_timer CAPTURE RUNS\n");
        return 1;
    }
    const int runs = std::max(1, std::atoi(argv[2]));
    std::vector<double> seconds;
    mcuprof::core::SampleSet samples;
    try {
        for (int run = 0; run < runs; ++run) {
            samples = {};   // free the last run's PCs first, as a fresh process would have none
            const auto start = std::chrono::steady_clock::now();
            samples = mcuprof::sources::read_swo(argv[1], {});
            seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        }
    } catch (const mcuprof::Error& e) {
        std::fprintf(stderr, "itm_parse_timer: %s\n", e.what());
        return 2;
    }
    std::sort(seconds.begin(), seconds.end());
    uint64_t digest = 0;
    for (size_t i = 0; i < samples.pcs.size(); ++i)
        digest += (i + 1) * uint64_t(samples.pcs[i]);
    const auto sleep = samples.without_address.find(mcuprof::sources::sleep_row);
    std::printf("seconds %.6f pcs %zu sleep %" PRIu64 " digest %" PRIu64 "\n", seconds[seconds.size() / 2],
                samples.pcs.size(), sleep == samples.without_address.end() ? uint64_t(0) : sleep->second, digest);
    return 0;
}
