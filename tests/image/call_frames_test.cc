#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "mcuprof/image/unwind/call_frames.h"
#include "mcuprof/image/error.h"
#include "mcuprof/image/firmware.h"
#include "tool_output.h"

using namespace mcuprof::core;

namespace {

// The call-frame table as the real `arm-none-eabi-readelf --debug-dump=frames-interp`
// prints it (binutils' independent evaluation of the same CFI): per FDE, its range and rows,
// each row a CFA ("r13+8") and one cell per register column ("u", "c-4", "r4", ...).
struct ReadelfRow {
    std::string cfa;
    std::map<uint32_t, std::string> cells;   // by DWARF register number
};
struct ReadelfFde {
    uint32_t start = 0, end = 0;
    std::string cie;                              // the offset of its CIE
    std::map<uint32_t, ReadelfRow> rows;          // by address; the last row printed at one address holds
};
struct ReadelfTable {
    std::map<std::string, ReadelfRow> cie_rows;   // a CIE's initial row (what an FDE without instructions keeps)
    std::vector<ReadelfFde> fdes;                 // in section order
};


// Column headers: "r4", "ra" (the return address column, r14 for Arm); other names (VFP
// registers, numbered 256 and up) are beyond what the unwinder keeps and are skipped.
std::optional<uint32_t> column_register(const std::string& name)
{
    if (name == "ra")
        return 14;
    if (name.size() > 1 && name[0] == 'r' && std::isdigit(static_cast<unsigned char>(name[1]))) {
        const uint32_t reg = uint32_t(std::stoul(name.substr(1)));
        if (reg < frame_registers)
            return reg;
    }
    return std::nullopt;
}

ReadelfTable readelf_frames(const std::string& elf)
{
    std::istringstream text(tool_output("arm-none-eabi-readelf --debug-dump=frames-interp '" + elf + "'"));
    static const std::regex cie_header(R"(^([0-9a-f]+) [0-9a-f]+ [0-9a-f]+ CIE\b)");
    static const std::regex fde_header(R"(^[0-9a-f]+ [0-9a-f]+ [0-9a-f]+ FDE cie=([0-9a-f]+) pc=([0-9a-f]+)\.\.([0-9a-f]+))");
    ReadelfTable table;
    std::string line, cie;
    ReadelfFde* fde = nullptr;
    std::vector<std::optional<uint32_t>> columns;
    std::smatch m;
    while (std::getline(text, line)) {
        if (std::regex_search(line, m, cie_header)) {
            cie = m[1];
            fde = nullptr;
        } else if (std::regex_search(line, m, fde_header)) {
            table.fdes.push_back({uint32_t(std::stoul(m[2], nullptr, 16)), uint32_t(std::stoul(m[3], nullptr, 16)), m[1], {}});
            fde = &table.fdes.back();
            cie.clear();
        } else if (line.rfind("   LOC", 0) == 0) {
            std::istringstream words(line);
            std::string word;
            columns.clear();
            words >> word >> word;   // LOC CFA
            while (words >> word)
                columns.push_back(column_register(word));
        } else if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) && (fde || !cie.empty())) {
            std::istringstream words(line);
            std::string address;
            ReadelfRow row;
            words >> address >> row.cfa;
            for (const auto& column : columns) {
                std::string cell;
                words >> cell;
                if (column)
                    row.cells[*column] = cell;
            }
            if (fde)
                fde->rows[uint32_t(std::stoul(address, nullptr, 16))] = row;
            else
                table.cie_rows[cie] = row;
        }
    }
    return table;
}

// Our rule in readelf's notation. readelf prints "u" both for a register no rule names yet
// and for DW_CFA_undefined.
std::string cell(const RegisterRule& rule)
{
    switch (rule.kind) {
    case RegisterRule::Kind::unspecified:
    case RegisterRule::Kind::undefined: return "u";
    case RegisterRule::Kind::same_value: return "s";
    case RegisterRule::Kind::at_cfa: return (rule.offset < 0 ? "c" : "c+") + std::to_string(rule.offset);
    case RegisterRule::Kind::is_cfa: return (rule.offset < 0 ? "v" : "v+") + std::to_string(rule.offset);
    case RegisterRule::Kind::in_register: return "r" + std::to_string(rule.register_);
    case RegisterRule::Kind::expression: return "exp";
    }
    return "?";
}

std::string describe(const FrameRow& row, const std::set<uint32_t>& registers)
{
    std::string text = row.cfa_known ? "r" + std::to_string(row.cfa_register) + (row.cfa_offset < 0 ? "" : "+") +
                                           std::to_string(row.cfa_offset)
                                     : "exp";
    for (uint32_t reg = 0; reg < frame_registers; ++reg)
        text += " " + (registers.count(reg) ? cell(row.rules[reg]) : std::string(row.rules[reg].kind == RegisterRule::Kind::unspecified ? "-" : "!" + cell(row.rules[reg])));
    return text;
}

std::string describe(const ReadelfRow& row)
{
    std::string text = row.cfa;
    for (uint32_t reg = 0; reg < frame_registers; ++reg) {
        auto it = row.cells.find(reg);
        text += " " + (it == row.cells.end() ? std::string("-") : it->second);
    }
    return text;
}

const FrameRow* row_at(const FrameFunction& function, uint32_t address)
{
    for (const FrameRow& row : function.rows)
        if (address >= row.start && address < row.end)
            return &row;
    return nullptr;
}

} // namespace

TEST_CASE("call frames: every row of every FDE of every reference image equals readelf's frames-interp")
{
    // Every image of the reference firmware: -O0 to -O2, with and without a frame pointer,
    // and the -O2 scenario written to make GCC use DW_CFA_remember_state/restore_state.
    std::vector<std::string> images;
    for (const auto& entry : std::filesystem::directory_iterator(FIRMWARE_DIR))
        if (entry.path().extension() == ".elf")
            images.push_back(entry.path().string());
    std::sort(images.begin(), images.end());
    REQUIRE(images.size() >= 40);

    size_t fdes = 0, rows = 0, restore_states = 0;
    for (const std::string& image : images) {
        CAPTURE(image);
        const ReadelfTable expected = readelf_frames(image);
        const std::vector<FrameFunction> functions = read_call_frames(Image::open(image));
        REQUIRE(functions.size() == expected.fdes.size());   // no FDE left out
        restore_states += size_t(std::stoul(tool_output("arm-none-eabi-readelf --debug-dump=frames '" + image +
                                                "' | grep -c DW_CFA_restore_state || true")));
        for (size_t i = 0; i < functions.size(); ++i) {
            const FrameFunction& ours = functions[i];
            const ReadelfFde& theirs = expected.fdes[i];
            CAPTURE(theirs.start);
            REQUIRE(ours.start == theirs.start);
            REQUIRE(ours.end == theirs.end);
            // An FDE without instructions: readelf prints no rows, the CIE's initial row holds.
            std::map<uint32_t, ReadelfRow> their_rows = theirs.rows;
            if (their_rows.empty())
                their_rows[theirs.start] = expected.cie_rows.at(theirs.cie);
            std::set<uint32_t> registers;
            for (const auto& [address, row] : their_rows)
                for (const auto& [reg, text] : row.cells)
                    registers.insert(reg);
            // Compare at every address where either table starts a row.
            std::set<uint32_t> starts;
            for (const auto& [address, row] : their_rows)
                starts.insert(address);
            for (const FrameRow& row : ours.rows)
                starts.insert(row.start);
            for (uint32_t address : starts) {
                if (address >= ours.end)
                    continue;
                CAPTURE(address);
                auto theirs_at = their_rows.upper_bound(address);
                REQUIRE(theirs_at != their_rows.begin());
                const FrameRow* ours_at = row_at(ours, address);
                REQUIRE(ours_at != nullptr);
                CHECK(describe(*ours_at, registers) == describe(std::prev(theirs_at)->second));
                ++rows;
            }
            ++fdes;
        }
    }
    MESSAGE(fdes << " FDEs, " << rows << " rows compared, " << restore_states << " DW_CFA_restore_state");
    CHECK(restore_states >= 10);
}

TEST_CASE("call frames: an ELF that cannot be read is an error naming it")
{
    CHECK_THROWS_WITH_AS(read_call_frames(Image::open("/nonexistent/fw.elf")), doctest::Contains("/nonexistent/fw.elf"), Error);
}
