#include <doctest/doctest.h>

#include "mcuprof/image/unwind/thumb_decoder.h"

using namespace mcuprof::core;

// Each instruction below is assembled by hand from its encoding diagram in the ARMv7-M
// Architecture Reference Manual (DDI 0403E, A7.7), with the fields the decoder must find.
namespace {

ThumbInstruction narrow(uint16_t first)
{
    const std::optional<ThumbInstruction> instruction = decode_thumb(first, std::nullopt);
    REQUIRE(instruction);
    CHECK(instruction->length == 2);
    return *instruction;
}

ThumbInstruction wide(uint16_t first, uint16_t second)
{
    const std::optional<ThumbInstruction> instruction = decode_thumb(first, second);
    REQUIRE(instruction);
    CHECK(instruction->length == 4);
    return *instruction;
}

constexpr uint32_t bit(uint32_t n) { return 1u << n; }

} // namespace

TEST_CASE("thumb decoder: PUSH T1, T2, T3 (A7.7.99)")
{
    const ThumbInstruction t1 = narrow(0xB510);   // push {r4, lr}
    CHECK(t1.kind == ThumbKind::push);
    CHECK(t1.registers == (bit(4) | bit(14)));
    const ThumbInstruction t2 = wide(0xE92D, 0x4FF0);   // push.w {r4-r11, lr}
    CHECK(t2.kind == ThumbKind::push);
    CHECK(t2.registers == 0x4FF0u);
    // Bits 15 (PC) and 13 (SP) are 0 in the T2 encoding: with either set it is no PUSH.
    CHECK(wide(0xE92D, 0x2010).kind == ThumbKind::other);
    CHECK(wide(0xE92D, 0x8010).kind == ThumbKind::other);
    const ThumbInstruction t3 = wide(0xF84D, 0xED04);   // str.w lr, [sp, #-4]!
    CHECK(t3.kind == ThumbKind::push);
    CHECK(t3.registers == bit(14));
    CHECK(wide(0xF84D, 0xED08).kind == ThumbKind::other);   // str lr, [sp, #-8]!: not a PUSH
}

TEST_CASE("thumb decoder: POP T1, T2, T3 (A7.7.98)")
{
    const ThumbInstruction t1 = narrow(0xBD10);   // pop {r4, pc}
    CHECK(t1.kind == ThumbKind::pop);
    CHECK(t1.registers == (bit(4) | bit(15)));
    const ThumbInstruction t2 = wide(0xE8BD, 0x8FF0);   // pop.w {r4-r11, pc}
    CHECK(t2.kind == ThumbKind::pop);
    CHECK(t2.registers == 0x8FF0u);
    CHECK(wide(0xE8BD, 0x2010).registers == 0x2010u);   // SP in the list: the reader refuses it
    const ThumbInstruction t3 = wide(0xF85D, 0xEB04);   // ldr.w lr, [sp], #4
    CHECK(t3.kind == ThumbKind::pop);
    CHECK(t3.registers == bit(14));
}

TEST_CASE("thumb decoder: MOV (register) T1 and ADD (register) T2 (A7.7.77, A7.7.4)")
{
    const ThumbInstruction mov = narrow(0x466F);   // mov r7, sp
    CHECK(mov.kind == ThumbKind::mov_register);
    CHECK(mov.d == 7);
    CHECK(mov.m == 13);
    const ThumbInstruction mov_lr = narrow(0x469E);   // mov lr, r3
    CHECK(mov_lr.kind == ThumbKind::mov_register);
    CHECK(mov_lr.d == 14);
    CHECK(mov_lr.m == 3);
    const ThumbInstruction add = narrow(0x449E);   // add lr, r3
    CHECK(add.kind == ThumbKind::add_register);
    CHECK(add.d == 14);
    CHECK(add.m == 3);
    CHECK(narrow(0x4598).kind == ThumbKind::other);   // cmp r8, r3 (CMP T2)
}

TEST_CASE("thumb decoder: ADD (SP plus immediate) T1, T2 and SUB (SP minus immediate) T1-T3 (A7.7.5, A7.7.174)")
{
    const ThumbInstruction add_r7 = narrow(0xAF02);   // add r7, sp, #8
    CHECK(add_r7.kind == ThumbKind::add_sp_immediate);
    CHECK(add_r7.encoding == 1);
    CHECK(add_r7.d == 7);
    CHECK(add_r7.imm == 8);
    const ThumbInstruction add_sp = narrow(0xB002);   // add sp, #8
    CHECK(add_sp.kind == ThumbKind::add_sp_immediate);
    CHECK(add_sp.encoding == 2);
    CHECK(add_sp.d == 13);
    CHECK(add_sp.imm == 8);
    const ThumbInstruction sub = narrow(0xB082);   // sub sp, #8
    CHECK(sub.kind == ThumbKind::sub_sp_immediate);
    CHECK(sub.imm == 8);
    const ThumbInstruction sub_w = wide(0xF1AD, 0x0D08);   // sub.w sp, sp, #8
    CHECK(sub_w.kind == ThumbKind::sub_sp_immediate);
    CHECK(sub_w.imm == 8);
    // #0x100: ThumbExpandImm (A5.3.2) of i:imm3:imm8 = 1:111:10000000, 0x80 rotated right by 31
    const ThumbInstruction sub_rotated = wide(0xF5AD, 0x7D80);
    CHECK(sub_rotated.kind == ThumbKind::sub_sp_immediate);
    CHECK(sub_rotated.imm == 0x100u);
    const ThumbInstruction subw = wide(0xF2AD, 0x4D04);   // subw sp, sp, #0x404
    CHECK(subw.kind == ThumbKind::sub_sp_immediate);
    CHECK(subw.imm == 0x404u);
    CHECK(wide(0xF1A0, 0x0D08).kind == ThumbKind::other);   // sub.w sp, r0, #8: Rn is not SP
}

TEST_CASE("thumb decoder: VPUSH and VPOP, T1 doubles and T2 singles (A7.7.249, A7.7.248)")
{
    const ThumbInstruction doubles = wide(0xED2D, 0x8B10);   // vpush {d8-d15}
    CHECK(doubles.kind == ThumbKind::vpush);
    CHECK(doubles.encoding == 1);
    CHECK(doubles.imm == 64);
    const ThumbInstruction singles = wide(0xED2D, 0x8A10);   // vpush {s16-s31}
    CHECK(singles.kind == ThumbKind::vpush);
    CHECK(singles.encoding == 2);
    CHECK(singles.imm == 64);
    const ThumbInstruction pop = wide(0xECBD, 0x8B10);   // vpop {d8-d15}
    CHECK(pop.kind == ThumbKind::vpop);
    CHECK(pop.imm == 64);
}

TEST_CASE("thumb decoder: BX and BLX (register) (A7.7.20, A7.7.19)")
{
    const ThumbInstruction bx = narrow(0x4770);   // bx lr
    CHECK(bx.kind == ThumbKind::bx);
    CHECK(bx.m == 14);
    CHECK(narrow(0x4718).m == 3);                   // bx r3
    CHECK(narrow(0x4771).kind == ThumbKind::other);   // bits 2:0 are (0)
    const ThumbInstruction blx = narrow(0x4798);   // blx r3
    CHECK(blx.kind == ThumbKind::blx_register);
    CHECK(blx.m == 3);
}

TEST_CASE("thumb decoder: B T1-T4, BL and BLX (immediate) (A7.7.12, A7.7.18)")
{
    // Each branches to itself: the target is the PC it reads (address + 4) less 4.
    const ThumbInstruction b_t1 = narrow(0xD0FE);   // beq .
    CHECK(b_t1.kind == ThumbKind::branch);
    CHECK(b_t1.offset == -4);
    CHECK(narrow(0xDE00).kind == ThumbKind::other);   // cond 1110: UDF
    CHECK(narrow(0xDF00).kind == ThumbKind::other);   // cond 1111: SVC
    const ThumbInstruction b_t2 = narrow(0xE7FE);   // b .
    CHECK(b_t2.kind == ThumbKind::branch);
    CHECK(b_t2.offset == -4);
    const ThumbInstruction b_t3 = wide(0xF43F, 0xAFFE);   // beq.w .
    CHECK(b_t3.kind == ThumbKind::branch);
    CHECK(b_t3.encoding == 3);
    CHECK(b_t3.offset == -4);
    const ThumbInstruction b_t4 = wide(0xF7FF, 0xBFFE);   // b.w .
    CHECK(b_t4.kind == ThumbKind::branch);
    CHECK(b_t4.encoding == 4);
    CHECK(b_t4.offset == -4);
    const ThumbInstruction bl_self = wide(0xF7FF, 0xFFFE);   // bl .
    CHECK(bl_self.kind == ThumbKind::bl);
    CHECK(bl_self.offset == -4);
    const ThumbInstruction bl_next = wide(0xF000, 0xF800);   // bl to the next instruction
    CHECK(bl_next.kind == ThumbKind::bl);
    CHECK(bl_next.offset == 0);
    // S = 0, J1 = J2 = 0: I1 = I2 = 1, the offset's bits 23 and 22 set: +0xC00000
    CHECK(wide(0xF000, 0xD000).offset == 0xC00000);
    CHECK(wide(0xF000, 0xE800).kind == ThumbKind::blx_immediate);
}

TEST_CASE("thumb decoder: a 32-bit LDR with its Rt (A7.7.42-A7.7.44)")
{
    const ThumbInstruction t3 = wide(0xF8D0, 0xE004);   // ldr.w lr, [r0, #4]
    CHECK(t3.kind == ThumbKind::load_word);
    CHECK(t3.encoding == 3);
    CHECK(t3.d == 14);
    const ThumbInstruction t4 = wide(0xF851, 0xEC04);   // ldr lr, [r1, #-4]
    CHECK(t4.kind == ThumbKind::load_word);
    CHECK(t4.encoding == 4);
    CHECK(t4.d == 14);
    CHECK(wide(0xF85D, 0x3B04).kind == ThumbKind::pop);   // ldr r3, [sp], #4 is POP T3
}

TEST_CASE("thumb decoder: WFI and WFE, 16 and 32 bits (A7.7.261, A7.7.260)")
{
    CHECK(narrow(0xBF30).kind == ThumbKind::wfi);
    CHECK(narrow(0xBF20).kind == ThumbKind::wfe);
    CHECK(narrow(0xBF00).kind == ThumbKind::other);   // nop
    CHECK(wide(0xF3AF, 0x8003).kind == ThumbKind::wfi);
    CHECK(wide(0xF3AF, 0x8002).kind == ThumbKind::wfe);
    CHECK(wide(0xF3AF, 0x8000).kind == ThumbKind::other);   // nop.w
    CHECK(narrow(0xBF30).is_wait());
}

TEST_CASE("thumb decoder: a 32-bit instruction without its second halfword is not decoded")
{
    CHECK_FALSE(decode_thumb(0xF000, std::nullopt));
    CHECK_FALSE(decode_thumb(0xE92D, std::nullopt));
    CHECK(decode_thumb(0xB510, std::nullopt));
}
