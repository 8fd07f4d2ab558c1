// RTOS awareness: each kernel's finder on the reference firmware built like it (the offsets
// by hand from firmware-ref/src/minirtos.h and minizephyr.h, where _Static_assert checks
// them; the addresses from the ELF's symbol table, which other code reads from .symtab), and
// the running task read at a halt, over a target that is only memory.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>

#include "mcuprof/image/error.h"
#include "mcuprof/image/firmware.h"
#include "mcuprof/image/symbols.h"
#include "mcuprof/sampler/rtos_awareness.h"

using namespace mcuprof;
using namespace mcuprof::sources;

namespace {

std::string firmware(const std::string& name)
{
    const std::string path = std::string(FIRMWARE_DIR) + "/" + name + ".elf";
    INFO("the reference firmware is built by `make firmware`: ", path);
    REQUIRE(std::filesystem::exists(path));
    return path;
}

uint32_t symbol(const std::string& elf, const std::string& name)
{
    auto found = core::SymbolTable::load(core::Image::open(elf)).find_object(name);
    REQUIRE(found);
    return uint32_t(found->address);
}

// Memory only: what TaskNames reads besides the halt's own request.
class MemoryTarget : public HaltingTarget {
public:
    RunHeader::Link link_header() const override { return {}; }
    std::string server() const override { return "memory"; }
    std::string peer() const override { return "memory"; }
    void start(TargetEvents&) override {}
    void resume() override {}
    Halt halt_and_read(const HaltRequest&) override { return {}; }
    HaltState read_halt_state(const HaltRequest&) override { return {}; }
    std::string read_memory(uint32_t address, uint32_t length) override
    {
        ++reads;
        auto it = memory.find(address);
        return it == memory.end() ? std::string() : it->second.substr(0, length);
    }
    bool link_survives(const transport::Error&) const override { return true; }
    void leave_running(TargetEvents&, bool) override {}

    std::map<uint32_t, std::string> memory;
    unsigned reads = 0;
};

std::string le_word(uint32_t v)
{
    return std::string{char(v & 0xFF), char(v >> 8 & 0xFF), char(v >> 16 & 0xFF), char(v >> 24 & 0xFF)};
}

} // namespace

TEST_CASE("rtos: FreeRTOS found from DWARF, with its scheduler-running flag")
{
    const std::string elf = firmware("rtos_m4");
    auto tasks = detect_rtos(core::Image::open(elf));
    REQUIRE(tasks);
    CHECK(tasks->kernel == "FreeRTOS");
    CHECK(tasks->current_task == symbol(elf, "pxCurrentTCB"));
    CHECK(tasks->name_offset == 12);   // three 4-byte members, then pcTaskName[16]
    CHECK(tasks->name_length == 16);
    CHECK(tasks->started_flag == symbol(elf, "xSchedulerRunning"));   // a file static
    CHECK(tasks->started_size == 4);                                  // BaseType_t: long
}

TEST_CASE("rtos: Zephyr found from DWARF through _kernel.cpus[0].current and k_thread's name")
{
    const std::string elf = firmware("zephyr_m4");
    auto threads = detect_rtos(core::Image::open(elf));
    REQUIRE(threads);
    CHECK(threads->kernel == "Zephyr");
    // struct _cpu: nested, irq_stack, then current.
    CHECK(threads->current_task == symbol(elf, "_kernel") + 8);
    // struct k_thread: base (16 bytes), callee_saved (9 words), entry, next_thread, name[32].
    CHECK(threads->name_offset == 16 + 36 + 4 + 4);
    CHECK(threads->name_length == 32);
    CHECK(threads->started_flag == symbol(elf, "z_sys_post_kernel"));
    CHECK(threads->started_size == 1);   // bool
}

TEST_CASE("rtos: an image without a kernel, or without DWARF, has no tasks")
{
    CHECK_FALSE(detect_rtos(core::Image::open(firmware("loops_jit_m4"))));
    CHECK_FALSE(detect_rtos(core::Image::open(firmware("calltree_o2_exidx_m4"))));   // built without -g
    CHECK_THROWS_AS(core::Image::open("/nonexistent/firmware.elf"), core::Error);   // the image is opened once, by the command
}

TEST_CASE("rtos: the running task at a halt, only once the scheduler runs")
{
    const uint32_t current = 0x20000010, flag = 0x20000020, motor = 0x20000100;
    TaskLayout layout{current, 8, 8};
    layout.started_flag = flag;
    layout.started_size = 1;
    MemoryTarget target;
    target.memory[motor + 8] = std::string("motor\0\0\0", 8);
    TaskNames tasks(layout);

    HaltRequest request;
    request.memory.emplace_back(0x20001000, 64);   // another reader's range first
    tasks.add_to(request);
    REQUIRE(request.memory.size() == 3);
    CHECK(request.memory[1] == MemoryRange{current, 4});
    CHECK(request.memory[2] == MemoryRange{flag, 1});

    HaltState state;
    state.memory = {std::string(64, '\0'), le_word(motor), std::string(1, '\0')};
    CHECK_FALSE(tasks.running(state, target));   // a task created, the scheduler not started
    CHECK(target.reads == 0);

    state.memory[2] = std::string(1, '\1');
    auto running = tasks.running(state, target);
    REQUIRE(running);
    CHECK(running->control_block == motor);
    CHECK(*running->name == "motor");
    CHECK(running->name_added);
    running = tasks.running(state, target);
    REQUIRE(running);
    CHECK_FALSE(running->name_added);   // the name is read once
    CHECK(target.reads == 1);

    state.memory[1].clear();   // the target refused the read
    CHECK_FALSE(tasks.running(state, target));
    state.memory.resize(2);    // a short answer
    CHECK_FALSE(tasks.running(state, target));
}

TEST_CASE("rtos: without a started flag the pointer says, and without names the address names the task")
{
    TaskLayout layout{0x20000010, 0, 0};
    MemoryTarget target;
    TaskNames tasks(layout);
    HaltRequest request;
    tasks.add_to(request);
    REQUIRE(request.memory.size() == 1);
    HaltState state;
    state.memory = {le_word(0)};
    CHECK_FALSE(tasks.running(state, target));
    state.memory = {le_word(0x20000200)};
    auto running = tasks.running(state, target);
    REQUIRE(running);
    CHECK(*running->name == "0x20000200");
    CHECK(target.reads == 0);
}
