#pragma once
// QEMU started and stopped by mcuprof itself, for an exact profile with one command
// (record --qemu, top --qemu, truth --qemu; docs/live.md, "One command").
//
// The run is recorded once (-icount shift=0,rr=record) with the truth plugin counting every
// instruction, until the firmware exits (ARM semihosting) or a budget of instructions is
// reached; then it is replayed (rr=replay) with the gdbstub open, halted, for a sampler that
// stops it at exact instruction counts (replay_break). Every QEMU this starts runs in its own
// process group (a terminal's Ctrl-C reaches mcuprof only, which then ends it), is killed if
// mcuprof dies (PR_SET_PDEATHSIG), and is stopped and reaped when its owner goes: nothing is
// left running on any path.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mcuprof/sampler/child_process.h"
#include "mcuprof/sampler/live.h"
#include "mcuprof/link/tcp_connection.h"

namespace mcuprof::sources {

struct QemuLaunch {
    std::string program = "qemu-system-arm";   // $MCUPROF_QEMU overrides it (see default_program)
    std::string machine;                         // -M
    std::string elf;                             // -kernel
    std::vector<std::string> extra_args;         // given to the recording and the replay alike
    std::string plugin;                          // the truth plugin (libtruth.so)
    // The recorded run ends once it has executed this many instructions, unless the firmware
    // exits sooner. Checked while the run is halted now and then over the gdbstub, so it ends
    // past the budget: where QEMU in record mode can next be halted (the end of its current
    // stretch of instructions, at its next timer deadline).
    uint64_t instruction_budget = 200'000'000;

    static std::string default_program();
};

// One QEMU process, its standard error kept in a file that errors quote.
class QemuProcess : public ChildProcess {
public:
    using ChildProcess::ChildProcess;
    // QEMU's standard error on one line (the last 400 characters), without the register
    // dump that follows a fatal error, with a hint when the core locked up.
    std::string stderr_text() const;
};

// What the recorded run was.
struct RecordedRun {
    uint64_t instructions = 0;         // executed, by the truth plugin's census
    bool exited = false;               // the firmware ended it (semihosting exit), not the budget
    // The longest stretch QEMU ran between two of the recorder's halts. Record mode stops a
    // run only between its blocks of instructions, which in firmware without interrupts are
    // 2^31 long; QEMU's replay reads a stretch longer than INT32_MAX as a negative count and
    // ends the replay at the first stop past its first 65535 instructions (measured on QEMU
    // 7.2.22 and 10.0: every sample lost), so such a recording cannot be sampled.
    uint64_t longest_stretch = 0;
    std::string counts_path;           // the census: "0xADDR COUNT" lines (mcuprof truth reads them)
    std::string log_path;              // the record/replay log
};

class QemuSession {
public:
    // Makes a private working directory; checks that the ELF, the plugin and QEMU exist.
    explicit QemuSession(QemuLaunch launch);
    ~QemuSession();   // removes the working directory
    QemuSession(const QemuSession&) = delete;
    QemuSession& operator=(const QemuSession&) = delete;

    // Runs the firmware once under record mode with the truth plugin, to its exit or the
    // budget. `stop` (Ctrl-C) ends it early with an error. Throws sources::Error with QEMU's
    // own words when QEMU fails.
    const RecordedRun& record(const std::atomic<bool>& stop);

    // The recorded run (after record()).
    const RecordedRun& recorded() const;

    // Starts a QEMU that replays the recorded run, the gdbstub on `gdb_port`, halted.
    std::unique_ptr<QemuProcess> start_replay(uint16_t gdb_port);

    // The QEMU command lines, as a user would type them (for the recording's header and docs).
    std::vector<std::string> record_command(uint16_t gdb_port) const;
    std::vector<std::string> replay_command(uint16_t gdb_port) const;

    const QemuLaunch& launch() const { return launch_; }

private:
    std::vector<std::string> common_command(const std::string& icount, uint16_t gdb_port) const;
    std::unique_ptr<QemuProcess> start(const std::vector<std::string>& args, const char* phase);

    QemuLaunch launch_;
    std::string workdir_;
    std::optional<RecordedRun> recorded_;
};

// Starts the replay of the session's recorded run with the gdbstub on a free port, halted,
// and returns the sampler `connect` builds on it (tried again while QEMU opens its port). The
// returned source owns the session and the replaying QEMU, and stops QEMU when it goes; its
// run ends at the end of the recorded run (with `whole_run`, there and not at the plan's
// sample count: the interval was chosen to spread the samples over it), and its header
// names the QEMU command lines.
std::unique_ptr<SampleSource> replay_for_sampling(
    std::unique_ptr<QemuSession> session, bool whole_run,
    const std::function<std::unique_ptr<SampleSource>(const transport::Endpoint& gdb)>& connect);

// The truth plugin shipped with the tool: beside the executable (the build tree), else in
// the installed prefix's library folder (`relative_install_dir`, relative to the executable's
// folder). Empty when neither exists.
std::string find_truth_plugin(const std::string& relative_install_dir);

} // namespace mcuprof::sources
