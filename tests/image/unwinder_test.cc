#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <regex>
#include <sstream>

#include "mcuprof/image/unwind/call_frames.h"
#include "mcuprof/image/error.h"
#include "mcuprof/image/firmware.h"
#include "mcuprof/image/image_set.h"
#include "mcuprof/image/unwind/exidx.h"
#include "mcuprof/image/symbols.h"
#include "mcuprof/image/unwind/thumb_code.h"
#include "tool_output.h"
#include "mcuprof/image/unwind/unwinder.h"

using namespace mcuprof::core;

namespace {

// symbols_fixture.elf (tests/data/elf/symbols_fixture.S) has no call-frame information:
// the unwinder passes the leaf through LR and exception frames through EXC_RETURN only.
const std::string fixture = std::string(FIXTURES_DIR) + "/symbols_fixture.elf";

class FakeMemory : public StackMemory {
public:
    std::map<uint32_t, uint32_t> words;
    std::optional<uint32_t> read_word(uint32_t address) override
    {
        auto it = words.find(address);
        return it == words.end() ? std::nullopt : std::optional<uint32_t>(it->second);
    }
    // An exception frame as the core stacks it (ARMv7-M ARM B1.5.6): r0-r3, r12, lr, pc, xPSR.
    void frame(uint32_t at, uint32_t lr, uint32_t pc, uint32_t xpsr)
    {
        const uint32_t values[8] = {0, 1, 2, 3, 12, lr, pc, xpsr};
        for (uint32_t i = 0; i < 8; ++i)
            words[at + 4 * i] = values[i];
    }
};

} // namespace

TEST_CASE("unwinder: exception frames by EXC_RETURN, basic and extended, with the 4-byte realignment")
{
    const Unwinder unwinder(ImageSet::open({fixture}));
    CHECK_FALSE(unwinder.has_frame_info());
    FakeMemory memory;
    CoreRegisters regs;
    regs.r[13] = 0x20001000;
    regs.r[15] = 0x08000002;   // func_a, the handler's leaf
    regs.r[14] = 0xFFFFFFE1;   // return to handler mode, MSP, extended (floating-point) frame
    regs.xpsr = 0x0000000F;    // IPSR 15: SysTick
    // First frame: 0x68 bytes (26 words) with xPSR bit 9 set (4 bytes of padding): the next
    // frame starts at 0x20001000 + 0x68 + 4. It interrupted local_b, whose LR is another
    // EXC_RETURN (a thread on MSP, basic frame), so the next frame is read there.
    memory.frame(0x20001000, 0xFFFFFFF9, 0x08000012, (1u << 9) | 0x0B);
    memory.frame(0x2000106C, 0x08000021, 0x08000024, 0x01000000);   // thread: in func_c, LR into func_c
    const UnwindResult result = unwinder.unwind(regs, memory);
    // 0x08000012: the interrupted instruction in local_b; 0x08000024 the one in func_c. func_c
    // has no frame information, but its code, read from its start, saves nothing and calls
    // nothing: its LR, 0x08000021, is its return address, and 0x0800001E (back into the call
    // instruction) a caller. No function holds that address: the chain is truncated there.
    REQUIRE(result.stack.callers.size() == 3);
    CHECK(result.stack.callers[0] == 0x08000012u);
    CHECK(result.stack.callers[1] == 0x08000024u);
    CHECK(result.stack.callers[2] == 0x0800001Eu);
    CHECK(result.stop == UnwindStop::no_frame_info);
    CHECK(result.stack.truncated);
}

TEST_CASE("unwinder: a return to the thread stack without PSP, unreadable memory, reset LR, a stacked PC outside the code")
{
    const Unwinder unwinder(ImageSet::open({fixture}));
    CoreRegisters regs;
    regs.r[13] = 0x20001000;
    regs.r[15] = 0x08000002;
    regs.xpsr = 0x0000000F;
    FakeMemory memory;

    regs.r[14] = 0xFFFFFFFD;   // thread mode on PSP: the link did not give PSP
    UnwindResult r = unwinder.unwind(regs, memory);
    CHECK(r.stop == UnwindStop::psp_unknown);
    CHECK(r.stack.callers.empty());

    regs.psp = 0x20002000;     // now it did, but nothing can be read there
    r = unwinder.unwind(regs, memory);
    CHECK(r.stop == UnwindStop::unreadable);

    memory.frame(0x20002000, 0xFFFFFFFF, 0xDEADBEEE, 0x01000000);   // garbage PC
    r = unwinder.unwind(regs, memory);
    CHECK(r.stop == UnwindStop::bad_frame);
    CHECK(r.stack.truncated);

    // LR's reset value in Thread mode, in func_a, which no instruction of this image calls or
    // branches to: a thread's entry (an RTOS sets such an LR), the root. In a handler: marked.
    regs.r[14] = 0xFFFFFFFF;
    regs.xpsr = 0x01000000;
    r = unwinder.unwind(regs, memory);
    CHECK(r.stop == UnwindStop::root);
    CHECK(r.stack.callers.empty());
    regs.xpsr = 0x0000000F;
    r = unwinder.unwind(regs, memory);
    CHECK(r.stop == UnwindStop::null_return);
    CHECK(r.stack.truncated);
}

TEST_CASE("unwinder: an ELF that cannot be read is an error naming it")
{
    CHECK_THROWS_WITH_AS(Image::open("/nonexistent/fw.elf"), doctest::Contains("/nonexistent/fw.elf"), Error);
}

TEST_CASE("unwinder: a chain taken in a handler that never crosses an exception return is marked, not complete")
{
    const Unwinder unwinder(ImageSet::open({fixture}));
    FakeMemory memory;
    CoreRegisters regs;
    regs.r[13] = 0x20001000;
    regs.r[15] = 0x08000002;
    regs.r[14] = 0xFFFFFFFF;   // what a naked handler's LR could hold after a call: no EXC_RETURN
    regs.xpsr = 0x0000000E;    // IPSR 14: PendSV
    UnwindResult r = unwinder.unwind(regs, memory);
    CHECK(r.stop == UnwindStop::null_return);   // (no root in Handler mode)
    CHECK(r.stack.stop == UnwindStop::null_return);
    CHECK(r.stack.truncated);

    // The same leaf, returning through EXC_RETURN to Thread mode on PSP: a task's first frame
    // (its entry, whose LR the RTOS set to 0xFFFFFFFF), complete.
    regs.r[14] = 0xFFFFFFFD;
    regs.psp = 0x20002000;
    memory.frame(0x20002000, 0xFFFFFFFF, 0x08000024, 0x01000000);
    r = unwinder.unwind(regs, memory);
    CHECK(r.stop == UnwindStop::root);
    CHECK_FALSE(r.stack.truncated);
    REQUIRE(r.stack.callers.size() == 1);
    CHECK(r.stack.callers[0] == 0x08000024u);

    // A nested exception: EXC_RETURN back to Handler mode (0xFFFFFFF1), and the handler it
    // returns into ends without an exception return of its own: still marked.
    regs.r[14] = 0xFFFFFFF1;
    memory.frame(0x20001000, 0xFFFFFFFF, 0x08000024, 0x0000000B);
    r = unwinder.unwind(regs, memory);
    CHECK(r.stack.truncated);
    CHECK(r.stop == UnwindStop::null_return);

    // A leaf that never saved LR, in a handler, whose LR is no EXC_RETURN: marked.
    regs.r[14] = 0x08000021;
    r = unwinder.unwind(regs, memory);
    CHECK(r.stack.truncated);
}

namespace {


// Every word of a stack region holds a distinct Thumb address inside the code, so the
// return address an unwinder reads names the slot it read it from.
class PatternMemory : public StackMemory {
public:
    PatternMemory(uint32_t base, uint32_t code_start, uint32_t code_size)
        : base_(base), code_start_(code_start), code_size_(code_size) {}
    std::optional<uint32_t> read_word(uint32_t address) override
    {
        if (address < base_ || address >= base_ + 0x1000u || address % 4 != 0)
            return std::nullopt;
        return (code_start_ + ((address - base_) * 2u) % code_size_) | 1u;
    }

private:
    uint32_t base_, code_start_, code_size_;
};

} // namespace

TEST_CASE("unwinder: .ARM.exidx without -g finds the same callers as .debug_frame, at every call site")
{
    // calltree_o2_exidx_m4 is calltree_o2_m4 built with -g0 -funwind-tables: no .debug_frame.
    const std::string with_dwarf = std::string(FIRMWARE_DIR) + "/calltree_o2_m4.elf";
    const std::string with_exidx = std::string(FIRMWARE_DIR) + "/calltree_o2_exidx_m4.elf";
    REQUIRE(tool_output("arm-none-eabi-readelf -S '" + with_exidx + "' | grep -c debug_frame || true") == "0\n");
    // The same code: the same functions at the same addresses with the same sizes.
    const std::string symbols = "arm-none-eabi-nm -S --defined-only '%s' | grep -i ' t '";
    auto functions_of = [&](const std::string& elf) {
        char command[1024];
        std::snprintf(command, sizeof command, symbols.c_str(), elf.c_str());
        return tool_output(command);
    };
    REQUIRE(functions_of(with_dwarf) == functions_of(with_exidx));

    const Unwinder dwarf(ImageSet::open({with_dwarf})), exidx(ImageSet::open({with_exidx}));
    CHECK(exidx.has_frame_info());
    // Functions whose exception-table entry says "cannot unwind" (assembly without .fnstart)
    // are not compared: the exidx image has no frame information for them.
    const std::string unwind_table = tool_output("arm-none-eabi-readelf -u '" + with_exidx + "'");
    // Call sites from the real disassembler: the instruction after each bl, inside the same
    // function (a call that never returns ends its function).
    std::istringstream disassembly(tool_output("arm-none-eabi-objdump -d --no-show-raw-insn '" + with_dwarf + "'"));
    std::string line, function;
    std::vector<std::pair<std::string, uint32_t>> instructions;   // (function, address)
    std::vector<size_t> calls;                                    // indices of the bl instructions
    while (std::getline(disassembly, line)) {
        if (line.size() > 10 && line.back() == ':' && line.find(" <") != std::string::npos) {
            function = line.substr(line.find('<') + 1, line.find('>') - line.find('<') - 1);
            continue;
        }
        std::smatch m;
        static const std::regex instruction(R"(^\s*([0-9a-f]+):\t)");
        if (function.empty() || !std::regex_search(line, m, instruction))
            continue;
        instructions.emplace_back(function, uint32_t(std::stoul(m[1], nullptr, 16)));
        if (line.find("\tbl\t") != std::string::npos)
            calls.push_back(instructions.size() - 1);
    }
    const uint32_t code_start = instructions.front().second, code_size = instructions.back().second - code_start;
    // A call that never returns may end its function's code: the address after it is
    // padding outside every FDE, where the two tables need not agree.
    const std::vector<FrameFunction> described = read_call_frames(Image::open(with_dwarf));
    auto has_rows = [&](uint32_t address) {
        return std::any_of(described.begin(), described.end(),
                           [&](const FrameFunction& f) { return address >= f.start && address < f.end; });
    };
    size_t compared = 0;
    for (size_t call : calls) {
        if (call + 1 >= instructions.size() || instructions[call + 1].first != instructions[call].first)
            continue;
        const std::string name = instructions[call + 1].first;   // (clang 14 cannot capture a structured binding)
        const uint32_t return_address = instructions[call + 1].second;
        if (unwind_table.find("<" + name + ">: 0x1 [cantunwind]") != std::string::npos || !has_rows(return_address))
            continue;
        CAPTURE(name);
        CAPTURE(return_address);
        CoreRegisters regs;
        regs.r[13] = 0x20001000u;
        for (uint32_t i = 0; i < 13; ++i)   // a frame pointer (r7) points into the stack too
            regs.r[i] = regs.r[13] + 4 * i;
        regs.r[14] = code_start + 0x101u;   // not the return address: it must come from the stack
        regs.r[15] = return_address;
        regs.xpsr = 0x01000000u;
        PatternMemory memory_a(regs.r[13], code_start, code_size), memory_b(regs.r[13], code_start, code_size);
        const UnwindResult a = dwarf.unwind(regs, memory_a, 1), b = exidx.unwind(regs, memory_b, 1);
        CHECK(b.stack.callers == a.stack.callers);
        CHECK(b.stop == a.stop);
        compared += a.stack.callers.size();   // a return address found, not a root
    }
    MESSAGE(compared << " call sites unwound alike");
    CHECK(compared >= 15);
}

TEST_CASE("exidx: the unwinding instructions of ARM IHI 0038 10.3, worked by hand")
{
    FakeMemory memory;
    std::array<uint32_t, 16> r{};
    r[7] = 0x20000100;
    r[13] = 0x20000080;
    r[14] = 0x08000301;
    bool restored = false;

    // big_frame at -O2 (readelf -u): vsp = r7; vsp += 0x204 + (0x16 << 2) = 604;
    // pop {r4, r7, r14} from 0x2000035C: r4, r7, r14 in register order, vsp 0x20000368.
    memory.words[0x2000035C] = 0x44;
    memory.words[0x20000360] = 0x77;
    memory.words[0x20000364] = 0x08000123;
    ExidxEntry frame_pointer{0x08000410, false, {0x97, 0xB2, 0x16, 0x84, 0x09, 0xB0}};
    std::array<uint32_t, 16> caller = r;
    REQUIRE(run_exidx(frame_pointer, caller, memory, restored) == ExidxResult::unwound);
    CHECK(restored);
    CHECK(caller[4] == 0x44u);
    CHECK(caller[7] == 0x77u);
    CHECK(caller[13] == 0x20000368u);
    CHECK(caller[15] == 0x08000123u);   // no r15 popped: the return address is the popped LR

    // vsp += 20 (0x04: (4 << 2) + 4), then pop {r4, r5, r14} (0xA9): from 0x20000094.
    memory.words[0x20000094] = 1;
    memory.words[0x20000098] = 2;
    memory.words[0x2000009C] = 0x08000201;
    ExidxEntry padded{0x08000234, false, {0x04, 0xA9, 0xB0}};
    caller = r;
    REQUIRE(run_exidx(padded, caller, memory, restored) == ExidxResult::unwound);
    CHECK(caller[5] == 2u);
    CHECK(caller[13] == 0x200000A0u);
    CHECK(caller[15] == 0x08000201u);

    // A leaf that saves nothing: SP unchanged, the return address is LR, nothing restored.
    ExidxEntry leaf{0x080002b4, false, {0xB0, 0xB0, 0xB0}};
    caller = r;
    REQUIRE(run_exidx(leaf, caller, memory, restored) == ExidxResult::unwound);
    CHECK_FALSE(restored);
    CHECK(caller[13] == r[13]);
    CHECK(caller[15] == r[14]);

    // 0x80 0x00 refuses to unwind; 0xB1 0x00 (pop no register) is malformed; a pop from
    // memory that cannot be read is unreadable.
    caller = r;
    CHECK(run_exidx({0, false, {0x80, 0x00}}, caller, memory, restored) == ExidxResult::refused);
    CHECK(run_exidx({0, false, {0xB1, 0x00}}, caller, memory, restored) == ExidxResult::malformed);
    CHECK(run_exidx({0, false, {0xA8}}, caller, memory, restored) == ExidxResult::unreadable);
}

namespace {

// A symbol's address (Thumb bit clear), from the peer tool (nm).
uint32_t symbol_address(const std::string& elf, const std::string& name)
{
    const std::string line = tool_output("arm-none-eabi-nm '" + elf + "' | grep ' " + name + "$'");
    return uint32_t(std::stoul(line.substr(0, 8), nullptr, 16)) & ~1u;
}

// The instruction after the first call of `callee`: where that call returns (objdump).
uint32_t after_call_of(const std::string& elf, const std::string& callee)
{
    std::istringstream disassembly(
        tool_output("arm-none-eabi-objdump -d --no-show-raw-insn '" + elf + "' | grep -m1 -A1 'bl.*<" + callee + ">'"));
    std::string line;
    std::getline(disassembly, line);
    std::getline(disassembly, line);
    return uint32_t(std::stoul(line, nullptr, 16));
}

// A halt in PendSV (IPSR 14) on the main stack at `msp`, with the task's stack at `psp`.
CoreRegisters pendsv_halt(uint32_t msp, uint32_t pc, uint32_t lr, uint32_t psp)
{
    CoreRegisters regs;
    regs.r[13] = msp;
    regs.r[15] = pc;
    regs.r[14] = lr;
    regs.xpsr = 14;
    regs.psp = psp;
    return regs;
}

} // namespace

TEST_CASE("unwinder: a naked context switch is crossed through the EXC_RETURN it pushed, into the task on PSP")
{
    // fpu_o2_m4's PendSV_Handler (minirtos.c) is naked assembly: its call-frame rows say
    // nothing is saved, yet it pushes {r3, lr} (lr = EXC_RETURN) and calls
    // rtos_switch_context. The addresses come from the peer tools (nm, objdump).
    const std::string elf = std::string(FIRMWARE_DIR) + "/fpu_o2_m4.elf";
    const uint32_t pendsv = symbol_address(elf, "PendSV_Handler"), task_fir = symbol_address(elf, "task_fir");
    const uint32_t switch_context = symbol_address(elf, "rtos_switch_context");
    const uint32_t task_returned = symbol_address(elf, "task_returned");
    // The instruction after PendSV's call of rtos_switch_context: where that call returns.
    const uint32_t after_call = after_call_of(elf, "rtos_switch_context");
    REQUIRE(after_call > pendsv);
    REQUIRE(after_call < pendsv + 0x40);

    const Unwinder unwinder(ImageSet::open({elf}));
    FakeMemory memory;
    const uint32_t msp = 0x20001F00, psp = 0x20000800;
    memory.words[msp] = 0x200011CC;       // the pushed r3
    memory.words[msp + 4] = 0xFFFFFFED;   // the pushed lr: Thread mode, PSP, extended frame
    // The task's frame: interrupted at task_fir's first instruction, LR its exit hook.
    memory.frame(psp, task_returned | 1u, task_fir, 0x01000000);
    // Halted at rtos_switch_context's first instruction.
    CoreRegisters regs = pendsv_halt(msp, switch_context, after_call | 1u, psp);

    SUBCASE("halted at rtos_switch_context's first instruction")
    {
        const UnwindResult r = unwinder.unwind(regs, memory);
        CHECK(r.stop == UnwindStop::root);
        REQUIRE(r.stack.callers.size() == 2);
        CHECK(r.stack.callers[0] == after_call - 2);   // in PendSV_Handler, the call
        CHECK(r.stack.callers[1] == task_fir);         // the interrupted instruction
    }
    SUBCASE("halted in PendSV right after the call returned: LR is no return address")
    {
        regs.r[15] = after_call;
        const UnwindResult r = unwinder.unwind(regs, memory);
        CHECK(r.stop == UnwindStop::root);
        REQUIRE(r.stack.callers.size() == 1);
        CHECK(r.stack.callers[0] == task_fir);
    }
    SUBCASE("without PSP the chain says so, for the link to read it")
    {
        regs.psp.reset();
        const UnwindResult r = unwinder.unwind(regs, memory);
        CHECK(r.stop == UnwindStop::psp_unknown);
    }
    SUBCASE("a saved word that is no exception frame's is not taken")
    {
        memory.frame(psp, task_returned | 1u, task_fir, 0x0100000B);   // IPSR 11 in a Thread-mode frame
        const UnwindResult r = unwinder.unwind(regs, memory);
        CHECK(r.stack.truncated);
    }
}

TEST_CASE("unwinder: a context switch that saves EXC_RETURN on the task's stack is crossed from PSP, and near-misses are not")
{
    // fpu_frshape_o2_m4's PendSV_Handler switches as FreeRTOS's Cortex-M4F port does:
    // r0 = PSP; vstmdb r0!, {s16-s31} (extended frames); stmdb r0!, {r4-r11, lr}; then only
    // {r0, r3} on the main stack around the call of rtos_select_next, which calls
    // rtos_stack_headroom. EXC_RETURN is at r0 + 32, the task's frame at r0 + 36 (+ 64).
    const std::string elf = std::string(FIRMWARE_DIR) + "/fpu_frshape_o2_m4.elf";
    const uint32_t pendsv = symbol_address(elf, "PendSV_Handler"), task_fir = symbol_address(elf, "task_fir");
    const uint32_t select_next = symbol_address(elf, "rtos_select_next");
    const uint32_t headroom = symbol_address(elf, "rtos_stack_headroom");
    const uint32_t task_returned = symbol_address(elf, "task_returned");
    const uint32_t pendsv_after_call = after_call_of(elf, "rtos_select_next");
    const uint32_t select_after_call = after_call_of(elf, "rtos_stack_headroom");
    REQUIRE(pendsv_after_call > pendsv);
    REQUIRE(pendsv_after_call < pendsv + 0x60);
    REQUIRE(select_after_call > select_next);
    REQUIRE(select_after_call < select_next + 0x20);
    // rtos_select_next pushes {r3, r4, r5, lr} before its call (its call-frame rows say so;
    // the frame below is laid out to match).
    REQUIRE(tool_output("arm-none-eabi-objdump -d --no-show-raw-insn --start-address=" + std::to_string(select_next) +
                        " --stop-address=" + std::to_string(select_next + 2) + " '" + elf + "'")
                .find("push\t{r3, r4, r5, lr}") != std::string::npos);

    const Unwinder unwinder(ImageSet::open({elf}));
    FakeMemory memory;
    const uint32_t msp = 0x20001F00, psp = 0x20000800;
    uint32_t saved_top = psp - 100;   // r4-r11, EXC_RETURN, s16-s31
    auto save_area = [&](uint32_t top, uint32_t exc_return) {
        for (uint32_t i = 0; i < 8; ++i)
            memory.words[top + 4 * i] = 0x40 + i;   // r4-r11
        memory.words[top + 32] = exc_return;
    };
    save_area(saved_top, 0xFFFFFFED);   // Thread mode, PSP, extended frame
    memory.words[msp] = saved_top;      // the pushed r0
    memory.words[msp + 4] = 0x200011E4; // the pushed r3: &pxCurrentTCB
    memory.frame(psp, task_returned | 1u, task_fir, 0x01000000);   // at task_fir's first instruction
    // Halted at rtos_select_next's first instruction.
    CoreRegisters regs = pendsv_halt(msp, select_next, pendsv_after_call | 1u, psp);

    auto crossed = [&](const std::vector<uint32_t>& callers) {
        const UnwindResult r = unwinder.unwind(regs, memory);
        CHECK(r.stop == UnwindStop::root);
        CHECK_FALSE(r.stack.truncated);
        CHECK(r.stack.callers == callers);
    };
    auto refused = [&]() {
        const UnwindResult r = unwinder.unwind(regs, memory);
        CHECK(r.stack.truncated);
        CHECK(r.stop != UnwindStop::psp_unknown);
        CHECK(std::find(r.stack.callers.begin(), r.stack.callers.end(), task_fir) == r.stack.callers.end());
    };

    SUBCASE("halted at rtos_select_next's first instruction, extended frame")
    {
        crossed({pendsv_after_call - 2, task_fir});
    }
    SUBCASE("a basic frame: no s16-s31 between, the save area 36 bytes below PSP")
    {
        saved_top = psp - 36;
        save_area(saved_top, 0xFFFFFFFD);
        memory.words[msp] = saved_top;
        crossed({pendsv_after_call - 2, task_fir});
    }
    SUBCASE("halted in rtos_stack_headroom, called by rtos_select_next")
    {
        const uint32_t sp = msp - 16;   // rtos_select_next's push {r3, r4, r5, lr}
        for (uint32_t i = 0; i < 3; ++i)
            memory.words[sp + 4 * i] = 0x30 + i;
        memory.words[sp + 12] = pendsv_after_call | 1u;
        regs.r[13] = sp;
        regs.r[15] = headroom;
        regs.r[14] = select_after_call | 1u;
        crossed({select_after_call - 2, pendsv_after_call - 2, task_fir});
    }
    SUBCASE("halted in PendSV after the call returned, {r0, r3} still on the main stack")
    {
        regs.r[15] = pendsv_after_call;
        crossed({task_fir});
    }
    SUBCASE("without PSP the chain says so, for the link to read it")
    {
        regs.psp.reset();
        CHECK(unwinder.unwind(regs, memory).stop == UnwindStop::psp_unknown);
    }
    SUBCASE("near-miss: the saved top 4 bytes off")
    {
        memory.words[msp] = saved_top + 4;
        save_area(saved_top + 4, 0xFFFFFFED);
        refused();
    }
    SUBCASE("near-miss: EXC_RETURN says a basic frame where the area has room for s16-s31")
    {
        save_area(saved_top, 0xFFFFFFFD);
        refused();
    }
    SUBCASE("near-miss: EXC_RETURN says an extended frame where the area has none")
    {
        saved_top = psp - 36;
        save_area(saved_top, 0xFFFFFFED);
        memory.words[msp] = saved_top;
        refused();
    }
    SUBCASE("near-miss: EXC_RETURN returns to Thread mode on MSP")
    {
        save_area(saved_top, 0xFFFFFFE9);
        refused();
    }
    SUBCASE("near-miss: EXC_RETURN returns to Handler mode")
    {
        save_area(saved_top, 0xFFFFFFE1);
        refused();
    }
    SUBCASE("near-miss: no EXC_RETURN value at +32")
    {
        save_area(saved_top, 0xFFFFFFFF);
        refused();
    }
    SUBCASE("near-miss: the save area cannot be read")
    {
        memory.words.erase(saved_top + 32);
        refused();
    }
    SUBCASE("near-miss: the frame at PSP has IPSR 11 for a return to Thread mode")
    {
        memory.frame(psp, task_returned | 1u, task_fir, 0x0100000B);
        refused();
    }
    SUBCASE("near-miss: the frame at PSP has the Thumb bit clear")
    {
        memory.frame(psp, task_returned | 1u, task_fir, 0x00000000);
        refused();
    }
    SUBCASE("near-miss: the frame at PSP returns outside the code")
    {
        memory.frame(psp, task_returned | 1u, 0x20000100, 0x01000000);
        refused();
    }
}

namespace {

// A halt at `pc` with these SP, LR and xPSR.
CoreRegisters halted_at(uint32_t sp_, uint32_t pc_, uint32_t lr_, uint32_t xpsr)
{
    CoreRegisters regs;
    regs.r[13] = sp_;
    regs.r[15] = pc_;
    regs.r[14] = lr_;
    regs.xpsr = xpsr;
    return regs;
}

} // namespace

// ARMv8-M (ARMv8-M ARM, DDI 0553, "EXC_RETURN", "Stack frames", "FNC_RETURN"), on stacks
// built by hand over symbols_fixture.elf (func_a 0x08000000, local_b 0x08000010, func_c
// 0x08000020; no call-frame information, so each chain ends one guessed caller past the
// last frame it crossed, with no_frame_info, as in the first test above).

TEST_CASE("unwinder: every ARMv8-M EXC_RETURN encoding names its frame's stack, size and mode")
{
    const Unwinder unwinder(ImageSet::open({fixture}));
    const uint32_t msp = 0x20001000, psp = 0x20002000, other_msp = 0x20003000, other_psp = 0x20004000;
    struct Case {
        uint32_t exc_return;
        uint32_t frame;       // where the frame must be read: the stack S and SPSEL name
        uint32_t frame_size;  // 0x20 basic, 0x68 with the FP context (FType 0)
        bool to_thread;       // Mode
    };
    // S (bit 6) against ES (bit 0): the same security state as the handler's, or the other's.
    const Case cases[] = {
        {0xFFFFFFF9, msp, 0x20, true},          // ARMv7-M (and Secure to Secure): Thread, MSP, basic
        {0xFFFFFFFD, psp, 0x20, true},
        {0xFFFFFFE9, msp, 0x68, true},
        {0xFFFFFFED, psp, 0x68, true},
        {0xFFFFFFF1, msp, 0x20, false},         // Handler mode, MSP
        {0xFFFFFFE1, msp, 0x68, false},
        {0xFFFFFFB8, msp, 0x20, true},          // Non-secure handler to Non-secure Thread mode, MSP
        {0xFFFFFFBC, psp, 0x20, true},          // ... on PSP (a Non-secure SysTick over an RTOS task)
        {0xFFFFFFAC, psp, 0x68, true},          // ... with the FP context
        {0xFFFFFFB0, msp, 0x20, false},         // ... Non-secure Handler mode
        {0xFFFFFFB9, other_msp, 0x20, true},    // Secure handler over Non-secure code: the other state's MSP
        {0xFFFFFFBD, other_psp, 0x20, true},    // ... PSP
        {0xFFFFFFF8, other_msp, 0x20, true},    // Non-secure handler over Secure code (DCRS 1)
    };
    for (const Case& c : cases) {
        CAPTURE(c.exc_return);
        CoreRegisters regs = halted_at(msp, 0x08000002, c.exc_return, 15);   // SysTick in func_a, a leaf
        regs.msp = msp;
        regs.psp = psp;
        regs.other_security_state.msp = other_msp;
        regs.other_security_state.psp = other_psp;
        FakeMemory memory;
        // The interrupted code: local_b, in Thread mode or in exception 11; its LR another
        // EXC_RETURN when it is a handler, to a basic Thread-mode frame right above this one.
        const uint32_t interrupted_ipsr = c.to_thread ? 0 : 11;
        // (The nested handler returns to Thread mode on MSP in its own security state.)
        const uint32_t nested_return = 0xFFFFFFB8u | (c.exc_return & 0x41u);
        memory.frame(c.frame, c.to_thread ? 0x08000021u : nested_return, 0x08000012, 0x01000000 | interrupted_ipsr);
        const uint32_t above = c.frame + c.frame_size;
        memory.frame(above, 0x08000021, 0x08000024, 0x01000000);
        const UnwindResult r = unwinder.unwind(regs, memory);
        // The interrupted leaf's LR (it calls nothing) names 0x0800001E, which no function
        // holds: the chain ends there.
        CHECK(r.stop == UnwindStop::no_frame_info);
        REQUIRE(r.stack.callers.size() >= 1);
        CHECK(r.stack.callers[0] == 0x08000012u);
        if (!c.to_thread) {
            // Nested: the Handler-mode frame's size put the next frame right above it.
            CHECK(r.stack.callers == std::vector<uint32_t>{0x08000012u, 0x08000024u, 0x0800001Eu});
        } else {
            CHECK(r.stack.callers == std::vector<uint32_t>{0x08000012u, 0x0800001Eu});
        }
    }
}

TEST_CASE("unwinder: DCRS 0, the additional state context below the frame, and its integrity signature")
{
    const Unwinder unwinder(ImageSet::open({fixture}));
    // A Non-secure SysTick (ES 0) that interrupted a Secure handler (S 1, Mode 0), which had
    // interrupted Secure Thread mode: 0xFFFFFFD0 = S, FType, Handler mode, MSP, DCRS 0.
    const uint32_t ns_msp = 0x20001000, s_msp = 0x30001000;
    CoreRegisters regs = halted_at(ns_msp, 0x08000002, 0xFFFFFFD0, 15);
    regs.msp = ns_msp;
    regs.other_security_state.msp = s_msp;
    FakeMemory memory;
    // On MSP_S: the integrity signature (FType 1: 0xFEFA125B), a reserved word, r4-r11, then
    // the state context of the Secure handler (IPSR 11) in local_b, whose LR returns to Secure
    // Thread mode on MSP (0xFFFFFFF9): that frame is 0x28 + 0x20 bytes higher.
    memory.words[s_msp] = 0xFEFA125B;
    memory.words[s_msp + 4] = 0;
    for (uint32_t i = 0; i < 8; ++i)
        memory.words[s_msp + 8 + 4 * i] = 0x40 + i;
    memory.frame(s_msp + 0x28, 0xFFFFFFF9, 0x08000012, 0x0100000B);
    memory.frame(s_msp + 0x48, 0x08000021, 0x08000024, 0x01000000);

    SUBCASE("crossed where the Secure stack pointer is known")
    {
        const UnwindResult r = unwinder.unwind(regs, memory);
        CHECK(r.stop == UnwindStop::no_frame_info);
        CHECK(r.stack.callers == std::vector<uint32_t>{0x08000012u, 0x08000024u, 0x0800001Eu});
    }
    SUBCASE("a wrong integrity signature is no frame")
    {
        memory.words[s_msp] = 0xFEFA125A;   // the FP context's signature, with FType 1
        CHECK(unwinder.unwind(regs, memory).stop == UnwindStop::bad_frame);
    }
    SUBCASE("the Secure stack unknown to the Non-secure side: complete, entered from the Secure state")
    {
        regs.other_security_state.msp.reset();
        const UnwindResult r = unwinder.unwind(regs, memory);
        CHECK(r.stop == UnwindStop::secure_caller);
        CHECK_FALSE(r.stack.truncated);
        CHECK(r.stack.callers.empty());
    }
}

TEST_CASE("unwinder: FNC_RETURN ends the Non-secure chain, or crosses into the Secure caller where its stack is known")
{
    const Unwinder unwinder(ImageSet::open({fixture}));
    // A Non-secure function (func_a, Thread mode) entered by BLXNS: LR is FNC_RETURN.
    CoreRegisters regs = halted_at(0x20001000, 0x08000002, 0xFEFFFFFF, 0x01000000);
    FakeMemory memory;

    UnwindResult r = unwinder.unwind(regs, memory);
    CHECK(r.stop == UnwindStop::secure_caller);
    CHECK_FALSE(r.stack.truncated);
    CHECK(r.stack.callers.empty());

    // CONTROL_S.SPSEL 0: the Secure caller's return address and partial xPSR at MSP_S. The
    // return address points after the 2-byte BLXNS in func_c.
    regs.other_security_state.control = 0;
    regs.other_security_state.msp = 0x30000FF8;
    regs.other_security_state.psp = 0x30002000;   // not this one
    memory.words[0x30000FF8] = 0x08000023;
    memory.words[0x30000FFC] = 0;
    r = unwinder.unwind(regs, memory);
    REQUIRE(r.stack.callers.size() == 1);
    CHECK(r.stack.callers[0] == 0x08000020u);   // the BLXNS
    CHECK(r.stop == UnwindStop::no_frame_info);  // func_c has no call-frame information

    // Unreadable (the Secure side's memory refused to a Non-secure debugger): the boundary.
    regs.other_security_state.msp = 0x30008000;
    r = unwinder.unwind(regs, memory);
    CHECK(r.stop == UnwindStop::secure_caller);
    CHECK(r.stack.callers.empty());
}

TEST_CASE("unwinder: a frame below MSPLIM or PSPLIM is implausible")
{
    const Unwinder unwinder(ImageSet::open({fixture}));
    CoreRegisters regs = halted_at(0x20001000, 0x08000002, 0xFFFFFFBC, 15);   // to Non-secure Thread mode on PSP
    regs.psp = 0x20002000;
    FakeMemory memory;
    memory.frame(0x20002000, 0x08000021, 0x08000012, 0x01000000);
    regs.psplim = 0x20002000;   // at the limit: allowed
    CHECK(unwinder.unwind(regs, memory).stack.callers == std::vector<uint32_t>{0x08000012u, 0x0800001Eu});
    regs.psplim = 0x20002008;   // the frame below it: not a frame
    CHECK(unwinder.unwind(regs, memory).stop == UnwindStop::bad_frame);
}

// Whether objdump shows a branch or call to `function` anywhere in the image.
bool branched_to(const std::string& elf, const std::string& function)
{
    return tool_output("arm-none-eabi-objdump -d '" + elf + "' | grep -cE '\\s(bl|b|b\\.w|b\\.n|b[a-z]{2}(\\.[wn])?)\\s+[0-9a-f]+ <" +
                       function + ">' || true") != "0\n";
}

TEST_CASE("unwinder: a saved return address of 0 or 0xFFFFFFFF is a root only in the reset handler or a thread's entry")
{
    // calltree_o2_m4: Reset_Handler is vector 1 (startup.c); main at -O2 saves LR, and
    // Reset_Handler calls it. fpu_o2_m4: task_fir is a task's entry, which nothing calls.
    const std::string calltree = std::string(FIRMWARE_DIR) + "/calltree_o2_m4.elf";
    const std::string fpu = std::string(FIRMWARE_DIR) + "/fpu_o2_m4.elf";
    REQUIRE(branched_to(calltree, "main"));
    REQUIRE_FALSE(branched_to(fpu, "task_fir"));
    const Unwinder unwinder(ImageSet::open({calltree})), tasks(ImageSet::open({fpu}));
    FakeMemory memory;
    CoreRegisters regs;
    regs.r[13] = 0x20001000;
    regs.xpsr = 0x01000000;
    for (const uint32_t reset_lr : {0x00000000u, 0xFFFFFFFFu}) {
        CAPTURE(reset_lr);
        regs.r[14] = reset_lr;
        // With PSP unknown (QEMU 7.2's gdbstub in Thread mode), on PSP, and on MSP.
        for (const std::optional<uint32_t> psp : {std::optional<uint32_t>(), std::optional<uint32_t>(0x20001000u),
                                                  std::optional<uint32_t>(0x20002000u)}) {
            CAPTURE(psp.value_or(0));
            regs.psp = psp;
            regs.r[15] = symbol_address(calltree, "Reset_Handler");
            UnwindResult r = unwinder.unwind(regs, memory);
            CHECK(r.stop == UnwindStop::root);
            CHECK_FALSE(r.stack.truncated);
            // The same LR in a function that is called: cut CFI (libgcc's ARMv6-M soft float
            // describes its prologue only) reads a stale 0 this way. Marked.
            regs.r[15] = symbol_address(calltree, "main");
            r = unwinder.unwind(regs, memory);
            CHECK(r.stop == UnwindStop::null_return);
            CHECK(r.stack.truncated);
            // A thread's entry: the root, whatever the stack pointers say.
            regs.r[15] = symbol_address(fpu, "task_fir");
            r = tasks.unwind(regs, memory);
            CHECK(r.stop == UnwindStop::root);
            CHECK_FALSE(r.stack.truncated);
        }
    }
}

TEST_CASE("unwinder: a handler's truncated chain keeps only the frames found on the stack")
{
    // PendSV at 0x0800001E, code no function holds and no table describes: LR (into func_c) is
    // a guess. The chain from there cannot reach an exception return: the guessed caller is
    // dropped.
    const Unwinder unwinder(ImageSet::open({fixture}));
    FakeMemory memory;
    CoreRegisters regs = halted_at(0x20001000, 0x0800001E, 0x08000021, 14);
    const UnwindResult r = unwinder.unwind(regs, memory);
    CHECK(r.stack.truncated);
    CHECK(r.stack.callers.empty());
}

TEST_CASE("unwinder: a Secure function returning to its Non-secure caller (LR bit 0 clear after SG) crosses onto the Non-secure stack")
{
    const Unwinder unwinder(ImageSet::open({fixture}));
    // On the Secure stack in func_a, the Secure entry's leaf; LR after the call in func_c, bit 0
    // clear: a return to the Non-secure state.
    CoreRegisters regs = halted_at(0x30001000, 0x08000002, 0x08000022, 0x01000000);
    FakeMemory memory;

    UnwindResult r = unwinder.unwind(regs, memory);
    CHECK(r.stop == UnwindStop::nonsecure_unknown);
    CHECK(r.stack.truncated);

    // The link read MSP_NS and CONTROL_NS (SPSEL 0): the caller's frame is at MSP_NS. func_c has
    // no call-frame information, so the chain ends there, one caller further.
    regs.other_security_state.msp = 0x20001000;
    regs.other_security_state.control = 0;
    r = unwinder.unwind(regs, memory);
    CHECK(r.stop == UnwindStop::no_frame_info);
    // func_a's LR was no stale guess: only an SG clears bit 0.
    CHECK(r.stack.callers == std::vector<uint32_t>{0x08000020u});
}

TEST_CASE("unwinder: halted in an epilogue that call-frame information no longer describes, the code is run to its return")
{
    // libgcc's ARMv6-M __aeabi_fmul: push {r4-r7, lr}, then r8-r10 through r6, r7, lr (push
    // {r6, r7, lr}); its epilogue pops {r5, r6, r7}, moves them back to r8-r10 and pops {r4-r7,
    // pc}. Its CFI describes the prologue only: after the first pop it still puts the frame
    // 32 bytes above SP, 12 too many.
    const std::string elf = std::string(FIRMWARE_DIR) + "/arch_microbit.elf";
    const Unwinder unwinder(ImageSet::open({elf}));
    std::istringstream disassembly(tool_output("arm-none-eabi-objdump -d --no-show-raw-insn '" + elf +
                                               "' | sed -n '/<__aeabi_fmul>:/,/^$/p' | grep -A4 'pop\t{r5, r6, r7}'"));
    std::vector<uint32_t> epilogue;   // the first pop, the three moves, the last pop
    for (std::string line; std::getline(disassembly, line);)
        epilogue.push_back(uint32_t(std::stoul(line, nullptr, 16)));
    REQUIRE(epilogue.size() == 5);
    const uint32_t return_address = after_call_of(elf, "__aeabi_fmul");
    const uint32_t sp = 0x20001000;
    FakeMemory memory;
    for (uint32_t i = 0; i < 8; ++i)   // r8-r10 (as r5-r7), r4-r7, the return address
        memory.words[sp + 4 * i] = i < 7 ? 0x100 + i : return_address | 1u;
    for (size_t i = 0; i < epilogue.size(); ++i) {
        CAPTURE(epilogue[i]);
        // Before the first pop SP is at r8-r10's copies; after it 12 bytes above.
        CoreRegisters regs = halted_at(i == 0 ? sp : sp + 12, epilogue[i], 0, 0x01000000);
        const UnwindResult r = unwinder.unwind(regs, memory, 1);
        REQUIRE(r.stack.callers.size() == 1);
        CHECK(r.stack.callers[0] == return_address - 2);
        CHECK(r.stop == UnwindStop::depth);
    }
    // Inside an IT block (EPSR.IT not zero) the code is not run: the CFI row says where the
    // frame is, and after the first pop it is wrong.
    CoreRegisters regs = halted_at(sp + 12, epilogue[1], 0, 0x01000000 | (1u << 10));
    CHECK(unwinder.unwind(regs, memory, 1).stack.callers != std::vector<uint32_t>{return_address - 2});
}

TEST_CASE("thumb code: the direct branch targets are every bl target objdump shows")
{
    const std::string elf = std::string(FIRMWARE_DIR) + "/calltree_o2_m4.elf";
    const Image firmware = Image::open(elf);
    const std::vector<uint32_t> targets = direct_branch_targets(firmware.symbols());
    std::istringstream disassembly(tool_output("arm-none-eabi-objdump -d --no-show-raw-insn '" + elf +
                                               "' | grep -E '\tbl\t' | awk '{print $3}'"));
    size_t calls = 0;
    for (std::string target; std::getline(disassembly, target); ++calls) {
        CAPTURE(target);
        CHECK(std::binary_search(targets.begin(), targets.end(), uint32_t(std::stoul(target, nullptr, 16))));
    }
    CHECK(calls >= 15);
}

TEST_CASE("thumb code: a code section at the top of the address space, or odd-sized, is swept without reading past it")
{
    // A BL at 0xFFFFFFFC whose target wraps, and a lone halfword that starts a 32-bit
    // instruction at the end of a section.
    CodeSection top{".text", 0xFFFFFFFCu, 4, {0x00, 0xF0, 0x00, 0xF8}};
    CodeSection cut{".text2", 0x08000000u, 3, {0x00, 0xF0, 0x00}};
    const SymbolTable code = SymbolTable::from({}, {top, cut});
    const std::vector<uint32_t> targets = direct_branch_targets(code);
    CHECK(targets == std::vector<uint32_t>{0x00000000u});   // 0xFFFFFFFC + 4 + 0, modulo 2^32
}
