/*
 * Application state (issue 31, --by var:NAME): a state machine whose state is a global
 * enumeration, and each state's work a function of its own, so the time spent in each state
 * is known from the truth plugin's counts of that function.
 *
 * Each round: app_state = STATE_IDLE, hot_a(600) (3004 instructions); STATE_MEASURE,
 * hot_b(300) (1504); STATE_SEND, hot_c(100) (504): about 60 / 30 / 10 % of the run, plus the
 * handful of main's instructions between the stores, which fall in the state just set.
 * STATE_FAULT (-1) is never set: it is there so the enumeration has a negative enumerator.
 * No interrupts: the run under QEMU is the same instruction for instruction.
 *
 *   ROUNDS (default 400)
 */
#include "board.h"
#include "work.h"

#ifndef ROUNDS
#define ROUNDS 400u
#endif

typedef enum { STATE_FAULT = -1, STATE_IDLE = 0, STATE_MEASURE = 1, STATE_SEND = 2 } app_state_t;

/* volatile: every change is a store the debugger sees at its next halt. */
volatile app_state_t app_state = STATE_IDLE;
volatile int16_t app_level = -3;     /* a signed integer that never changes: one row, "-3" */
volatile float app_ratio = 0.5f;     /* a float: --by var:app_ratio is refused */
struct app_config { uint32_t rounds; uint32_t flags; };
volatile struct app_config app_config = {ROUNDS, 0u};   /* a structure: refused too */

int main(void)
{
    /* Read once, so the linker keeps them (an unused variable is collected, address and all). */
    if (app_ratio > 1.0f || app_level > 0)
        app_state = STATE_FAULT;
    for (uint32_t round = 0; round < app_config.rounds; round++) {
        app_state = STATE_IDLE;
        hot_a(600u);
        app_state = STATE_MEASURE;
        hot_b(300u);
        app_state = STATE_SEND;
        hot_c(100u);
    }
    semihost_exit(0);
}
