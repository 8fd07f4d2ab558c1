/* startup_vendor.s: a start-up file in the shape vendors' project generators give their GCC
 * projects (STM32CubeMX's startup_stm32*.s, nRF's gcc_startup_*.S): hand-written assembly with no
 * call-frame information (no .cfi_* directives), a vector table of weak handler names that all
 * alias one endless default handler, and a reset handler that sets SP, copies the initialised
 * data (here also the RAM code of .ramfunc) from flash, zeroes .bss, then calls SystemInit and
 * main and loops if main returns. Written for mcuprof's reference firmware (issue 41); only
 * ARMv6-M instructions, so that one file serves every Cortex-M.
 *
 * Symbols from vendor.ld.in: _estack, _sidata/_sdata/_edata, _siramfunc/_sramfunc/_eramfunc,
 * _sbss/_ebss. */
    .syntax unified
    .thumb

    .section .text.Reset_Handler, "ax", %progbits
    .weak Reset_Handler
    .type Reset_Handler, %function
Reset_Handler:
    ldr   r0, =_estack
    mov   sp, r0                 /* a debugger's reset may leave SP elsewhere */

    ldr   r0, =_sdata            /* .data (and the .RamFunc code inside it) */
    ldr   r1, =_edata
    ldr   r2, =_sidata
    bl    copy_region
    ldr   r0, =_sramfunc         /* .ramfunc: code of its own output section, as an ITCM */
    ldr   r1, =_eramfunc
    ldr   r2, =_siramfunc
    bl    copy_region

    ldr   r2, =_sbss
    ldr   r4, =_ebss
    movs  r3, #0
    b     2f
1:  str   r3, [r2]
    adds  r2, r2, #4
2:  cmp   r2, r4
    bcc   1b

    bl    SystemInit
    bl    main
3:  b     3b
    .size Reset_Handler, . - Reset_Handler

/* copy_region(dst r0, end r1, src r2): words from flash to RAM; a leaf, saves nothing. */
    .section .text.copy_region, "ax", %progbits
    .type copy_region, %function
copy_region:
    movs  r3, #0
    b     2f
1:  ldr   r4, [r2, r3]
    str   r4, [r0, r3]
    adds  r3, r3, #4
2:  adds  r4, r0, r3
    cmp   r4, r1
    bcc   1b
    bx    lr
    .size copy_region, . - copy_region

    .section .text.Default_Handler, "ax", %progbits
    .type Default_Handler, %function
Default_Handler:
1:  b     1b
    .size Default_Handler, . - Default_Handler

    .section .isr_vector, "a", %progbits
    .type g_vectors, %object
g_vectors:
    .word _estack
    .word Reset_Handler
    .word NMI_Handler
    .word HardFault_Handler
    .word MemManage_Handler
    .word BusFault_Handler
    .word UsageFault_Handler
    .word 0, 0, 0, 0
    .word SVC_Handler
    .word DebugMon_Handler
    .word 0
    .word PendSV_Handler
    .word SysTick_Handler
    .rept 32
    .word Default_Handler        /* external interrupts: none used */
    .endr
    .size g_vectors, . - g_vectors

    .macro weak_handler name
    .weak \name
    .thumb_set \name, Default_Handler
    .endm
    weak_handler NMI_Handler
    weak_handler HardFault_Handler
    weak_handler MemManage_Handler
    weak_handler BusFault_Handler
    weak_handler UsageFault_Handler
    weak_handler SVC_Handler
    weak_handler DebugMon_Handler
    weak_handler PendSV_Handler
    weak_handler SysTick_Handler
