#pragma once
// The run header: the JSON object at the head of every recording (docs/formats.md,
// "Recording"), which says how the run was sampled, over which link, of which firmware.
// docs/schema/run-header.schema.json is the whole of it, and the codec below (run_header.cc)
// is the only code that writes or reads its keys. Each layer fills its own part: the target
// adapter the link (HaltingTarget::link_header), the live sampler the method, pacing and
// warnings (LiveSampler), the --qemu session its recorded run, the recording the images and
// the start (recording_header).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcuprof/image/firmware.h"

namespace mcuprof::sources {

enum class LinkKind { gdb, openocd, qemu, stlink };   // "source": qemu is a QEMU that --qemu started and replays
// "method": a halt, a DWT_PCSR read of the running core, or the DWT's own periodic PC sample
// sent over SWO (ARMv7-M ARM C1.8.6, DWT_CTRL.PCSAMPLENA).
enum class SampleMethod { halt, pcsr, swo };
enum class PacingClock { wall, icount };      // what the waits between samples count
enum class IntervalShape { exponential, uniform, fixed };   // the waits' distribution (IntervalGenerator)
enum class PacedBetween { samples, batches };  // what the waits separate: halts, or batches of DWT_PCSR reads
// How a halt stops the cores of a multi-core target: at one instant (QEMU's gdbstub), or one
// after another with each stop's bounds after core 0's in the samples, or one after another untimed.
enum class CoreSkew { none, measured, not_measured };

const char* to_string(LinkKind kind);
const char* to_string(SampleMethod method);

// The variable read at every halt (record --by var:NAME): its place, size and the names of its
// values, from the ELF's DWARF.
struct RecordedVariable {
    std::string name;
    uint32_t address = 0;
    uint32_t size = 0;          // 1, 2 or 4 bytes
    bool is_signed = false;
    std::map<uint32_t, std::string> names;   // an enumeration's values (their bits) -> enumerator

    // The bits of the value, by its size.
    uint32_t mask() const { return size >= 4 ? 0xFFFFFFFFu : (1u << (8 * size)) - 1; }
    // The value's name: its enumerator, else the number (signed where the type is).
    std::string name_of(uint32_t bits) const;
};

struct RunHeader {
    // One core of a multi-core target, sampled at every halt.
    struct Core {
        uint32_t core = 0;                   // as in the samples' flags (bits 8-15)
        std::string name;                    // the reports' name: "core 1 (thread p02.02)"
        std::optional<std::string> thread;   // QEMU's gdbstub: the core's thread id
        std::optional<std::string> target;   // OpenOCD: the core's target
    };
    struct CoreStops {
        CoreSkew skew = CoreSkew::not_measured;
        std::string how;   // how the link stops the cores, in words
    };
    // What the target adapter says of its link.
    struct Link {
        std::optional<LinkKind> source;
        std::optional<std::string> gdb;       // the GDB server's address as given
        std::optional<std::string> openocd;   // OpenOCD's Tcl port as given
        std::optional<std::string> stlink;    // the stlink-server's address as given (--stlink)
        std::optional<std::string> stlink_probe;   // which ST-Link, its firmware, through what
        bool server_is_qemu = false;          // "server": the GDB server is QEMU's gdbstub
        std::optional<std::string> target;    // OpenOCD's current target, the one sampled
        std::optional<uint64_t> targets;      // how many targets OpenOCD has
        std::optional<std::string> target_selection;   // which of OpenOCD's targets, and how
        std::optional<std::string> round_trip;         // what one round trip (Tcl eval, sample of USB commands) does
        std::vector<Core> cores;                       // a multi-core target; empty for one core
        std::optional<CoreStops> core_stops;           // a multi-core target
    };
    // The random waits between samples.
    struct Pacing {
        PacingClock clock = PacingClock::wall;
        IntervalShape shape = IntervalShape::exponential;
        std::optional<double> mean_seconds;        // clock wall
        std::optional<double> mean_instructions;   // clock icount
        std::optional<PacedBetween> between;       // clock wall
        std::optional<unsigned> batch;             // DWT_PCSR reads per round trip
        std::optional<std::string> note;           // what is not random
        std::optional<double> jitter;              // shape uniform: mean * (1 +- jitter)
        std::optional<double> max_halted;          // --max-halted, a fraction of the wall time
    };
    // --qemu: the run QEMU recorded, which mcuprof replayed.
    struct QemuRun {
        std::string machine;
        std::string record;   // the command lines
        std::string replay;
        std::optional<uint64_t> instructions;   // the recorded run's count
        bool exited = false;   // the firmware ended the run: `instructions` is the whole run's
        std::string run_end;
    };
    // --chip/--probe: the OpenOCD mcuprof started for the run, and stopped after it.
    struct OpenocdRun {
        std::string chip;      // target/CHIP.cfg
        std::string probe;     // --probe, as OpenocdProbe::text spells it
        std::string command;   // its command line
    };
    // One image the target ran.
    struct Image {
        std::string elf;        // its path as given
        std::string elf_path;   // absolute; empty in recordings made before it was stored
        std::optional<core::FirmwareIdentity> elf_identity;
    };

    Link link;
    std::optional<SampleMethod> method;
    std::optional<uint64_t> seed;
    std::optional<Pacing> pacing;
    std::optional<std::string> qmp;     // --pace icount: the QMP port the instruction count came from
    std::optional<std::string> probe;   // "mcuprof vprobe": the probe behind OpenOCD is mcuprof's virtual one
    std::optional<std::string> bias;    // the warning every report shows (kind emulator-bias)
    std::optional<RecordedVariable> variable;
    std::optional<QemuRun> qemu;
    std::optional<OpenocdRun> openocd_run;
    // The main image first ("elf", "elf_path", "elf_identity"), then the others ("more_elves").
    std::vector<Image> images;
    std::optional<int64_t> started;     // Unix seconds
    // Older recordings: the tasks' names by control block (now task events).
    std::map<uint32_t, std::string> tasks;

    // Whether the samples are instants of time (halts by wall clock, DWT_PCSR reads), which can
    // find the core asleep, or executed instructions (icount pacing), which cannot
    // (core::SampleSet::measures_time); a header without pacing is of time.
    bool measures_time() const;
    // DWT_PCSR reads rather than halts.
    bool reads_pcsr() const;
    // Halts, which read xPSR with the PC (a header without a method is of halts).
    bool halts() const { return !method || *method == SampleMethod::halt; }
};

// The header's JSON, every key as docs/schema/run-header.schema.json has it.
nlohmann::json to_json(const RunHeader& header);
nlohmann::json to_json(const RunHeader::Pacing& pacing);
// A header as a recording holds it, made by any version: a key that is missing, of the wrong
// type or of a value this version does not know is left out (as is an entry of a list or map
// that is not of its form), so that a damaged header never stops a report. Never throws.
RunHeader run_header_from_json(const nlohmann::json& json);

} // namespace mcuprof::sources
