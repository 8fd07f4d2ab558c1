/* A tiny image with hand-placed functions, linked at 0x08000000, for the symbol and
 * attribution tests. Every address below is known by construction:
 *   0x08000000 func_a   16 bytes, global; alias_a is a weak alias at the same address
 *   0x08000010 local_b  14 bytes, local
 *   0x0800001e          2 bytes of filler (data, not a function)
 *   0x08000020 func_c    8 bytes, global
 *   0x08000028 asm_tail  no .size (0): owns the rest of .text, 8 bytes
 */
    .syntax unified
    .thumb
    .text

    .global func_a
    .type func_a, %function
    .thumb_func
func_a:
    nop
    nop
    nop
    nop
    nop
    nop
    nop
    bx lr
    .size func_a, . - func_a

    .weak alias_a
    .type alias_a, %function
    .set alias_a, func_a

    .type local_b, %function
    .thumb_func
local_b:
    nop
    nop
    nop
    nop
    nop
    nop
    bx lr
    .size local_b, . - local_b

    .hword 0xdead

    .global func_c
    .type func_c, %function
    .thumb_func
func_c:
    nop
    nop
    nop
    bx lr
    .size func_c, . - func_c

    .global asm_tail
    .type asm_tail, %function
    .thumb_func
asm_tail:
    nop
    nop
    nop
    bx lr
