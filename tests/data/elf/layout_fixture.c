/* The DWARF data-layout reader's fixture, built at -O0 -g. The offsets the unit test expects
 * are worked out by hand from the AAPCS alignment rules (int16_t 2, uint32_t and pointers 4)
 * and checked here by the compiler, so the test and the compiler cannot both be wrong. */
#include <stddef.h>
#include <stdint.h>

struct point {
    int16_t x;
    int16_t y;
};

enum mode { mode_idle, mode_busy };

typedef struct sensor {
    uint8_t id;
    struct point position;  /* a nested struct */
    uint32_t readings[5];   /* an array member */
    char name[12];          /* a char name array, like a TCB's pcTaskName */
    struct sensor *next;    /* a pointer back into the struct being laid out */
    union {
        uint32_t word;
        uint8_t bytes[4];
    } raw;
    enum mode state;
} sensor_t;

typedef sensor_t sensor_alias_t; /* a typedef of a typedef */

_Static_assert(offsetof(sensor_t, position) == 2, "position");
_Static_assert(offsetof(sensor_t, readings) == 8, "readings");
_Static_assert(offsetof(sensor_t, name) == 28, "name");
_Static_assert(offsetof(sensor_t, next) == 40, "next");
_Static_assert(offsetof(sensor_t, raw) == 44, "raw");
_Static_assert(offsetof(sensor_t, state) == 48, "state");
_Static_assert(sizeof(sensor_t) == 52, "sensor_t");

sensor_t sensors[3];
/* Alone in its section, placed by the linker at 0x20000100 (tests/CMakeLists.txt). */
__attribute__((section(".fixed"))) sensor_alias_t *volatile current_sensor;
const uint16_t matrix[2][3] = {{1, 2, 3}, {4, 5, 6}};
static uint32_t hidden_counter;

int main(void)
{
    static int calls; /* a function's static: a fixed address too */
    calls++;
    hidden_counter += matrix[1][2];
    current_sensor = &sensors[calls % 3];
    current_sensor->name[0] = 'a';
    return 0;
}

void _start(void)
{
    main();
    for (;;) {
    }
}
