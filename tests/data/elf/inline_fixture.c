/* Built at -O2 -g: hot_a is inlined into run, and run into main, as in the seed's
 * -O2 case. The nop on line 9 is the loop body the inline test looks for. */
volatile unsigned sink;

static inline __attribute__((always_inline)) void hot_a(unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        sink = i;
    __asm volatile("nop");
}

static inline __attribute__((always_inline)) void run(void)
{
    hot_a(700);
}

int main(void)
{
    for (;;)
        run();
}

void _start(void)
{
    main();
}
