#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>   // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it
#include <vector>

#include <boost/asio.hpp>

#include "mcuprof/inputs/error.h"
#include "mcuprof/inputs/input_kind.h"
#include "mcuprof/inputs/swo_reader.h"

using namespace mcuprof::sources;

namespace {

const std::string sync_packet("\0\0\0\0\0\x80", 6);

std::string pc_packet(uint32_t pc)
{
    return std::string{'\x17', char(pc), char(pc >> 8), char(pc >> 16), char(pc >> 24)};
}

// PCs with sleep samples, stimulus writes, timestamps, exception trace and a sync every
// 1000 samples; `sleeps` counts the sleep samples put in.
std::string synthetic(const std::vector<uint32_t>& pcs, uint64_t& sleeps)
{
    std::string s = sync_packet;
    sleeps = 0;
    for (size_t k = 0; k < pcs.size(); ++k) {
        s += pc_packet(pcs[k]);
        if (k % 7 == 3)
            s += std::string("\x01", 1) + char('a' + k % 26);
        if (k % 64 == 20) {
            s += std::string("\x15\x00", 2);
            ++sleeps;
        }
        if (k % 100 == 30)
            s += "\xC0\x85\x12";
        if (k % 100 == 60)
            s += "\x0E\x0F\x10";
        if (k % 1000 == 999)
            s += sync_packet;
    }
    return s;
}

std::vector<uint32_t> random_pcs(size_t n, unsigned seed)
{
    std::mt19937 random(seed);
    std::vector<uint32_t> pcs(n);
    for (uint32_t& pc : pcs)
        pc = 0x08000000 + 2 * (random() % 8192);
    return pcs;
}

std::string temp_path(const char* name)
{
    return std::string(P_tmpdir) + "/mcuprof-swo-test-" + std::to_string(::getpid()) + "-" + name;
}

} // namespace

TEST_CASE("swo reader: PC samples in order, sleep samples as a row, counts in the origin")
{
    const std::vector<uint32_t> pcs = random_pcs(10000, 1);
    uint64_t sleeps = 0;
    const std::string stream = synthetic(pcs, sleeps);
    for (const size_t chunk : {size_t(1) << 20, size_t(4099), size_t(5)}) {
        auto source = memory_byte_source(stream, "mem.swo", chunk);
        const mcuprof::core::SampleSet samples = read_swo(*source, {});
        CHECK(samples.pcs == pcs);
        CHECK(samples.without_address.at(sleep_row) == sleeps);
        CHECK(samples.notes.empty());
        CHECK(samples.origin.find("SWO capture mem.swo, " + std::to_string(stream.size()) + " bytes") == 0);
        CHECK(samples.origin.find("pc=10000 sleep=156") != std::string::npos);
        CHECK(samples.origin.find("sync=11") != std::string::npos);
    }
    CHECK(sleeps == 156);
}

TEST_CASE("swo reader: --first keeps the first N samples, sleep samples included")
{
    std::string s = sync_packet + pc_packet(0x08000010) + std::string("\x15\x00", 2) + pc_packet(0x08000020) +
                    pc_packet(0x08000030);
    auto source = memory_byte_source(s, "mem");
    SwoOptions options;
    options.max_samples = 3;
    const mcuprof::core::SampleSet samples = read_swo(*source, options);
    CHECK(samples.pcs == std::vector<uint32_t>{0x08000010, 0x08000020});
    CHECK(samples.without_address.at(sleep_row) == 1);
}

TEST_CASE("swo reader: notes on overflow, bad packets, a cut tail, no sync, no PC samples")
{
    std::string s = sync_packet + pc_packet(0x08000010) + "\x70" + "\x04" + pc_packet(0x08000020) + "\x17\x01";
    auto source = memory_byte_source(s, "mem");
    mcuprof::core::SampleSet samples = read_swo(*source, {});
    CHECK(samples.pcs.size() == 2);
    REQUIRE(samples.notes.size() == 3);
    CHECK(samples.notes[0].find("1 overflow packets") == 0);
    CHECK(samples.notes[1].find("1 bad packets") == 0);
    CHECK(samples.notes[2].find("ends in the middle of a packet") != std::string::npos);

    // With --sync, after the bad packet nothing is decoded until the next sync: here none.
    source = memory_byte_source(s, "mem");
    samples = read_swo(*source, {.wait_for_sync = true});
    CHECK(samples.pcs.size() == 1);
    CHECK(samples.notes.back().find("bytes skipped") != std::string::npos);

    const std::string unsynced = pc_packet(0x08000010);   // the source reads it later: it must outlive the call
    source = memory_byte_source(unsynced, "mem");
    samples = read_swo(*source, {.wait_for_sync = true});
    CHECK(samples.pcs.empty());
    CHECK(samples.notes.front().find("no synchronization packet") == 0);

    const std::string text = sync_packet + "\x01\x41\x01\x42";
    source = memory_byte_source(text, "mem");
    samples = read_swo(*source, {});
    REQUIRE(!samples.notes.empty());
    CHECK(samples.notes.back().find("PCSAMPLENA") != std::string::npos);
}

TEST_CASE("swo reader: a stop flag or a deadline ends the reading")
{
    const std::string stream = sync_packet + pc_packet(0x08000010);
    std::atomic<bool> stop{true};
    auto source = memory_byte_source(stream, "mem");
    SwoOptions options;
    options.stop = &stop;
    const mcuprof::core::SampleSet samples = read_swo(*source, options);
    CHECK(samples.pcs.empty());
    CHECK(samples.notes.back() == "reading stopped by Ctrl-C");
}

TEST_CASE("swo reader: detected from the content")
{
    std::vector<uint32_t> pcs = random_pcs(2000, 2);
    uint64_t sleeps = 0;
    const std::string stream = synthetic(pcs, sleeps);
    CHECK(looks_like_swo(stream));
    CHECK(looks_like_swo(stream.substr(5005, 4096)));   // started mid-packet, no sync first
    CHECK(detect_input(stream) == InputKind::swo);
    CHECK(detect_input(stream.substr(777, 10000)) == InputKind::swo);
    CHECK(!looks_like_swo("prof raw n=3\np 1 2 3\nend\n"));
    CHECK(!looks_like_swo("\x7f" "ELF\x01\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x28\x00"));
    CHECK(!looks_like_swo(""));
    std::string itm_text = sync_packet;   // a printf over ITM port 0 and no PC sampling
    for (char c : std::string("hello, world\n"))
        itm_text += std::string("\x01", 1) + c;
    CHECK(looks_like_swo(itm_text));   // a sync packet first is enough
    std::mt19937 random(3);
    std::string noise(4096, '\0');
    for (char& c : noise)
        c = char(random());
    CHECK(!looks_like_swo(noise));
    CHECK(detect_input("boot\nprof raw n=3\np 1 2 3\n") == InputKind::dump);
}

TEST_CASE("swo reader: from a file, and errors")
{
    const std::vector<uint32_t> pcs = random_pcs(3000, 4);
    uint64_t sleeps = 0;
    const std::string stream = synthetic(pcs, sleeps);
    const std::string path = temp_path("capture.bin");
    std::ofstream(path, std::ios::binary) << stream;
    CHECK(detect_input_file(path) == InputKind::swo);
    const mcuprof::core::SampleSet samples = read_swo(path, {});
    CHECK(samples.pcs == pcs);
    CHECK(samples.origin.find("SWO capture " + path) == 0);
    std::remove(path.c_str());
    CHECK_THROWS_AS(read_swo("/nonexistent/swo.bin", {}), Error);
    CHECK(is_stream_input("-"));
    CHECK(is_stream_input("tcp:localhost:3443"));
    CHECK(!is_stream_input("tcp.bin"));
}

TEST_CASE("swo reader: from a TCP port, until the peer closes or the time is up")
{
    namespace asio = boost::asio;
    using asio::ip::tcp;
    const std::vector<uint32_t> pcs = random_pcs(5000, 5);
    uint64_t sleeps = 0;
    const std::string stream = synthetic(pcs, sleeps);

    for (const bool close_at_end : {true, false}) {
        asio::io_context io;
        tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
        const unsigned short port = acceptor.local_endpoint().port();
        std::atomic<bool> done{false};
        std::thread server([&] {
            tcp::socket peer(io);
            acceptor.accept(peer);
            // In uneven pieces, as a probe's USB packets come.
            for (size_t at = 0; at < stream.size();) {
                const size_t n = std::min<size_t>(stream.size() - at, 1 + at % 997);
                asio::write(peer, asio::buffer(stream.data() + at, n));
                at += n;
            }
            while (!close_at_end && !done)   // OpenOCD keeps the port open
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            boost::system::error_code ignored;
            peer.shutdown(tcp::socket::shutdown_both, ignored);
        });
        SwoOptions options;
        if (!close_at_end)
            options.max_time = std::chrono::milliseconds(600);
        const auto start = std::chrono::steady_clock::now();
        const mcuprof::core::SampleSet samples = read_swo("tcp:127.0.0.1:" + std::to_string(port), options);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        done = true;
        server.join();
        CHECK(samples.pcs == pcs);
        CHECK(samples.origin.find("SWO capture tcp 127.0.0.1:") == 0);
        if (!close_at_end) {
            CHECK(seconds >= 0.5);
            CHECK(seconds < 60.0);   // it stopped by itself (the server keeps the port open); not a timing
        }
    }
}

TEST_CASE("swo reader: the packet listing")
{
    const std::string s = sync_packet + pc_packet(0x080002b4) + std::string("\x15\x00", 2) + "\x0B\x78\x56\x34\x12" +
                          "\x0E\x0F\x10" + "\xBF\xEF\xBE\xAD\xDE" + "\x05\x24" + "\x04";
    auto source = memory_byte_source(s, "mem");
    std::ostringstream out;
    const ItmCounts counts = list_swo_packets(*source, {}, out);
    CHECK(counts.total_packets() == 8);
    CHECK(out.str() ==
          "00000000  sync\n"
          "00000006  pc 0x080002b4\n"
          "0000000b  sleep\n"
          "0000000d  itm port 1 0x12345678 (4 bytes)\n"
          "00000012  exception 15 entered\n"
          "00000015  data-value comparator 3 write 0xdeadbeef (4 bytes)\n"
          "0000001a  event-counter 0x24 sleep postcnt\n"
          "0000001c  bad header 0x04: reserved header\n"
          "# 29 bytes, 0 skipped, 0 truncated; packets: sync=1 overflow=0 local-ts=0 global-ts1=0 global-ts2=0 "
          "extension=0 itm=1 event-counter=1 exception=1 pc=1 sleep=1 data-pc=0 data-address=0 data-value=1 bad=1\n");
}
