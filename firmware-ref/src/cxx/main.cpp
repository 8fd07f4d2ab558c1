// The C++ scenario (docs/firmware-ref.md): C++17 built -fno-exceptions -fno-rtti, with the
// shapes profiles name wrongly when they go by name: two instances of one template
// (dsp.hpp), virtual calls (shapes.cpp), lambdas handed to std::sort, an operator overload,
// same-named statics in two files (unit_a.cpp, unit_b.cpp) and the compiler's clones
// (.constprop, .isra, .part). It runs forever: a host sampler ends it by its sample count.
#include <algorithm>

#include "dsp.hpp"
#include "shapes.hpp"
#include "units.hpp"

namespace app {

struct Record {
    int key;
    int value;
};

struct Vec2 {
    int x, y;
};

// An operator overload, out of line.
__attribute__((noinline)) Vec2 operator+(Vec2 a, Vec2 b)
{
    return {a.x + b.x, a.y + b.y};
}

} // namespace app

namespace {

constexpr int record_count = 24;
app::Record records[record_count];
unsigned char bytes[64];
dsp::Fir<float, 16> float_filter;
dsp::Fir<long, 8> long_filter;
shapes::Square square(7);
shapes::Triangle triangle(6, 9);
shapes::Shape* const shape_list[] = {&square, &triangle, &square};
volatile int sink;

unsigned random_state = 12345;
unsigned next_random()
{
    random_state = random_state * 1664525u + 1013904223u;
    return random_state >> 8;
}

} // namespace

// Called with one constant factor only: GCC clones it as scale.constprop.0.
static __attribute__((noinline)) int scale(const app::Record* list, int n, int factor)
{
    int sum = 0;
    for (int i = 0; i < n; ++i)
        sum += list[i].value * factor;
    return sum;
}

// Reads one member of the record it is handed: GCC passes that member instead (.isra.0).
static __attribute__((noinline)) int weight(app::Record record)
{
    int w = 0;
    for (int i = 0; i < 16; ++i)
        w += (record.key >> (i & 7)) & 3;
    return w;
}

// A quick test then a long body: GCC inlines the test into the caller and leaves the body
// out of line as lookup.part.0 (partial inlining).
static int lookup(int wanted)
{
    if (__builtin_expect(wanted < 0, 1))
        return -1;
    int found = 0;
    for (int round = 0; round < 4; ++round)
        for (int i = 0; i < record_count; ++i) {
            if (records[i].key == wanted + round)
                found += i;
            if (records[i].value == wanted - round)
                found ^= records[i].key * 3;
            if (records[(i + round) % record_count].key > wanted)
                found += round;
        }
    return found;
}

// SysTick (ARMv7-M ARM B3.3): a periodic interrupt, so that QEMU's record mode, which halts
// only between runs of instructions, can stop the run at an instruction budget.
constexpr unsigned systick_period = 20000;   // core clocks
#define SYST_CSR (*reinterpret_cast<volatile unsigned*>(0xE000E010u))
#define SYST_RVR (*reinterpret_cast<volatile unsigned*>(0xE000E014u))
#define SYST_CVR (*reinterpret_cast<volatile unsigned*>(0xE000E018u))
volatile unsigned ticks;

extern "C" void SysTick_Handler()
{
    ticks = ticks + 1;
}

int main()
{
    SYST_RVR = systick_period - 1;
    SYST_CVR = 0;
    SYST_CSR = 7;   // ENABLE | TICKINT | CLKSOURCE (the core clock)
    for (int i = 0; i < record_count; ++i)
        records[i] = {int(next_random() % 1000), i};
    for (unsigned i = 0; i < sizeof bytes; ++i)
        bytes[i] = static_cast<unsigned char>(next_random());
    for (;;) {
        // Two lambdas for std::sort, one for std::for_each: three lambdas, three functions.
        for (int i = 0; i < record_count; ++i)
            records[i].key = int(next_random() % 1000);
        std::sort(records, records + record_count,
                  [](const app::Record& a, const app::Record& b) { return a.key < b.key; });
        std::sort(records, records + record_count,
                  [](const app::Record& a, const app::Record& b) { return a.value > b.value; });
        int total = 0;
        std::for_each(records, records + record_count, [&total](const app::Record& r) { total += r.key & 7; });

        for (int i = 0; i < 32; ++i) {
            total += int(float_filter.push(float(i)));
            total += int(long_filter.push(long(i)));
        }
        for (shapes::Shape* shape : shape_list)
            total += shape->area();
        total += unit_a(bytes, sizeof bytes);
        total += unit_b(bytes, sizeof bytes);
        total += scale(records, record_count, 3);
        total += weight(records[total & 7]);
        total += lookup(total & 1023);
        total += lookup((total & 1) - 1);
        const app::Vec2 v = app::Vec2{total, 1} + app::Vec2{2, 3};
        sink = v.x + v.y;
    }
}
