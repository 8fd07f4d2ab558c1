#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "mcuprof/image/data_layout.h"
#include "mcuprof/image/error.h"
#include "mcuprof/image/firmware.h"
#include "mcuprof/image/symbols.h"

using mcuprof::core::DataLayout;
using mcuprof::core::Image;
using mcuprof::core::SymbolTable;
using Kind = mcuprof::core::TypeLayout::Kind;

namespace {
const std::string fixture = std::string(FIXTURES_DIR) + "/layout_fixture.elf";
const std::string rtos_image = std::string(FIRMWARE_DIR) + "/rtos_m4.elf";
} // namespace

// The expected offsets are worked out by hand in tests/data/elf/layout_fixture.c, where the
// compiler checks them with _Static_assert; addresses are checked against the ELF symbol
// table, which is read by other code (LLVM Object) from other data (.symtab).
TEST_CASE("data layout: a struct behind a volatile pointer to a typedef of a typedef")
{
    const Image layout_image = Image::open(fixture);
    const DataLayout layout(layout_image);
    auto current = layout.variable("current_sensor");
    REQUIRE(current);
    CHECK(current->address == 0x20000100);   // placed by the linker (tests/CMakeLists.txt)
    REQUIRE(current->type);
    CHECK(current->type->kind == Kind::pointer);   // the volatile is looked through
    CHECK(current->type->size == 4);
    const auto& sensor = current->type->element;
    REQUIRE(sensor);
    CHECK(sensor->kind == Kind::structure);
    CHECK(sensor->name == "sensor_alias_t");
    CHECK(sensor->size == 52);
    REQUIRE(sensor->members.size() == 7);

    SUBCASE("members in order, at their offsets")
    {
        const char* names[] = {"id", "position", "readings", "name", "next", "raw", "state"};
        const uint64_t offsets[] = {0, 2, 8, 28, 40, 44, 48};
        for (size_t i = 0; i < 7; ++i) {
            CAPTURE(i);
            CHECK(sensor->members[i].name == names[i]);
            CHECK(sensor->members[i].offset == offsets[i]);
        }
        CHECK(sensor->member("absent") == nullptr);
    }
    SUBCASE("a nested struct")
    {
        const auto* position = sensor->member("position");
        REQUIRE(position);
        REQUIRE(position->type);
        CHECK(position->type->name == "struct point");
        CHECK(position->type->size == 4);
        REQUIRE(position->type->member("y"));
        CHECK(position->type->member("y")->offset == 2);
        CHECK(position->type->member("y")->type->name == "int16_t");
        CHECK(position->type->member("y")->type->kind == Kind::base);
    }
    SUBCASE("an array member and a char name array")
    {
        const auto& readings = sensor->member("readings")->type;
        CHECK(readings->kind == Kind::array);
        CHECK(readings->count == 5);
        CHECK(readings->size == 20);
        CHECK(readings->name == "uint32_t[5]");
        CHECK(readings->element->size == 4);
        const auto& name = sensor->member("name")->type;
        CHECK(name->kind == Kind::array);
        CHECK(name->count == 12);
        CHECK(name->element->name == "char");
        CHECK(name->element->size == 1);
    }
    SUBCASE("a pointer back into the struct: a stub with name and size")
    {
        const auto& next = sensor->member("next")->type;
        CHECK(next->kind == Kind::pointer);
        REQUIRE(next->element);
        CHECK(next->element->name == "struct sensor");
        CHECK(next->element->size == 52);
        // the full one is there by name
        auto full = layout.type("struct sensor");
        REQUIRE(full);
        CHECK(full->members.size() == 7);
        CHECK(layout.type("sensor")->name == "struct sensor");
    }
    SUBCASE("an anonymous union and an enum")
    {
        const auto& raw = sensor->member("raw")->type;
        CHECK(raw->kind == Kind::union_);
        CHECK(raw->size == 4);
        REQUIRE(raw->members.size() == 2);
        CHECK(raw->members[1].offset == 0);
        CHECK(raw->members[1].type->count == 4);
        CHECK(sensor->member("state")->type->kind == Kind::enumeration);
        CHECK(sensor->member("state")->type->name == "enum mode");
    }
}

TEST_CASE("data layout: variables and their addresses")
{
    const Image layout_image = Image::open(fixture);
    const DataLayout layout(layout_image);
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    for (const char* name : {"sensors", "matrix", "hidden_counter", "current_sensor"}) {
        CAPTURE(name);
        auto variable = layout.variable(name);
        REQUIRE(variable);
        CHECK(variable->name == name);
        auto symbol = symbols.find_object(name);
        REQUIRE(symbol);
        CHECK(variable->address == symbol->address);
        CHECK(variable->type->size == symbol->size);
    }
    SUBCASE("an array of structs, and a const two-dimensional array")
    {
        auto sensors = layout.variable("sensors");
        CHECK(sensors->type->count == 3);
        CHECK(sensors->type->size == 3 * 52);
        CHECK(sensors->type->element->name == "sensor_t");
        auto matrix = layout.variable("matrix");
        CHECK(matrix->type->name == "uint16_t[2][3]");
        CHECK(matrix->type->count == 2);
        CHECK(matrix->type->element->name == "uint16_t[3]");
        CHECK(matrix->type->element->count == 3);
        CHECK(matrix->type->element->size == 6);
    }
    SUBCASE("a function's static has a fixed address too")
    {
        auto calls = layout.variable("calls");
        REQUIRE(calls);
        CHECK(calls->type->name == "int");
        CHECK(calls->address == symbols.find_object("calls.0")->address);
    }
    SUBCASE("names that are not variables at fixed addresses")
    {
        CHECK_FALSE(layout.variable("main"));
        CHECK_FALSE(layout.variable("nonexistent"));
        CHECK(layout.type("nonexistent") == nullptr);
    }
}

TEST_CASE("data layout: member paths through structures and arrays, as C writes them")
{
    // Offsets by hand from layout_fixture.c (sensor_t: 52 bytes, position at 2, y at 2 in it,
    // readings uint32_t[5] at 8, next at 40; matrix uint16_t[2][3]); addresses from .symtab.
    const Image layout_image = Image::open(fixture);
    const DataLayout layout(layout_image);
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    const uint32_t sensors = uint32_t(symbols.find_object("sensors")->address);
    const uint32_t matrix = uint32_t(symbols.find_object("matrix")->address);

    auto y = layout.object("sensors[2].position.y");
    REQUIRE(y);
    CHECK(y->address == sensors + 2 * 52 + 2 + 2);
    CHECK(y->type->name == "int16_t");
    CHECK(y->name == "sensors[2].position.y");
    auto next = layout.object("sensors[1].next");
    REQUIRE(next);
    CHECK(next->address == sensors + 52 + 40);
    CHECK(next->type->kind == Kind::pointer);
    CHECK(layout.object("matrix[1][2]")->address == matrix + 1 * 6 + 2 * 2);
    CHECK(layout.object("matrix[1]")->type->name == "uint16_t[3]");
    CHECK(layout.object("sensors")->address == sensors);   // a bare name is the variable

    SUBCASE("inside a type, from its start")
    {
        auto sensor = layout.type("struct sensor");
        REQUIRE(sensor);
        auto reading = layout.field(*sensor, "readings[4]");
        REQUIRE(reading);
        CHECK(reading->offset == 8 + 4 * 4);
        CHECK(reading->type->size == 4);
        CHECK(layout.field(*sensor, "position.y")->offset == 4);
        // the pointer back into the structure is a stub; complete() gives the full one
        auto stub = layout.field(*sensor, "next")->type->element;
        CHECK(stub->members.empty());
        CHECK(layout.complete(stub)->members.size() == 7);
    }
    SUBCASE("paths that name nothing")
    {
        CHECK_FALSE(layout.object("sensors[3]"));          // three sensors
        CHECK_FALSE(layout.object("sensors[0].absent"));
        CHECK_FALSE(layout.object("sensors[0]position"));
        CHECK_FALSE(layout.object("sensors[x]"));
        CHECK_FALSE(layout.object("sensors[]"));
        CHECK_FALSE(layout.object("sensors.id"));           // an array has no members
        CHECK_FALSE(layout.object("current_sensor.id"));    // pointers are not followed
        CHECK_FALSE(layout.object("nonexistent.x"));
        CHECK_FALSE(layout.object("matrix[1][2][0]"));
    }
}

TEST_CASE("data layout: an unreadable file or one without DWARF is one error naming the file")
{
    CHECK_THROWS_AS(Image::open("/nonexistent/firmware.elf"), mcuprof::core::Error);
    // symbols_fixture.elf is assembled without -g.
    const std::string no_dwarf = std::string(FIXTURES_DIR) + "/symbols_fixture.elf";
    try {
        const Image layout_image = Image::open(no_dwarf);
        DataLayout layout(layout_image);
        FAIL("no error for an ELF without DWARF");
    } catch (const mcuprof::core::Error& error) {
        CHECK(error.file() == no_dwarf);
        CHECK(std::string(error.what()).find("debug") != std::string::npos);
    }
}

TEST_CASE("data layout: an image in memory reads as the file, a cut one is an error")
{
    std::ifstream in(fixture, std::ios::binary);
    const std::string image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    REQUIRE(image.size() > 1000);
    const DataLayout layout = DataLayout::parse(image, "in memory");
    CHECK(layout.variable("current_sensor")->address == 0x20000100);
    CHECK(layout.path() == "in memory");
    CHECK_THROWS_AS(DataLayout::parse(image.substr(0, 100), "cut"), mcuprof::core::Error);
}

TEST_CASE("data layout: the RTOS image's current task name, as the task tagging reads it")
{
    INFO("the reference firmware is built by `make firmware`: ", rtos_image);
    REQUIRE(std::filesystem::exists(rtos_image));
    const Image layout_image = Image::open(rtos_image);
    const DataLayout layout(layout_image);
    auto current = layout.variable("pxCurrentTCB");
    REQUIRE(current);
    CHECK(current->address == SymbolTable::load(Image::open(rtos_image)).find_object("pxCurrentTCB")->address);
    REQUIRE(current->type->kind == Kind::pointer);
    const auto& tcb = current->type->element;
    REQUIRE(tcb);
    CHECK(tcb->kind == Kind::structure);
    // firmware-ref/src/minirtos.h: three 4-byte members, then char pcTaskName[16].
    const auto* name = tcb->member("pcTaskName");
    REQUIRE(name);
    CHECK(name->offset == 12);
    CHECK(name->type->kind == Kind::array);
    CHECK(name->type->count == 16);
    CHECK(name->type->element->name == "char");
    CHECK(tcb->member("pxTopOfStack")->offset == 0);
    CHECK(layout.type("struct tskTaskControlBlock")->size == 28);
}
