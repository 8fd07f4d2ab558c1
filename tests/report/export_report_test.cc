// The export formats (pprof, Firefox Profiler, the diff's Markdown and gate) and the format
// tables, on samples whose figures are known by construction. The real consumers read them
// in tests/integration/test_exports.py.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>
#include <zlib.h>

#include "mcuprof/profile/diff.h"
#include "mcuprof/image/error.h"
#include "mcuprof/image/firmware.h"
#include "mcuprof/profile/profile.h"
#include "mcuprof/report/protobuf.h"
#include "mcuprof/report/report.h"
#include "mcuprof/image/source_locator.h"
#include "mcuprof/image/symbols.h"

using namespace mcuprof::core;

namespace {

const std::string symbols_elf = std::string(FIXTURES_DIR) + "/symbols_fixture.elf";
const std::string inline_elf = std::string(FIXTURES_DIR) + "/inline_fixture.elf";

std::string bytes(std::initializer_list<int> values)
{
    std::string out;
    for (int v : values)
        out.push_back(char(v));
    return out;
}

// A decoded message: each field's values in order, varints as numbers, the rest as bytes.
struct Decoded {
    std::multimap<uint32_t, uint64_t> numbers;
    std::multimap<uint32_t, std::string> blobs;

    std::vector<std::string> all(uint32_t field) const
    {
        std::vector<std::string> out;
        for (auto [it, end] = blobs.equal_range(field); it != end; ++it)
            out.push_back(it->second);
        return out;
    }
    uint64_t number(uint32_t field) const
    {
        auto it = numbers.find(field);
        return it == numbers.end() ? 0 : it->second;
    }
};

uint64_t read_varint(const std::string& data, size_t& at)
{
    uint64_t value = 0;
    for (int shift = 0;; shift += 7) {
        REQUIRE(at < data.size());
        const uint8_t byte = uint8_t(data[at++]);
        value |= uint64_t(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return value;
    }
}

Decoded decode(const std::string& data)
{
    Decoded out;
    for (size_t at = 0; at < data.size();) {
        const uint64_t key = read_varint(data, at);
        if ((key & 7) == 0) {
            out.numbers.emplace(uint32_t(key >> 3), read_varint(data, at));
        } else {
            REQUIRE((key & 7) == 2);
            const uint64_t size = read_varint(data, at);
            REQUIRE(at + size <= data.size());
            out.blobs.emplace(uint32_t(key >> 3), data.substr(at, size));
            at += size;
        }
    }
    return out;
}

std::vector<uint64_t> packed(const std::string& data)
{
    std::vector<uint64_t> out;
    for (size_t at = 0; at < data.size();)
        out.push_back(read_varint(data, at));
    return out;
}

std::string gunzip(const std::string& data)
{
    z_stream stream{};
    REQUIRE(inflateInit2(&stream, 15 + 16) == Z_OK);   // gzip only
    std::string out(1 << 20, '\0');
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    stream.avail_in = uInt(data.size());
    stream.next_out = reinterpret_cast<Bytef*>(out.data());
    stream.avail_out = uInt(out.size());
    const int result = inflate(&stream, Z_FINISH);
    inflateEnd(&stream);
    REQUIRE(result == Z_STREAM_END);
    out.resize(stream.total_out);
    return out;
}

// An address in main where the chain is hot_a <- run <- main (line 8), as the locator test finds it.
uint32_t inlined_address(const SymbolTable& symbols, SourceLocator& locator)
{
    for (const Function& f : symbols.functions())
        if (f.name == "main")
            for (uint32_t a = f.start; a < f.start + f.size; a += 2)
                if (locator.frames(a).size() == 3 && locator.frames(a)[0].line == 8)
                    return a;
    FAIL("no inlined address in inline_fixture.elf");
    return 0;
}

} // namespace

TEST_CASE("protobuf writer: the encoding guide's examples")
{
    // protobuf.dev "Encoding": field 1 = 150 is 08 96 01; field 2 = "testing" is 12 07 ...;
    // packed field 4 = [3, 270, 86942] is 22 06 03 8E 02 9E A7 05.
    ProtoWriter a;
    a.varint(1, 150);
    CHECK(a.data() == bytes({0x08, 0x96, 0x01}));
    ProtoWriter b;
    b.bytes(2, "testing");
    CHECK(b.data() == bytes({0x12, 0x07}) + "testing");
    ProtoWriter c;
    const uint64_t values[] = {3, 270, 86942};
    c.packed(4, values);
    CHECK(c.data() == bytes({0x22, 0x06, 0x03, 0x8E, 0x02, 0x9E, 0xA7, 0x05}));
    // An embedded message is its bytes, length-delimited; -1 as int64 takes ten bytes.
    ProtoWriter d;
    d.message(3, a);
    CHECK(d.data() == bytes({0x1a, 0x03, 0x08, 0x96, 0x01}));
    ProtoWriter e;
    e.varint(1, uint64_t(int64_t(-1)));
    CHECK(e.data() == bytes({0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
    // A field number above 15 takes a two-byte key.
    ProtoWriter f;
    f.varint(16, 1);
    CHECK(f.data() == bytes({0x80, 0x01, 0x01}));
}

TEST_CASE("gzip: a member zlib inflates back, with gzip's magic")
{
    std::string text;
    for (int i = 0; i < 1000; ++i)
        text += "mcuprof " + std::to_string(i) + '\n';
    const std::string packed_text = gzip(text);
    REQUIRE(packed_text.size() > 10);
    CHECK(uint8_t(packed_text[0]) == 0x1f);   // RFC 1952: ID1 ID2, CM 8 (deflate)
    CHECK(uint8_t(packed_text[1]) == 0x8b);
    CHECK(uint8_t(packed_text[2]) == 8);
    CHECK(gunzip(packed_text) == text);
    CHECK(gunzip(gzip("")).empty());
}

TEST_CASE("pprof: locations carry the inline chain innermost first, and the values add up")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(inline_elf));
    const Image locator_image = Image::open(inline_elf);
    SourceLocator locator(locator_image);
    const uint32_t hot = inlined_address(symbols, locator);
    SampleSet s;
    s.origin = "constructed inline";
    s.pcs = {hot, hot, hot};
    s.without_address["(sleep)"] = 1;
    AttributionOptions options;
    options.stacks = true;
    const Profile profile = attribute(s, symbols, &locator, options);
    std::ostringstream out;
    CHECK(write_pprof({profile, nullptr, s, symbols, &locator, {}, 0}, out).empty());

    const Decoded message = decode(gunzip(out.str()));
    const std::vector<std::string> strings = message.all(6);
    REQUIRE(!strings.empty());
    CHECK(strings[0].empty());   // profile.proto: string_table[0] must be ""
    const Decoded sample_type = decode(message.all(1).at(0));
    CHECK(strings.at(sample_type.number(1)) == "samples");
    CHECK(strings.at(sample_type.number(2)) == "count");

    std::map<uint64_t, std::string> function_names;
    for (const std::string& f : message.all(5)) {
        const Decoded function = decode(f);
        function_names[function.number(1)] = strings.at(function.number(2));
    }
    std::map<uint64_t, Decoded> locations;
    for (const std::string& l : message.all(4)) {
        const Decoded location = decode(l);
        locations[location.number(1)] = location;
    }
    uint64_t total = 0;
    std::map<std::string, uint64_t> by_leaf;
    for (const std::string& sample_bytes : message.all(2)) {
        const Decoded sample = decode(sample_bytes);
        const std::vector<uint64_t> ids = packed(sample.all(1).at(0));
        const std::vector<uint64_t> values = packed(sample.all(2).at(0));
        REQUIRE(values.size() == 1);
        total += values[0];
        REQUIRE(!ids.empty());
        const Decoded& leaf = locations.at(ids[0]);
        std::vector<std::string> lines;
        for (const std::string& line : leaf.all(4))
            lines.push_back(function_names.at(decode(line).number(1)));
        by_leaf[lines.front()] += values[0];
        if (leaf.number(3) == hot) {
            CHECK(lines == std::vector<std::string>{"hot_a", "run", "main"});
            CHECK(decode(leaf.all(4).at(0)).number(2) == 8);   // hot_a's line
            CHECK(leaf.number(2) == 1);                         // the firmware's mapping
        }
    }
    CHECK(total == 4);
    CHECK(by_leaf["hot_a"] == 3);
    CHECK(by_leaf["(sleep)"] == 1);
    const Decoded mapping = decode(message.all(3).at(0));
    CHECK(mapping.number(2) <= hot);
    CHECK(mapping.number(3) > hot);
    CHECK(mapping.number(7) == 1);   // has_functions: pprof must not look for symbols
}

namespace {

// Each pprof sample's frames, root first (the first line of each location: its outermost
// function), with its value.
std::vector<std::pair<std::vector<std::string>, uint64_t>> pprof_chains(const std::string& gzipped)
{
    const Decoded message = decode(gunzip(gzipped));
    const std::vector<std::string> strings = message.all(6);
    std::map<uint64_t, std::string> function_names;
    for (const std::string& f : message.all(5)) {
        const Decoded function = decode(f);
        function_names[function.number(1)] = strings.at(function.number(2));
    }
    std::map<uint64_t, std::string> outermost;   // location id -> its last line's function
    for (const std::string& l : message.all(4)) {
        const Decoded location = decode(l);
        outermost[location.number(1)] = function_names.at(decode(location.all(4).back()).number(1));
    }
    std::vector<std::pair<std::vector<std::string>, uint64_t>> chains;
    for (const std::string& sample_bytes : message.all(2)) {
        const Decoded sample = decode(sample_bytes);
        std::vector<std::string> names;
        for (uint64_t id : packed(sample.all(1).at(0)))
            names.insert(names.begin(), outermost.at(id));
        chains.emplace_back(names, packed(sample.all(2).at(0)).at(0));
    }
    std::sort(chains.begin(), chains.end());
    return chains;
}

} // namespace

TEST_CASE("pprof: by task, the roots the stack rows have: (no task), [truncated], [Secure state]")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(symbols_elf));
    SampleSet s;
    s.origin = "constructed <stacks>";
    // local_b called by func_a: untagged twice; in "motor" once, its chain cut short; once in
    // "motor" complete up to a call from the Secure state; func_c in an unnamed task.
    s.pcs = {0x08000012, 0x08000012, 0x08000012, 0x08000012, 0x08000022};
    s.stacks = {{{0x08000004}, false}, {{0x08000004}, false}, {{}, true, UnwindStop::depth},
                {{0x08000004}, false, UnwindStop::secure_caller}, {{}, false}};
    s.tags = {0, 0, 0x20000100, 0x20000100, 0x20000300};
    s.tag_names = {{0x20000100, "motor"}};
    AttributionOptions by_task;
    by_task.by = Grouping::task;
    const Profile profile = attribute(s, symbols, nullptr, by_task);
    std::ostringstream out;
    CHECK(write_pprof({profile, nullptr, s, symbols, nullptr, {}, 0}, out).empty());
    using chain = std::pair<std::vector<std::string>, uint64_t>;
    CHECK(pprof_chains(out.str()) == std::vector<chain>{
                                         {{"(no task)", "func_a", "local_b"}, 2},
                                         {{"0x20000300", "func_c"}, 1},
                                         {{"[truncated]", "motor", "local_b"}, 1},
                                         {{"motor", "[Secure state]", "func_a", "local_b"}, 1},
                                     });
    // The same roots as the profile's own stack rows, which the other stack formats print.
    std::vector<chain> rows;
    for (const StackRow& row : profile.stacks) {
        std::vector<std::string> names;
        for (const StackFrame& f : shown_frames(row))
            names.push_back(f.function);
        rows.emplace_back(names, uint64_t(row.samples));
    }
    std::sort(rows.begin(), rows.end());
    CHECK(rows == pprof_chains(out.str()));

    // The Firefox Profiler's stacks carry the Secure state's root too (the task is the thread).
    std::ostringstream firefox;
    write_firefox({profile, nullptr, s, symbols, nullptr, {}, 0}, firefox);
    const nlohmann::json doc = nlohmann::json::parse(firefox.str());
    std::set<std::string> names;
    for (const nlohmann::json& name : doc["shared"]["stringArray"])
        names.insert(name.get<std::string>());
    CHECK(names.count("[Secure state]") == 1);
    CHECK(doc["threads"][0]["name"] == "(no task)");   // as the task rows name it, not 0x00000000
}

TEST_CASE("firefox: samples in time order, stacks as a prefix tree, inline depth")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(symbols_elf));
    SampleSet s;
    s.origin = "constructed <stacks>";
    // func_a -> local_b twice, func_a -> func_c -> func_c once, func_c cut short once.
    s.pcs = {0x08000012, 0x08000012, 0x08000022, 0x08000024};
    s.stacks = {{{0x08000004}, false}, {{0x08000004}, false}, {{0x08000022, 0x08000006}, false}, {{}, true}};
    s.times_ns = {1'000'000, 2'500'000, 4'000'000, 4'000'001};
    const Profile profile = attribute(s, symbols, nullptr, {});
    std::ostringstream out;
    CHECK(write_firefox({profile, nullptr, s, symbols, nullptr, {}, 0}, out).empty());
    const nlohmann::json doc = nlohmann::json::parse(out.str());

    CHECK(doc["meta"]["preprocessedProfileVersion"] == 70);
    const nlohmann::json& shared = doc["shared"];
    const nlohmann::json& thread = doc["threads"][0];
    const nlohmann::json& samples = thread["samples"];
    CHECK(samples["length"] == 4);
    CHECK(samples["time"] == nlohmann::json({1.0, 2.5, 4.0, 4.000001}));

    // Walk each sample's stack to its root through prefixOffset; names from the string array.
    auto names_of = [&](size_t stack) {
        std::vector<std::string> names;
        for (;;) {
            const size_t frame = shared["stackTable"]["frame"][stack];
            const size_t func = shared["frameTable"]["func"][frame];
            names.insert(names.begin(), shared["stringArray"][size_t(shared["funcTable"]["name"][func])]);
            const size_t offset = shared["stackTable"]["prefixOffset"][stack];
            if (offset == 0)
                return names;
            REQUIRE(offset <= stack);   // parents come first
            stack -= offset;
        }
    };
    using names = std::vector<std::string>;
    CHECK(names_of(samples["stack"][0]) == names{"func_a", "local_b"});
    CHECK(samples["stack"][0] == samples["stack"][1]);   // one stack node, shared
    CHECK(names_of(samples["stack"][2]) == names{"func_a", "func_c", "func_c"});
    CHECK(names_of(samples["stack"][3]) == names{"[truncated]", "func_c"});
    // The leaf frame's address is the sampled PC.
    const size_t leaf = shared["stackTable"]["frame"][size_t(samples["stack"][0])];
    CHECK(shared["frameTable"]["address"][leaf] == 0x08000012);

    // Inline chains: frames at one address, depth 0 for the outermost.
    const SymbolTable inlined = SymbolTable::load(Image::open(inline_elf));
    const Image locator_image = Image::open(inline_elf);
    SourceLocator locator(locator_image);
    SampleSet flat;
    flat.origin = "constructed inline";
    flat.pcs = {inlined_address(inlined, locator)};
    const Profile flat_profile = attribute(flat, inlined, &locator, {});
    std::ostringstream flat_out;
    write_firefox({flat_profile, nullptr, flat, inlined, &locator, {}, 0}, flat_out);
    const nlohmann::json flat_doc = nlohmann::json::parse(flat_out.str());
    CHECK(flat_doc["shared"]["frameTable"]["inlineDepth"] == nlohmann::json({0, 1, 2}));
    CHECK(flat_doc["threads"][0]["samples"]["time"] == nlohmann::json({0.0}));   // no times: the index

    SampleSet counts;
    counts.origin = "truth";
    counts.counts = {{0x08000000, 5}};
    const Profile counted = attribute(counts, symbols, nullptr, {});
    std::ostringstream ignored;
    CHECK_THROWS_AS(write_firefox({counted, nullptr, counts, symbols, nullptr, {}, 0}, ignored), Error);

    // Tagged samples: one thread per task, named, each with its own samples in order.
    s.tags = {0x20000100, 0x20000200, 0x20000100, 0x20000300};
    s.tag_names = {{0x20000100, "motor"}, {0x20000200, "link"}};
    std::ostringstream tasks_out;
    write_firefox({profile, nullptr, s, symbols, nullptr, {}, 0}, tasks_out);
    const nlohmann::json tasks = nlohmann::json::parse(tasks_out.str());
    REQUIRE(tasks["threads"].size() == 3);
    CHECK(tasks["threads"][0]["name"] == "motor");
    CHECK(tasks["threads"][0]["samples"]["time"] == nlohmann::json({1.0, 4.0}));
    CHECK(tasks["threads"][1]["name"] == "link");
    CHECK(tasks["threads"][2]["name"] == "0x20000300");
    CHECK(tasks["threads"][2]["samples"]["length"] == 1);
    CHECK(tasks["threads"][0]["isMainThread"] == true);
    CHECK(tasks["threads"][1]["isMainThread"] == false);

    // Two cores: one thread per core and task, "core N: task", in the order first sampled.
    s.cores = {0, 1, 1, 1};
    s.core_names = {{1, "cm4"}};
    std::ostringstream cores_out;
    write_firefox({profile, nullptr, s, symbols, nullptr, {}, 0}, cores_out);
    const nlohmann::json cores = nlohmann::json::parse(cores_out.str());
    REQUIRE(cores["threads"].size() == 4);
    CHECK(cores["threads"][0]["name"] == "core 0: motor");
    CHECK(cores["threads"][1]["name"] == "cm4: link");
    CHECK(cores["threads"][2]["name"] == "cm4: motor");
    CHECK(cores["threads"][3]["name"] == "cm4: 0x20000300");
    for (const nlohmann::json& thread : cores["threads"])
        CHECK(thread["samples"]["length"] == 1);
    CHECK(cores["threads"][2]["samples"]["time"] == nlohmann::json({4.0}));
}

TEST_CASE("diff gate and markdown: only rows that grew beyond both bounds fail")
{
    ProfileDiff diff;
    diff.a_origin = "a | build";
    diff.b_origin = "b";
    diff.a_total = diff.b_total = 1000;
    diff.threshold = 3;
    //            name   a_s  b_s  a%  b%  delta   z     flagged  distinct  function
    diff.rows = {{"grew", 100, 200, 10, 20, 10, 6.0, true, 0, 0, ""},
                 {"grew_little", 100, 130, 10, 13, 3, 3.5, true, 0, 0, ""},
                 {"noisy", 100, 160, 10, 16, 6, 2.0, false, 0, 0, ""},
                 {"shrank", 300, 100, 30, 10, -20, -9.0, true, 0, 0, ""}};
    const std::vector<DiffRow> failed = regressions(diff, 5);
    REQUIRE(failed.size() == 1);
    CHECK(failed[0].name == "grew");
    CHECK(regressions(diff, 2).size() == 2);
    CHECK(regressions(diff, 10).empty());   // more than PP: 10 is not more than 10

    std::ostringstream out;
    write_markdown(diff, out, 5.0);
    const std::string text = out.str();
    CHECK(text.find("### mcuprof: failed, 1 function grew by more than 5 pp") == 0);
    CHECK(text.find("a \\| build") != std::string::npos);   // a '|' would split the cell
    CHECK(text.find("| grew | 10.00 | 20.00 | +10.00 | 6.0 |") != std::string::npos);
    CHECK(text.find("| noisy |") == std::string::npos);     // not beyond the threshold
    std::ostringstream passed;
    write_markdown(diff, passed, 25.0);
    CHECK(passed.str().find("### mcuprof: passed") == 0);

    // The totals' gate beside it: one verdict, a clause per gate, failed when any failed.
    diff.a_instructions = 1000;
    diff.b_instructions = 1150;
    std::ostringstream both;
    write_markdown(diff, both, 25.0, 10.0);
    CHECK(both.str().find("### mcuprof: failed, no function grew by more than 25 pp and beyond 3 standard errors; "
                          "the run's instructions changed by +15.00 %, more than 10 %\n") == 0);
    CHECK(both.str().find("- instructions of the whole run: A 1000, B 1150, B/A 1.150 (+15.00 %)") !=
          std::string::npos);
    std::ostringstream total_only;
    write_markdown(diff, total_only, std::nullopt, 20.0);
    CHECK(total_only.str().find(
              "### mcuprof: passed, the run's instructions changed by +15.00 %, not more than 20 %") == 0);
}

TEST_CASE("format tables: names are unique, every row writes, help lists them")
{
    std::set<std::string_view> names;
    for (const ReportFormat& f : profile_formats()) {
        CHECK(names.insert(f.name).second);
        CHECK(bool(f.write));
        CHECK(!f.help.empty());
    }
    for (const char* expected : {"text", "json", "html", "collapsed", "speedscope", "callgrind", "pprof",
                                 "firefox", "gmon"})
        CHECK(find_format(profile_formats(), expected) != nullptr);
    CHECK(find_format(profile_formats(), "dot") == nullptr);
    CHECK(find_format(call_graph_formats(), "dot") != nullptr);
    CHECK(find_format(diff_formats(), "markdown") != nullptr);
    CHECK(format_names(diff_formats()) == "text, json, html or markdown");
    CHECK(format_help(diff_formats()).starts_with("text ("));
    CHECK(find_format(profile_formats(), "gmon")->binary);
    CHECK(find_format(profile_formats(), "pprof")->binary);
}

TEST_CASE("timeline: shares per slice of time, hottest functions first")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(symbols_elf));
    SampleSet s;
    s.origin = "constructed timeline";
    // 100 samples over 99 ms: func_a the first 60 (0..59 ms), local_b the last 40 (60..99 ms).
    for (int i = 0; i < 100; ++i) {
        s.pcs.push_back(i < 60 ? 0x08000000 : 0x08000010);
        s.times_ns.push_back(uint64_t(i) * 1'000'000);
    }
    const Timeline t = timeline_of(s, symbols);
    REQUIRE(t.slices == 4);   // 100 samples, about 25 a slice
    CHECK(t.start_ms == 0);
    CHECK(t.end_ms == 99);
    // Slices of 24.75 ms: samples 0-24, 25-49, 50-74, 75-99.
    CHECK(t.samples_per_slice == std::vector<size_t>{25, 25, 25, 25});
    REQUIRE(t.series.size() == 2);
    CHECK(t.series[0].function == "func_a");
    CHECK(t.series[0].shares == std::vector<double>{1.0, 1.0, 10.0 / 25, 0.0});
    CHECK(t.series[1].function == "local_b");
    CHECK(t.series[1].shares == std::vector<double>{0.0, 0.0, 15.0 / 25, 1.0});

    std::ostringstream page;
    write_timeline(t, page);
    CHECK(page.str().find("<svg id=\"timeline\"") != std::string::npos);
    CHECK(page.str().find("data-function=\"func_a\" data-shares=\"1.0000 1.0000 0.4000 0.0000\"") !=
          std::string::npos);
    CHECK(page.str().find("in each of 4 slices of 24.8 ms of the recording") != std::string::npos);
    Timeline longer = t;   // 4 slices of 2.4875 s read as seconds, not "2.49e+03 ms"
    longer.end_ms = 9950;
    std::ostringstream long_page;
    write_timeline(longer, long_page);
    CHECK(long_page.str().find("slices of 2.49 s of the recording") != std::string::npos);

    s.times_ns.clear();   // no times (an on-chip ring dump): no timeline
    CHECK(timeline_of(s, symbols).series.empty());
}

TEST_CASE("html: the pacing of a recording in words, not its JSON")
{
    CHECK(describe_pacing(R"({"clock":"wall","shape":"exponential","mean_seconds":0.001,"between":"samples"})") ==
          "exponential waits of 1 ms on average between samples (wall clock)");
    CHECK(describe_pacing(R"({"clock":"icount","shape":"exponential","mean_instructions":20000})") ==
          "exponential intervals of 20000 instructions on average (instruction count)");
    CHECK(describe_pacing(R"({"clock":"wall","shape":"uniform","jitter":0.5,"mean_seconds":0.0005,)"
                          R"("between":"batches","batch":64,"max_halted":0.1})") ==
          "uniform waits of 500 us on average between batches (wall clock), 64 DWT_PCSR reads per batch, jitter "
          "0.5, halted at most 10.0 % of the time");
    CHECK(describe_pacing("not json") == "not json");   // shown as it is
}
