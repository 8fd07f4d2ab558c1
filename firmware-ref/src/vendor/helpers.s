/* helpers.s: hand-written assembly without call-frame information, as libraries and vendor
 * code bring it: asm_mix, a function with a frame (it pushes registers and LR, reserves stack
 * and calls C), and asm_copy, a leaf copy loop that saves nothing. ARMv6-M instructions only. */
    .syntax unified
    .thumb

/* uint32_t asm_mix(const uint32_t *words r0, uint32_t count r1): the sum of mix_step(word). */
    .section .text.asm_mix, "ax", %progbits
    .global asm_mix
    .type asm_mix, %function
asm_mix:
    push  {r4, r5, r6, lr}
    sub   sp, sp, #8
    movs  r4, r0
    movs  r5, r1
    movs  r6, #0
1:  cmp   r5, #0
    beq   2f
    ldr   r0, [r4]
    bl    mix_step
    adds  r6, r6, r0
    adds  r4, r4, #4
    subs  r5, r5, #1
    b     1b
2:  movs  r0, r6
    add   sp, sp, #8
    pop   {r4, r5, r6, pc}
    .size asm_mix, . - asm_mix

/* void asm_copy(uint32_t *dst r0, const uint32_t *src r1, uint32_t words r2): a leaf. */
    .section .text.asm_copy, "ax", %progbits
    .global asm_copy
    .type asm_copy, %function
asm_copy:
    cmp   r2, #0
    beq   2f
1:  ldr   r3, [r1]
    str   r3, [r0]
    adds  r0, r0, #4
    adds  r1, r1, #4
    subs  r2, r2, #1
    bne   1b
2:  bx    lr
    .size asm_copy, . - asm_copy
