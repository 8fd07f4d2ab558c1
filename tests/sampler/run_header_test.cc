// The run header's codec (inputs/run_header.h) and the parts each layer fills: headers as
// today's writers wrote them for real runs read and written back byte for byte, the live
// sampler's part from its options, and damaged headers read as far as they are whole.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "../inputs/kept_headers.h"
#include "mcuprof/inputs/recording.h"
#include "mcuprof/inputs/run_header.h"
#include "mcuprof/sampler/sampling_loop.h"
#include "mcuprof/link/error.h"
#include "mcuprof/vprobe_signature.h"

using namespace mcuprof;
using namespace mcuprof::sources;
using tests::kept;

namespace {

std::string file_text(const std::filesystem::path& path)
{
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A link that answers nothing but its header: what LiveSampler adds to it is under test.
class LinkOnly : public HaltingTarget {
public:
    explicit LinkOnly(RunHeader::Link link, std::string memory = {}) : link_(std::move(link)), memory_(std::move(memory)) {}
    RunHeader::Link link_header() const override { return link_; }
    std::string server() const override { return "the link"; }
    std::string peer() const override { return "link"; }
    void start(TargetEvents&) override {}
    void resume() override {}
    Halt halt_and_read(const HaltRequest&) override { return {}; }
    HaltState read_halt_state(const HaltRequest&) override { return {}; }
    std::string read_memory(uint32_t, uint32_t) override { return memory_; }
    bool link_survives(const transport::Error&) const override { return true; }
    void leave_running(TargetEvents&, bool) override {}

private:
    RunHeader::Link link_;
    std::string memory_;   // what every read gives: the vprobe's two words, or nothing
};

RunHeader::Link gdb_link(bool qemu)
{
    RunHeader::Link link;
    link.source = LinkKind::gdb;
    link.gdb = "127.0.0.1:1234";
    link.server_is_qemu = qemu;
    return link;
}

nlohmann::json sampler_header(RunHeader::Link link, const PacingOptions& pacing, const HaltExtras& extras = {},
                              std::string memory = {})
{
    LiveSampler sampler(std::make_unique<LinkOnly>(std::move(link), std::move(memory)), pacing, extras,
                        std::chrono::seconds(1));
    return to_json(kept(sampler.run_header()));
}

const std::string bias =
    "QEMU halted by wall clock: the emulator's cost per instruction differs from the hardware's, so the halts land "
    "in proportion to QEMU's host time, not to target cycles (exception entry, device accesses and the ends of "
    "translation blocks get too many samples); for exact shares sample with --qemu MACHINE, or with --pace icount "
    "on a QEMU record/replay run (docs/live.md)";

} // namespace

TEST_CASE("run header: the headers mcuprof wrote for real runs read back and write again byte for byte")
{
    // tests/data/run_headers: one header of each link and mode, as record wrote them before the
    // header was typed (--qemu, two images, a variable, two cores on QEMU's gdbstub, wall and
    // icount pacing over GDB, OpenOCD halt, pcsr and stacks through the vprobe, OpenOCD's GDB
    // port, two OpenOCD targets).
    size_t count = 0;
    for (const auto& entry : std::filesystem::directory_iterator(TEST_SOURCE_DIR "/data/run_headers")) {
        const std::string text = file_text(entry.path());
        const RunHeader header = run_header_from_json(nlohmann::json::parse(text));
        CAPTURE(entry.path().filename().string());
        CHECK(to_json(kept(header)).dump() == text);
        ++count;
    }
    CHECK(count >= 10);
    // The golden test's recordings (tests/golden/inputs) likewise: the header of each, after the
    // 16 bytes of magic, version and length (docs/formats.md).
    size_t recordings = 0;
    for (const auto& entry : std::filesystem::directory_iterator(TEST_SOURCE_DIR "/golden/inputs")) {
        if (entry.path().extension() != ".rec")
            continue;
        const std::string bytes = file_text(entry.path());
        REQUIRE(bytes.size() >= 16);
        const uint32_t length = uint32_t(uint8_t(bytes[12])) | uint32_t(uint8_t(bytes[13])) << 8 |
                                uint32_t(uint8_t(bytes[14])) << 16 | uint32_t(uint8_t(bytes[15])) << 24;
        const std::string text = bytes.substr(16, length);
        CAPTURE(entry.path().filename().string());
        CHECK(to_json(run_header_from_json(nlohmann::json::parse(text))).dump() == text);
        ++recordings;
    }
    CHECK(recordings >= 5);

    const std::string pair = file_text(TEST_SOURCE_DIR "/data/run_headers/qemu_pair.json");
    const RunHeader header = run_header_from_json(nlohmann::json::parse(pair));
    CHECK(header.link.source == LinkKind::qemu);
    CHECK(header.link.server_is_qemu);
    CHECK(header.method == SampleMethod::halt);
    CHECK_FALSE(header.measures_time());   // icount
    REQUIRE(header.images.size() == 2);
    CHECK(header.images[1].elf_path.find("vendor_app_m4.elf") != std::string::npos);
    const RecordedFirmware firmware = recorded_firmware(header);
    CHECK(firmware.path.find("vendor_boot_m4.elf") != std::string::npos);
    REQUIRE(firmware.more.size() == 1);
    CHECK(firmware.more[0].identity == header.images[1].elf_identity);
    REQUIRE(header.qemu);
    CHECK(header.qemu->exited);
    CHECK(header.qemu->instructions == 1321937u);
}

TEST_CASE("run header: the live sampler's part, from its pacing, the link and the probe behind it")
{
    PacingOptions wall;
    wall.seed = 7;
    // QEMU's gdbstub halted by wall clock: the bias.
    CHECK(sampler_header(gdb_link(true), wall) ==
          nlohmann::json{{"source", "gdb"},
                         {"gdb", "127.0.0.1:1234"},
                         {"server", "qemu"},
                         {"method", "halt"},
                         {"seed", 7},
                         {"pacing", {{"clock", "wall"}, {"shape", "exponential"}, {"mean_seconds", 1e-3}, {"between", "samples"}}},
                         {"bias", bias}});
    // Another server: no bias, unless its memory holds the vprobe's two words ("mcup", "vprb").
    CHECK_FALSE(sampler_header(gdb_link(false), wall).contains("bias"));
    const std::string signature(reinterpret_cast<const char*>(vprobe_signature::words), sizeof vprobe_signature::words);
    const nlohmann::json vprobe = sampler_header(gdb_link(false), wall, {}, signature);
    CHECK(vprobe["probe"] == "mcuprof vprobe");
    CHECK(vprobe["bias"] == std::string(vprobe_bias_prefix) + bias);

    PacingOptions pcsr;
    pcsr.pacing = Pacing::pcsr;
    pcsr.seed = 1;
    pcsr.batch = 8;
    pcsr.shape = IntervalShape::uniform;
    pcsr.jitter = 0.25;
    pcsr.interval = 0.002;
    const nlohmann::json read = sampler_header(gdb_link(false), pcsr);
    CHECK(read["method"] == "pcsr");
    CHECK(read["pacing"] ==
          nlohmann::json{{"clock", "wall"}, {"shape", "uniform"}, {"mean_seconds", 0.002}, {"between", "batches"},
                         {"batch", 8}, {"jitter", 0.25},
                         {"note", "DWT_PCSR is read 8 times back to back by a loop in OpenOCD's Tcl, which cannot "
                                  "randomize; only the host-side waits between batches are random"}});

    PacingOptions halted = wall;
    halted.max_halted = 0.5;
    HaltExtras extras;
    WatchedVariable state;
    state.name = "app_state";
    state.address = 0x20000010;
    state.size = 1;
    state.names = {{0, "IDLE"}, {255, "FAULT"}};
    extras.variable = state;
    const nlohmann::json watched = sampler_header(gdb_link(false), halted, extras);
    CHECK(watched["pacing"]["max_halted"] == 0.5);
    CHECK(watched["variable"] == nlohmann::json{{"name", "app_state"}, {"address", "0x20000010"}, {"size", 1},
                                                {"signed", false}, {"values", {{"0", "IDLE"}, {"255", "FAULT"}}}});
}

TEST_CASE("run header: every part written and read back")
{
    RunHeader h;
    h.link.source = LinkKind::openocd;
    h.link.openocd = "127.0.0.1:6666";
    h.link.target = "a.cpu";
    h.link.targets = 2;
    h.link.target_selection = "both";
    h.link.round_trip = "one Tcl eval";
    h.link.cores = {{0, "core 0 (a.cpu)", std::nullopt, "a.cpu"}, {1, "core 1 (b.cpu)", std::nullopt, "b.cpu"}};
    h.link.core_stops = RunHeader::CoreStops{CoreSkew::measured, "back to back"};
    h.method = SampleMethod::halt;
    h.seed = 3;
    h.pacing = RunHeader::Pacing{};
    h.pacing->clock = PacingClock::icount;
    h.pacing->shape = IntervalShape::fixed;
    h.pacing->mean_instructions = 20000.0;
    h.qmp = "127.0.0.1:4444";
    h.variable = RecordedVariable{"level", 0x20000004, 2, true, {}};
    h.images = {{"fw.elf", "/b/fw.elf", core::FirmwareIdentity{"build-id", "00ff"}},
                {"app.elf", "/b/app.elf", core::FirmwareIdentity{"sha256", "ab"}}};
    h.started = 1796608035;
    h.tasks = {{0x20000100, "motor"}};
    const nlohmann::json j = to_json(kept(h));
    CHECK(j["pacing"].dump() == R"({"clock":"icount","mean_instructions":20000.0,"shape":"fixed"})");
    CHECK(j["core_stops"] == nlohmann::json{{"skew", "measured"}, {"how", "back to back"}});
    CHECK(j["more_elves"] == nlohmann::json::array(
                                 {{{"elf", "app.elf"}, {"elf_path", "/b/app.elf"},
                                   {"elf_identity", {{"kind", "sha256"}, {"value", "ab"}}}}}));
    CHECK(j["tasks"] == nlohmann::json{{"0x20000100", "motor"}});
    CHECK(to_json(run_header_from_json(j)) == j);

    RunHeader q;
    q.link.source = LinkKind::qemu;
    q.link.core_stops = RunHeader::CoreStops{CoreSkew::not_measured, "untimed"};
    q.qemu = RunHeader::QemuRun{"mps2-an505", "record", "replay", 10, false, "the instruction budget"};
    const nlohmann::json k = to_json(kept(q));
    CHECK(k["core_stops"]["skew"] == "not measured");
    CHECK(k["qemu"] == nlohmann::json{{"machine", "mps2-an505"}, {"record", "record"}, {"replay", "replay"},
                                      {"instructions", 10}, {"exited", false}, {"run_end", "the instruction budget"}});
    CHECK(to_json(run_header_from_json(k)) == k);
}

TEST_CASE("run header: older and damaged headers read as far as they are whole, never an error")
{
    // The oldest recordings: a link and a method, no firmware.
    const RunHeader oldest = run_header_from_json({{"source", "gdb"}, {"method", "halt"}});
    CHECK(oldest.link.source == LinkKind::gdb);
    CHECK(oldest.images.empty());
    CHECK(recorded_firmware(oldest).path.empty());
    CHECK(oldest.measures_time());
    // The ELF as given, before its absolute path and identity were stored: firmware unknown.
    const RunHeader given = run_header_from_json({{"source", "gdb"}, {"elf", "fw.elf"}});
    REQUIRE(given.images.size() == 1);
    CHECK(recorded_firmware(given).path.empty());
    CHECK_FALSE(recorded_firmware(given).identity);

    // Every key of the wrong type, or of a value this version does not know: left out.
    const nlohmann::json damaged = nlohmann::json::parse(R"({
        "source": "jtag", "method": 1, "gdb": 2, "server": true, "targets": -1, "seed": "x",
        "cores": [{"name": "no number"}, 5], "core_stops": "all", "pacing": 7, "bias": [1],
        "variable": {"name": "v", "size": 3}, "qemu": "run", "elf_identity": "abc",
        "more_elves": [1, "x"], "started": 1.5, "tasks": {"nothex": "a", "0x20000100": 5}})");
    const RunHeader read = run_header_from_json(damaged);
    CHECK_FALSE(read.link.source);
    CHECK_FALSE(read.method);
    CHECK_FALSE(read.link.server_is_qemu);
    CHECK(read.link.cores.empty());
    CHECK_FALSE(read.link.core_stops);
    CHECK_FALSE(read.pacing);
    CHECK_FALSE(read.bias);
    CHECK_FALSE(read.variable);
    CHECK_FALSE(read.qemu);
    CHECK_FALSE(read.started);
    CHECK(read.tasks.empty());
    CHECK(recorded_firmware(read).path.empty());
    CHECK_FALSE(recorded_firmware(read).identity);
    CHECK(to_json(run_header_from_json(nlohmann::json::array())) == nlohmann::json::object());

    // Inside an object of the right type, a member of the wrong one takes its default.
    const RunHeader partly = run_header_from_json(nlohmann::json::parse(
        R"({"pacing": {"clock": "icount"}, "cores": [{"core": 1}], "core_stops": {"skew": "sideways"},
            "qemu": {"instructions": "many", "exited": true}})"));
    CHECK_FALSE(partly.measures_time());
    REQUIRE(partly.link.cores.size() == 1);
    CHECK(partly.link.cores[0].name == "core 1");
    REQUIRE(partly.link.core_stops);
    CHECK(partly.link.core_stops->skew == CoreSkew::not_measured);
    REQUIRE(partly.qemu);
    CHECK_FALSE(partly.qemu->instructions);
}
