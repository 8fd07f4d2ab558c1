#pragma once
// A target that replays halts recorded from a QEMU run (tests/data/recorded_halts/, written by
// record_halts.py there; layout in docs/testing.md, "Recorded halts"), for unit tests of the
// sampling loop, the stack reader and the unwinder without QEMU. Each halt the loop asks for
// is the next recorded one: its registers, and reads of the memory saved at it (a read that
// starts outside what was saved is refused, as a target refuses unmapped memory; one that
// runs past it gets what was saved). As over QEMU 7.2's gdbstub, the halt's registers hold
// no MSP or PSP unless `banked_in_halt`; read_stack_pointer gives the recorded ones. When
// the recording is used up, the target says it stopped by itself.
#include <cstdint>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcuprof/target/halting_target.h"
#include "mcuprof/link/error.h"

namespace fakes {

struct RecordedHalt {
    uint64_t icount = 0;                          // QEMU's instruction count at the halt
    mcuprof::core::CoreRegisters registers;       // with msp and psp where recorded
    std::map<uint32_t, std::string> memory;       // start -> bytes saved at the halt
    nlohmann::json oracle;                        // gdb's backtrace and the running task
};

struct RecordedHalts {
    std::string elf;                              // the image the halts belong to
    std::vector<RecordedHalt> halts;
};

inline std::string bytes_from_hex(const std::string& hex)
{
    std::string bytes;
    for (size_t i = 0; i + 1 < hex.size(); i += 2)
        bytes.push_back(char(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return bytes;
}

// Reads NAME.json of tests/data/recorded_halts/ (`directory`); the ELF is NAME.elf beside it.
inline RecordedHalts load_recorded_halts(const std::string& directory, const std::string& name)
{
    std::ifstream in(directory + "/" + name + ".json");
    if (!in)
        throw std::runtime_error("cannot read " + directory + "/" + name + ".json");
    const nlohmann::json doc = nlohmann::json::parse(in);
    RecordedHalts out;
    out.elf = directory + "/" + doc.at("image").get<std::string>();
    for (const nlohmann::json& h : doc.at("halts")) {
        RecordedHalt halt;
        halt.icount = h.at("icount").get<uint64_t>();
        const nlohmann::json& regs = h.at("registers");
        for (size_t i = 0; i < 16; ++i)
            halt.registers.r[i] = regs.at("r").at(i).get<uint32_t>();
        halt.registers.xpsr = regs.at("xpsr").get<uint32_t>();
        if (!regs.at("msp").is_null())
            halt.registers.msp = regs.at("msp").get<uint32_t>();
        if (!regs.at("psp").is_null())
            halt.registers.psp = regs.at("psp").get<uint32_t>();
        for (const nlohmann::json& range : h.at("memory"))
            halt.memory[range.at(0).get<uint32_t>()] = bytes_from_hex(range.at(1).get<std::string>());
        halt.oracle = h.at("oracle");
        out.halts.push_back(std::move(halt));
    }
    return out;
}

class RecordedTarget : public mcuprof::sources::HaltingTarget {
public:
    explicit RecordedTarget(const RecordedHalts& recording) : recording_(recording) {}

    mcuprof::sources::RunHeader::Link link_header() const override { return {}; }
    std::string server() const override { return "the recording"; }
    std::string peer() const override { return "recorded halts"; }

    void start(mcuprof::sources::TargetEvents&) override { running_ = true; }
    void resume() override
    {
        if (running_)
            throw std::logic_error("resume of a running target");
        running_ = true;
    }
    mcuprof::sources::Halt halt_and_read(const mcuprof::sources::HaltRequest& request) override
    {
        if (!running_)
            throw std::logic_error("halt of a halted target");
        ++halts_served;
        if (on_halt)
            on_halt(halts_served);   // may throw transport::Error: the link fails at this halt
        mcuprof::sources::Halt h;
        h.stopped = h.ran_until = mcuprof::sources::Clock::now();
        running_ = false;
        if (halts_served > recording_.halts.size()) {
            h.ended = mcuprof::sources::TargetEnd{false, "the recorded halts ran out"};
            return h;
        }
        h.state = read_halt_state(request);
        return h;
    }
    mcuprof::sources::HaltState read_halt_state(const mcuprof::sources::HaltRequest& request) override
    {
        mcuprof::sources::HaltState s;
        s.registers = current().registers;
        if (!banked_in_halt) {
            s.registers.msp.reset();
            s.registers.psp.reset();
        }
        for (const mcuprof::sources::MemoryRange& range : request.memory)
            s.memory.push_back(read_memory(range.first, range.second));
        return s;
    }
    std::optional<uint32_t> read_stack_pointer(mcuprof::sources::StackPointer which,
                                               const mcuprof::core::CoreRegisters&) override
    {
        ++stack_pointer_reads;
        const mcuprof::core::CoreRegisters& r = current().registers;
        if (which != mcuprof::sources::StackPointer::main && which != mcuprof::sources::StackPointer::process)
            return std::nullopt;   // the recordings are of ARMv7-M cores
        return which == mcuprof::sources::StackPointer::main ? r.msp : r.psp;
    }
    std::string read_memory(uint32_t address, uint32_t length) override
    {
        ++memory_reads;
        const std::map<uint32_t, std::string>& memory = current().memory;
        auto it = memory.upper_bound(address);
        if (it == memory.begin())
            return {};
        --it;
        const uint64_t offset = uint64_t(address) - it->first;
        if (offset >= it->second.size())
            return {};
        return it->second.substr(size_t(offset), length);
    }
    bool link_survives(const mcuprof::transport::Error& e) const override
    {
        return e.kind() == mcuprof::transport::Error::Kind::protocol;
    }
    void leave_running(mcuprof::sources::TargetEvents&, bool link_lost) override
    {
        left_running.push_back(link_lost);
        running_ = true;
    }

    bool banked_in_halt = false;                  // the halt's registers hold MSP and PSP (as OpenOCD's)
    std::function<void(size_t halt)> on_halt;     // called at each halt, 1 first
    size_t halts_served = 0;
    unsigned memory_reads = 0;                    // in the halt's request and after it
    unsigned stack_pointer_reads = 0;
    std::vector<bool> left_running;               // leave_running's link_lost, per call

private:
    const RecordedHalt& current() const { return recording_.halts.at(halts_served - 1); }

    const RecordedHalts& recording_;
    bool running_ = false;
};

} // namespace fakes
