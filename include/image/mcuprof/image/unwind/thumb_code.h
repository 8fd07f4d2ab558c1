#pragma once
// The image's Thumb code as the unwinder reads it (SymbolTable's code sections), one instruction
// at a time through decode_thumb (thumb_decoder.h): the functions some instruction enters
// directly (by BL, B.W or B), an epilogue run forward from a halted PC, the wait instructions.
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "mcuprof/image/unwind/thumb_decoder.h"

namespace mcuprof::core {

class StackMemory;
class SymbolTable;

// Every address a BL, B.W or B in the code branches to, sorted: a linear sweep of the code
// sections, one instruction after another (a literal pool decoded as instructions adds
// targets at worst).
std::vector<uint32_t> direct_branch_targets(const SymbolTable& code);

// What running the code from a halted PC to its return gave.
enum class EpilogueResult { not_epilogue, returned, unreadable };

// Runs the instructions from `registers[15]` forward when every one up to the function's
// return is an epilogue's: POP (with PC: the return), MOV between registers, ADD SP, #imm,
// VPOP, POP.W / LDR.W Rt, [SP], #4, and BX Rm (the return). These neither branch nor write
// memory, so the result is what the core will do: `registers` become the caller's, PC the
// return address as the core will load it (Thumb bit, or an EXC_RETURN / FNC_RETURN value).
// Call-frame information may not describe such code (libgcc's ARMv6-M soft float describes
// its prologue only). Only for the halted frame itself, outside an IT block or an interrupted
// LDM (EPSR's IT/ICI bits zero), which the caller checks.
EpilogueResult run_epilogue(const SymbolTable& code, std::array<uint32_t, 16>& registers, StackMemory& memory);

// Whether the instruction just before `pc` is a WFI or WFE (16-bit 0xBF30 / 0xBF20, or the
// 32-bit WFI.W / WFE.W, 0xF3AF 0x8003 / 0x8002; DDI 0403, A7.7.261 and A7.7.260): a core
// asleep there, or woken and not yet past it, has its PC there (the return address of the
// exception that wakes it, B1.5.6). A 16-bit match that is the second half of a 32-bit
// instruction is not one.
bool follows_wait_instruction(const SymbolTable& code, uint32_t pc);

// Whether the instruction at `pc` is itself a WFI or WFE (either width). DWT_PCSR reads "the
// address of an instruction recently executed" (ARMv6-M ARM C1.7.2, ARMv7-M alike): a core
// asleep may read as the wait instruction it executed last, not the one after it.
bool is_wait_instruction(const SymbolTable& code, uint32_t pc);

// Whether a sample of an instant of time at `pc` caught the core asleep by its code: just past
// a wait, or, for DWT_PCSR reads (`reads_pcsr`), the wait itself as well. A halt that found
// DHCSR.S_SLEEP set is asleep whatever its PC (SampleSet::found_asleep).
bool pc_shows_sleep(const SymbolTable& code, uint32_t pc, bool reads_pcsr);

} // namespace mcuprof::core
