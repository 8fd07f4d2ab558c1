// Drives the stack-pointer stub (src/transport/rsp/special_register_stub.cc, through the
// sampler's wrapper src/target/rsp/stack_pointer_stub.cc) against a real GDB
// server for tests/live/test_stacks.py: halts the target at random moments and, at each
// halt, reads every register the server describes and the memory below SP, runs the stub
// for MSP and for PSP, and reads them all again. One JSON object per halt on stdout:
//   {"pc", "xpsr", "sp", "msp", "psp", "registers_same", "changed" (the registers that differ),
//    "memory_same", "memory_hex", "registers" (how many), "halt_us", "stub_us"}
// halt_us: interrupt plus one 'g'; stub_us: both stub reads. Detaches at the end (the
// target runs).
//
// With WITNESS (an address), each line also has "witness": the word there, read at the halt
// (the firmware's own record of a stack pointer).
//
//   stack_pointer_stub_check HOST:PORT HALTS SEED [WITNESS]
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcuprof/target/stack_pointer_stub.h"
#include "mcuprof/link/rsp_client.h"
#include "mcuprof/link/rsp_packet.h"

using namespace mcuprof;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv)
{
    if (argc != 4 && argc != 5) {
        std::cerr << "usage: stack_pointer_stub_check HOST:PORT HALTS SEED [WITNESS]\n";
        return 1;
    }
    try {
        const transport::Endpoint endpoint = transport::Endpoint::parse(argv[1], "the GDB server");
        const int halts = std::stoi(argv[2]);
        std::mt19937 random(unsigned(std::stoul(argv[3])));
        // A plain flag and address, not an optional: GCC 12 warns (-Wmaybe-uninitialized) on the
        // optional's value read inside the loop.
        const bool has_witness = argc == 5;
        const uint32_t witness = has_witness ? uint32_t(std::stoul(argv[4], nullptr, 0)) : 0;
        transport::RspClient gdb(endpoint, {});
        gdb.handshake();
        std::vector<std::string> names;
        for (const transport::RegisterInfo& r : gdb.target().registers())
            names.push_back(r.name);
        auto snapshot = [&](uint32_t sp) {
            // Every register, and the 512 bytes below SP, where the stub puts its code (nothing
            // above SP: at a handler's halt MSP lies near the end of RAM, and past it QEMU 10
            // answers a read with an error, QEMU 7.2 with zeros).
            std::vector<std::string> memory;
            std::vector<std::string> values = gdb.read_register_bytes(names, {"m" + [&] {
                char text[32];
                std::snprintf(text, sizeof text, "%x,200", sp - 0x200);
                return std::string(text);
            }()}, &memory);
            values.push_back(memory.at(0));
            return values;
        };
        for (int i = 0; i < halts; ++i) {
            gdb.resume();
            std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(200, 5000)(random)));
            const Clock::time_point t0 = Clock::now();
            if (gdb.interrupt().kind != transport::StopReply::Kind::signal)
                break;
            const std::vector<uint32_t> all = gdb.read_registers({"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8",
                                                                  "r9", "r10", "r11", "r12", "sp", "lr", "pc", "xpsr"});
            const Clock::time_point t1 = Clock::now();
            core::CoreRegisters regs;
            for (size_t k = 0; k < 16; ++k)
                regs.r[k] = all[k];
            regs.xpsr = all[16];
            const std::vector<std::string> before = snapshot(regs.r[13]);
            const Clock::time_point t2 = Clock::now();
            const std::optional<uint32_t> msp = sources::read_stack_pointer_by_stub(gdb, regs, true, sources::StackPointer::main).value;
            const std::optional<uint32_t> psp = sources::read_stack_pointer_by_stub(gdb, regs, true, sources::StackPointer::process).value;
            const Clock::time_point t3 = Clock::now();
            const std::vector<std::string> after = snapshot(regs.r[13]);
            nlohmann::json changed = nlohmann::json::array();
            for (size_t k = 0; k + 1 < before.size(); ++k)
                if (before[k] != after[k])
                    changed.push_back({{"register", names[k]}, {"before", transport::rsp::to_hex(before[k])},
                                    {"after", transport::rsp::to_hex(after[k])}});
            const bool registers_same = changed.empty();
            auto us = [](Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); };
            nlohmann::json line = {{"halt", i}, {"pc", regs.r[15]}, {"xpsr", regs.xpsr}, {"sp", regs.r[13]},
                                   {"msp", msp ? nlohmann::json(*msp) : nlohmann::json()},
                                   {"psp", psp ? nlohmann::json(*psp) : nlohmann::json()},
                                   {"registers_same", registers_same}, {"changed", changed}, {"memory_same", before.back() == after.back()},
                                   {"registers", before.size() - 1}, {"memory_hex", before.back()},
                                   {"halt_us", us(t1 - t0)}, {"stub_us", us(t3 - t2)}};
            if (has_witness) {
                const std::string bytes = gdb.read_memory(witness, 4);
                const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
                line["witness"] = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
            }
            std::cout << line.dump() << "\n";
        }
        gdb.detach();
    } catch (const std::exception& e) {
        std::cerr << "stack_pointer_stub_check: " << e.what() << "\n";
        return 2;
    }
    return 0;
}
