#include "mcuprof/sampler/qemu_session.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mcuprof/inputs/error.h"
#include "mcuprof/inputs/text_file.h"
#include "mcuprof/inputs/truth_reader.h"
#include "mcuprof/link/error.h"
#include "mcuprof/link/rsp_client.h"

namespace mcuprof::sources {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

uint16_t free_port()
{
    return free_loopback_port("qemu gdbstub");
}

bool port_was_busy(const QemuProcess& qemu)
{
    const std::string text = qemu.stderr_text();
    return text.find("in use") != std::string::npos;
}

// HMP "info replay" in record mode: "Recording execution 'FILE': instruction count = N".
uint64_t recorded_so_far(transport::RspClient& gdb)
{
    const std::string text = gdb.monitor("info replay");
    const std::optional<uint64_t> count = decimal_after(text, "instruction count = ");
    if (!count)
        throw Error("qemu", "info replay", "unexpected answer '" + text.substr(0, 60) + "'");
    return *count;
}

// Holds back the events of a lost link while a replay is sampled: a replay ended by its
// recorded shutdown closes the gdbstub's connection, which is the end of the run, not a lost
// link (QEMU 7.2 replays that shutdown a little before the last recorded instruction).
class ReplayEndSink : public SampleSink {
public:
    explicit ReplayEndSink(SampleSink& sink) : sink_(sink) {}
    void sample(const LiveSample& s) override { sink_.sample(s); }
    void event(const std::string& kind, const std::string& message) override
    {
        if (kind == "link-lost" || kind == "resume" || kind == "resume-failed")
            held_.emplace_back(kind, message);
        else
            sink_.event(kind, message);
    }
    void task(uint32_t control_block, const std::string& name) override { sink_.task(control_block, name); }
    void progress(const SamplerStats& so_far) override { sink_.progress(so_far); }
    void release()
    {
        for (const auto& [kind, message] : held_)
            sink_.event(kind, message);
        held_.clear();
    }

private:
    SampleSink& sink_;
    std::vector<std::pair<std::string, std::string>> held_;
};

// The replaying QEMU and the sampler on its gdbstub; the session's files live as long.
class QemuReplaySource : public SampleSource {
public:
    QemuReplaySource(std::unique_ptr<QemuSession> session, std::unique_ptr<QemuProcess> qemu,
                     std::unique_ptr<SampleSource> sampler, uint16_t port, bool whole_run)
        : session_(std::move(session)), qemu_(std::move(qemu)), sampler_(std::move(sampler)), port_(port),
          whole_run_(whole_run)
    {
    }
    ~QemuReplaySource() override
    {
        sampler_.reset();   // the GDB connection goes first
        if (qemu_)
            qemu_->stop(std::chrono::milliseconds(0));   // a replay has nothing to write: kill it
    }

    RunHeader run_header() const override
    {
        RunHeader h = sampler_->run_header();
        h.link.source = LinkKind::qemu;   // the GDB sampler's, but of a QEMU mcuprof started and replays
        h.qemu = RunHeader::QemuRun{session_->launch().machine,
                                    command_line(session_->record_command(port_)),
                                    command_line(session_->replay_command(port_)),
                                    recorded().instructions,
                                    recorded().exited,
                                    recorded().exited ? "the firmware exited" : "the instruction budget"};
        return h;
    }

    SamplerStats run(SampleSink& sink, const SamplingPlan& plan, const std::atomic<bool>& stop) override
    {
        SamplingPlan whole = plan;
        whole.instructions = recorded().instructions;   // the replay ends there
        if (whole_run_)
            whole.samples.reset();
        ReplayEndSink guarded(sink);
        SamplerStats stats = sampler_->run(guarded, whole, stop);
        const std::string replay_end = "the end of the recorded run (QEMU replayed its shutdown)";
        if (stats.link_lost && qemu_->wait(std::chrono::seconds(5)) &&
            qemu_->how_it_ended() == "exited with status 0") {
            stats.link_lost = false;
            stats.target_exited = true;
            stats.end_reason = replay_end;
            sink.event("target-exit", replay_end);
            return stats;
        }
        guarded.release();
        if (stats.link_lost && !qemu_->running())
            stats.end_reason += " (QEMU " + qemu_->how_it_ended() + ": " + qemu_->stderr_text() + ")";
        else if (stats.target_exited && !recorded().exited)
            stats.end_reason = replay_end;   // W00: the replayed shutdown, not the firmware's exit
        return stats;
    }

private:
    const RecordedRun& recorded() const { return session_->recorded(); }

    std::unique_ptr<QemuSession> session_;
    std::unique_ptr<QemuProcess> qemu_;
    std::unique_ptr<SampleSource> sampler_;
    uint16_t port_;
    bool whole_run_;
};

} // namespace

// ---------------------------------------------------------------- the process

std::string QemuLaunch::default_program()
{
    const char* program = std::getenv("MCUPROF_QEMU");
    return program != nullptr && *program != '\0' ? program : "qemu-system-arm";
}

std::string QemuProcess::stderr_text() const
{
    // QEMU's "qemu: fatal: ..." (a CPU lockup, say) is followed by a dump of every register,
    // dozens of lines that say nothing to the user: the text keeps what comes before the
    // dump ("R00=" starts it, target/arm/cpu.c's arm_cpu_dump_state).
    std::ifstream in(log_path());
    std::string text, line;
    bool lockup = false;
    while (std::getline(in, line)) {
        if (line.rfind("R00=", 0) == 0)
            break;
        if (line.find("Lockup") != std::string::npos)
            lockup = true;
        std::replace(line.begin(), line.end(), '\r', ' ');
        if (line.find_first_not_of(' ') == std::string::npos)
            continue;
        text += (text.empty() ? "" : " ") + line;
    }
    while (!text.empty() && text.back() == ' ')
        text.pop_back();
    if (text.size() > 400)
        text = "..." + text.substr(text.size() - 400);
    if (lockup)
        text += " (the core locked up: it faulted inside its fault handler, often at the first "
                "instruction when the image was linked for another machine's memory map: is -M/--qemu "
                "the board this ELF was built for?)";
    return text.empty() ? "(nothing on its standard error)" : text;
}

// ---------------------------------------------------------------- the session

QemuSession::QemuSession(QemuLaunch launch) : launch_(std::move(launch))
{
    if (launch_.plugin.empty() || !fs::is_regular_file(launch_.plugin))
        throw Error(launch_.plugin.empty() ? std::string("libtruth.so") : launch_.plugin, "",
                    "the truth plugin is not there: build it (make build) or name it with --truth-plugin");
    std::string pattern = (fs::temp_directory_path() / "mcuprof-qemu-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
        throw Error(pattern, "", std::string("cannot make a working directory: ") + std::strerror(errno));
    workdir_ = pattern;
}

QemuSession::~QemuSession()
{
    std::error_code ignored;
    fs::remove_all(workdir_, ignored);
}

std::vector<std::string> QemuSession::common_command(const std::string& icount, uint16_t gdb_port) const
{
    // -icount shift=0: one instruction is one nanosecond of virtual time, so the run repeats
    // instruction for instruction; semihosting lets the firmware end the run; -S holds the
    // CPU until a debugger (ours) lets it go.
    std::vector<std::string> args = {launch_.program, "-M", launch_.machine, "-nodefaults", "-display", "none",
                                      "-icount", icount, "-kernel", launch_.elf,
                                      "-semihosting-config", "enable=on,target=native",
                                      "-gdb", "tcp:127.0.0.1:" + std::to_string(gdb_port), "-S"};
    args.insert(args.end(), launch_.extra_args.begin(), launch_.extra_args.end());
    return args;
}

std::vector<std::string> QemuSession::record_command(uint16_t gdb_port) const
{
    std::vector<std::string> args = common_command("shift=0,rr=record,rrfile=" + workdir_ + "/run.rr", gdb_port);
    args.push_back("-plugin");
    args.push_back(launch_.plugin + ",outfile=" + workdir_ + "/counts.txt");
    return args;
}

std::vector<std::string> QemuSession::replay_command(uint16_t gdb_port) const
{
    return common_command("shift=0,rr=replay,rrfile=" + workdir_ + "/run.rr", gdb_port);
}

std::unique_ptr<QemuProcess> QemuSession::start(const std::vector<std::string>& args, const char* phase)
{
    return std::make_unique<QemuProcess>(args, workdir_ + "/" + phase + ".stderr");
}

namespace {

// Connects `attempt` to QEMU's gdbstub as soon as it listens. Returns nothing when QEMU
// exited first (the caller reads why); throws when it neither listens nor exits in time.
template <typename Connect>
auto connect_when_listening(QemuProcess& qemu, uint16_t port, const char* phase, Connect attempt)
    -> decltype(attempt(transport::Endpoint{}))
{
    transport::Endpoint gdb;
    gdb.port = port;
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(30);
    while (true) {
        try {
            return attempt(gdb);
        } catch (const transport::Error& e) {
            if (e.kind() != transport::Error::Kind::connect)
                throw;
        }
        if (!qemu.running())
            return {};
        if (Clock::now() >= deadline)
            throw Error("qemu", phase, "QEMU did not open its gdbstub on port " + std::to_string(port) +
                                            " within 30 s: " + qemu.stderr_text());
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

// QEMU would not start recording: its own reason, or the one users meet most, said plainly.
[[noreturn]] void refuse_record(QemuProcess& qemu, const std::string& program)
{
    // QEMU refuses record/replay on a machine of several cores ("Record/replay feature is not
    // supported for 'smp'", QEMU 7.2; "Record/replay is not supported with multiple CPUs", QEMU
    // 10): no exact pacing for any core, and never core 0's profile shown as the chip's.
    const std::string said = qemu.stderr_text();
    if (said.find("not supported for 'smp'") != std::string::npos ||
        said.find("not supported with multiple CPUs") != std::string::npos)
        throw Error(program, "record",
                    "the machine has more than one core, and QEMU cannot record and replay a multi-core "
                    "machine: sample every core at each halt with record --gdb on QEMU's own gdbstub "
                    "(-gdb tcp::1234), and count them with the truth plugin in QEMU itself (-plugin "
                    "libtruth.so,outfile=FILE counts each core apart); docs/live.md, \"Several cores\"");
    throw Error(program, "record", "QEMU " + qemu.how_it_ended() + ": " + said);
}

// Lets the recording run, halting it now and then to read how far it got, until the firmware
// exits (true) or the budget is reached and QEMU told to quit (false): the waits shrink as the
// budget comes near, so the run ends little past it. Ctrl-C (`stop`) ends QEMU and throws.
bool record_until_budget(transport::RspClient& gdb, uint64_t budget, RecordedRun& run, const std::atomic<bool>& stop)
{
    Clock::duration wait = std::chrono::milliseconds(10);
    double running_seconds = 0;
    uint64_t before = 0;
    while (true) {
        const Clock::time_point resumed = Clock::now();
        gdb.resume();
        std::optional<transport::StopReply> reply = gdb.poll_stop(wait);
        if (!reply)
            reply = gdb.interrupt();
        running_seconds += std::chrono::duration<double>(Clock::now() - resumed).count();
        if (reply->kind != transport::StopReply::Kind::signal)
            return true;   // the firmware's exit: QEMU ends by itself
        if (stop.load()) {
            gdb.monitor("quit");
            throw Error("qemu", "record", "interrupted while QEMU recorded the run; nothing was sampled");
        }
        const uint64_t so_far = recorded_so_far(gdb);
        run.longest_stretch = std::max(run.longest_stretch, so_far - std::min(so_far, before));
        before = so_far;
        if (so_far >= budget) {
            try {
                gdb.monitor("quit");   // QEMU shuts down: the counts are written, the log closed
            } catch (const transport::Error&) {
                // it may close the connection before it answers
            }
            return false;
        }
        const double rate = so_far / std::max(running_seconds, 1e-3);
        const double left = rate > 0 ? (budget - so_far) / rate : 0.05;
        wait = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::clamp(left, 0.002, 0.5)));
    }
}

// A census of a part of the run says so in it, with how far past the budget QEMU went (in
// record mode it stops only between its runs of instructions: up to 2^31 in firmware without a
// timer interrupt).
void mark_cut_run(const RecordedRun& run, uint64_t budget)
{
    std::ofstream counts(run.counts_path, std::ios::app);
    const bool far_past = run.instructions > budget + budget / 2;
    counts << cut_run_marker << ": " << budget << " instructions asked, " << run.instructions << " executed"
           << (far_past ? " (QEMU recording stops a run only between its blocks of instructions, which in "
                          "firmware without interrupts can be 2^31 long)"
                        : "")
           << '\n';
    if (!counts)
        throw Error(run.counts_path, "", "cannot write the census's end");
}

} // namespace

const RecordedRun& QemuSession::record(const std::atomic<bool>& stop)
{
    RecordedRun run;
    run.counts_path = workdir_ + "/counts.txt";
    run.log_path = workdir_ + "/run.rr";
    for (int attempt = 1;; ++attempt) {
        const uint16_t port = free_port();
        std::unique_ptr<QemuProcess> qemu = start(record_command(port), "record");
        std::unique_ptr<transport::RspClient> gdb =
            connect_when_listening(*qemu, port, "record", [](const transport::Endpoint& at) {
                transport::RspClient::Options options;
                // QEMU 7.2 in record mode takes an interrupt only between its runs of
                // instructions (up to 2^31 of them in firmware without timer interrupts).
                options.timeout = std::chrono::seconds(300);
                return std::make_unique<transport::RspClient>(at, options);
            });
        if (!gdb) {
            if (port_was_busy(*qemu) && attempt < 3)
                continue;
            refuse_record(*qemu, launch_.program);
        }
        try {
            gdb->handshake();
            run.exited = record_until_budget(*gdb, launch_.instruction_budget, run, stop);
        } catch (const transport::Error& e) {
            // The connection closed as the firmware exited: QEMU's status says how it went.
            gdb.reset();
            if (!qemu->wait(std::chrono::seconds(10)) || qemu->how_it_ended().rfind("exited", 0) != 0)
                throw Error(launch_.program, "record", std::string(e.what()) + "; QEMU " + qemu->how_it_ended() + ": " +
                                                           qemu->stderr_text());
            run.exited = true;
        }
        gdb.reset();
        if (!qemu->wait(std::chrono::seconds(60)))
            throw Error(launch_.program, "record", "QEMU did not end within 60 s of the end of the run");
        if (qemu->how_it_ended().rfind("exited", 0) != 0)
            throw Error(launch_.program, "record", "QEMU " + qemu->how_it_ended() + ": " + qemu->stderr_text());
        break;
    }
    const core::SampleSet census = read_truth(run.counts_path);
    run.instructions = census.run_instructions.value_or(0);
    if (run.instructions == 0)
        throw Error(launch_.elf, "", "the firmware executed no instruction under QEMU");
    if (!run.exited)
        mark_cut_run(run, launch_.instruction_budget);
    recorded_ = run;
    return *recorded_;
}

const RecordedRun& QemuSession::recorded() const
{
    if (!recorded_)
        throw Error("qemu", "replay", "nothing was recorded to replay");
    return *recorded_;
}

std::unique_ptr<QemuProcess> QemuSession::start_replay(uint16_t gdb_port)
{
    return start(replay_command(gdb_port), "replay");
}

std::unique_ptr<SampleSource> replay_for_sampling(
    std::unique_ptr<QemuSession> session, bool whole_run,
    const std::function<std::unique_ptr<SampleSource>(const transport::Endpoint& gdb)>& connect)
{
    if (const uint64_t stretch = session->recorded().longest_stretch; stretch > uint64_t(INT32_MAX))
        throw Error(session->launch().elf, "qemu record",
                    "QEMU recorded " + std::to_string(stretch) +
                        " instructions without a stop (the firmware takes no interrupt, and QEMU's record mode "
                        "stops a run only after 2^31 of them), and it cannot replay so long a stretch: no "
                        "sample could be taken. Give the firmware a timer interrupt, or sample it with "
                        "--gdb on a QEMU of its own (wall-clock halts, biased by QEMU's host time)");
    for (int attempt = 1;; ++attempt) {
        const uint16_t port = free_port();
        std::unique_ptr<QemuProcess> qemu = session->start_replay(port);
        std::unique_ptr<SampleSource> sampler = connect_when_listening(*qemu, port, "replay", connect);
        if (sampler)
            return std::make_unique<QemuReplaySource>(std::move(session), std::move(qemu), std::move(sampler), port,
                                                      whole_run);
        if (!(port_was_busy(*qemu) && attempt < 3))
            throw Error(session->launch().program, "replay",
                        "QEMU " + qemu->how_it_ended() + ": " + qemu->stderr_text());
    }
}

std::string find_truth_plugin(const std::string& relative_install_dir)
{
    std::error_code error;
    const fs::path self = fs::read_symlink("/proc/self/exe", error);
    if (error)
        return {};
    for (const fs::path& candidate :
         {self.parent_path() / "libtruth.so", self.parent_path() / relative_install_dir / "libtruth.so"})
        if (fs::is_regular_file(candidate, error))
            return fs::weakly_canonical(candidate, error).string();
    return {};
}

} // namespace mcuprof::sources