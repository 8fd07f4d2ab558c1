#include "mcuprof/inputs/dump_reader.h"

#include <algorithm>
#include <cstdio>

#include "mcuprof/inputs/error.h"
#include "mcuprof/inputs/text_file.h"

namespace mcuprof::sources {
namespace {

// A saturated histogram counter stops at the largest value its 16 bits hold.
constexpr uint32_t saturated_count = 0xFFFF;

bool starts_with(std::string_view text, std::string_view prefix)
{
    return text.substr(0, prefix.size()) == prefix;
}

// The value of "key=" among the space-separated fields of a header line.
std::optional<std::string_view> field(std::string_view line, std::string_view key)
{
    size_t at = 0;
    while (at < line.size()) {
        size_t end = line.find(' ', at);
        if (end == std::string_view::npos)
            end = line.size();
        std::string_view word = line.substr(at, end - at);
        if (word.size() > key.size() && starts_with(word, key) && word[key.size()] == '=')
            return word.substr(key.size() + 1);
        at = end + 1;
    }
    return std::nullopt;
}

class DumpParser {
public:
    DumpParser(std::string_view text, const std::string& path, const ReadProgress& progress)
        : lines_(text, &progress), text_size_(text.size()), path_(path)
    {
        dump_.path = path;
    }

    Dump run()
    {
        std::string_view line;
        while (lines_.next(line))
            take(line);
        for (const DumpChunk& chunk : dump_.chunks)
            check(chunk);
        return std::move(dump_);
    }

private:
    [[noreturn]] void fail(const std::string& problem) const
    {
        throw Error(path_, "line " + std::to_string(lines_.number()), problem);
    }

    void take(std::string_view line)
    {
        if (starts_with(line, "p "))
            words(line, "p", raw_chunk("p"), &DumpChunk::pcs, 8);
        else if (starts_with(line, "g "))
            words(line, "g", raw_chunk("g"), &DumpChunk::tags, 8);
        else if (starts_with(line, "h "))
            words(line, "h", histogram_chunk(), &DumpChunk::counts, 8);
        else if (starts_with(line, "t "))
            entry(line);
        else if (starts_with(line, "prof raw "))
            open(line, DumpChunk::Kind::raw);
        else if (starts_with(line, "prof hist "))
            open(line, DumpChunk::Kind::histogram);
        else if (starts_with(line, "prof topn "))
            open(line, DumpChunk::Kind::table);
        else if (line == "end")
            close();
        else if (starts_with(line, "span="))
            span(line);
        else if (starts_with(line, "task "))
            task(line);
        else
            ++dump_.skipped_lines;
    }

    void close()
    {
        if (current_ != nullptr)
            current_->ended = true;
        current_ = nullptr;
    }

    uint64_t number_field(std::string_view line, std::string_view key, bool hex)
    {
        auto value = field(line, key);
        if (!value)
            fail("header has no " + std::string(key) + "= field");
        uint64_t n = 0;
        uint32_t h = 0;
        if (hex ? !parse_hex32(*value, h) : !parse_decimal(*value, n))
            fail(std::string(key) + "=" + std::string(*value) + " is not a " + (hex ? "hex" : "decimal") + " number");
        return hex ? h : n;
    }

    void open(std::string_view line, DumpChunk::Kind kind)
    {
        DumpChunk chunk;
        chunk.kind = kind;
        chunk.header_line = lines_.number();
        chunk.announced = number_field(line, "n", false);
        chunk.span = pending_span_;
        pending_span_.reset();
        if (kind != DumpChunk::Kind::raw) {
            chunk.shift = static_cast<uint32_t>(number_field(line, "shift", false));
            if (chunk.shift < 1 || chunk.shift > 20)
                fail("shift=" + std::to_string(chunk.shift) + " is outside 1..20 (buckets of 2 bytes to 1 MiB)");
        }
        if (kind == DumpChunk::Kind::histogram) {
            chunk.base = static_cast<uint32_t>(number_field(line, "base", true));
            chunk.outside = number_field(line, "out", false);
        } else if (kind == DumpChunk::Kind::table) {
            chunk.total = number_field(line, "total", false);
            chunk.ignored = number_field(line, "ignored", false);
            chunk.announced_entries = number_field(line, "entries", false);
        } else {
            // Each sample takes 9 bytes of text: the header's n is trusted only that far.
            chunk.pcs.reserve(std::min<uint64_t>(chunk.announced, text_size_ / 9));
        }
        dump_.chunks.push_back(std::move(chunk));
        current_ = &dump_.chunks.back();
    }

    DumpChunk& raw_chunk(const char* kind)
    {
        if (current_ == nullptr || current_->kind != DumpChunk::Kind::raw)
            fail(std::string("'") + kind + "' line outside a 'prof raw' dump");
        return *current_;
    }

    DumpChunk& histogram_chunk()
    {
        if (current_ == nullptr || current_->kind != DumpChunk::Kind::histogram)
            fail("'h' line outside a 'prof hist' dump");
        return *current_;
    }

    // "t BLOCK HITS PERMILLE": hex block start, decimal weight and per-mille.
    void entry(std::string_view line)
    {
        if (current_ == nullptr || current_->kind != DumpChunk::Kind::table)
            fail("'t' line outside a 'prof topn' dump");
        std::string_view rest = line.substr(2);
        std::string_view fields[3];
        for (std::string_view& f : fields) {
            const size_t space = rest.find(' ');
            f = rest.substr(0, space);
            rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
        }
        TableEntry e;
        if (!rest.empty() || !parse_hex32(fields[0], e.block) || !parse_decimal(fields[1], e.hits) ||
            !parse_decimal(fields[2], e.permille))
            fail("'" + std::string(line) + "' is not 't BLOCK HITS PERMILLE' (hex, decimal, decimal)");
        if (e.block & ((1u << current_->shift) - 1u))
            fail("block " + std::string(fields[0]) + " is not aligned to the table's 2^" +
                 std::to_string(current_->shift) + "-byte blocks");
        current_->entries.push_back(e);
    }

    // The hex words after a line's one-letter kind. One pass over the characters with a
    // table lookup each: this loop reads every sample of a large dump.
    void words(std::string_view line, const char* kind, DumpChunk& chunk, std::vector<uint32_t> DumpChunk::*into,
               size_t max_digits)
    {
        std::vector<uint32_t>& values = chunk.*into;
        const char* p = line.data() + 2;
        const char* const end = line.data() + line.size();
        size_t index = 0;
        while (p < end) {
            if (*p == ' ') {
                ++p;
                continue;
            }
            const char* word = p;
            uint32_t value = 0;
            uint8_t bad = 0;
            if (end - p >= 8 && (end - p == 8 || p[8] == ' ') && parse_hex8(p, value)) {
                values.push_back(value);   // the usual word: exactly 8 digits
                ++index;
                p += 8;
                continue;
            }
            while (p < end && *p != ' ') {
                const uint8_t digit = hex_digit(*p++);
                bad |= digit;
                value = (value << 4) | (digit & 0x0F);
            }
            ++index;
            const size_t digits = size_t(p - word);
            if ((bad & 0xF0) != 0 || digits > max_digits)
                fail("word " + std::to_string(index) + " of the '" + kind + "' line, '" +
                     std::string(word, digits) + "', is not a hex number");
            values.push_back(value);
        }
    }

    void span(std::string_view line)
    {
        uint64_t value = 0;
        if (!parse_decimal(line.substr(5), value))
            fail("'" + std::string(line) + "' is not span=DECIMAL");
        pending_span_ = value;
    }

    void task(std::string_view line)
    {
        std::string_view rest = line.substr(5);
        size_t space = rest.find(' ');
        uint32_t address = 0;
        if (space == std::string_view::npos || !parse_hex32(rest.substr(0, space), address))
            fail("task line is not 'task ADDRESS NAME'");
        dump_.tasks[address] = std::string(rest.substr(space + 1));
    }

    void check(const DumpChunk& chunk) const
    {
        const std::string place = "line " + std::to_string(chunk.header_line);
        if (chunk.kind == DumpChunk::Kind::table && chunk.ended && chunk.entries.size() != chunk.announced_entries)
            throw Error(path_, place,
                        "table has " + std::to_string(chunk.entries.size()) + " 't' lines but its header says entries=" +
                            std::to_string(chunk.announced_entries));
        if (chunk.kind == DumpChunk::Kind::raw) {
            if (chunk.pcs.size() > chunk.announced)
                throw Error(path_, place,
                            "dump holds " + std::to_string(chunk.pcs.size()) + " samples but its header says n=" +
                                std::to_string(chunk.announced));
            if (!chunk.tags.empty() && chunk.tags.size() != chunk.pcs.size())
                throw Error(path_, place,
                            "dump has " + std::to_string(chunk.tags.size()) + " tags ('g') for " +
                                std::to_string(chunk.pcs.size()) + " samples ('p')");
        }
    }

    LineCursor lines_;
    size_t text_size_;
    const std::string& path_;
    Dump dump_;
    DumpChunk* current_ = nullptr;
    std::optional<uint64_t> pending_span_;
};

std::string chunk_name(const Dump& dump, size_t index)
{
    return dump.chunks.size() > 1 ? "dump " + std::to_string(index + 1) + " (line " +
                                        std::to_string(dump.chunks[index].header_line) + ")"
                                  : "the dump";
}

// What a reader of the profile must know about one chunk: a ring that wrapped, a
// capture cut short, saturated buckets.
void describe(const Dump& dump, size_t index, core::SampleSet& out)
{
    const DumpChunk& c = dump.chunks[index];
    const std::string name = chunk_name(dump, index);
    if (!c.ended)
        out.notes.push_back(name + " has no 'end' line: the capture may be cut short");
    if (c.kind == DumpChunk::Kind::table) {
        uint64_t permille = 0;
        for (const TableEntry& e : c.entries)
            permille += e.permille;
        out.notes.push_back(
            name + " is a top-" + std::to_string(c.entries.size()) + " table with decay of " +
            std::to_string(1u << c.shift) +
            "-byte blocks: its counts are decayed weights (+2 per sample, -1 per decay turn), not samples, so the "
            "shares are of the recent weight and the error bars are only indicative; the firmware's own per-mille "
            "figures add up to " + std::to_string(permille) +
            " (each as of its entry's last hit; weight of blocks that left the table stays in total=" +
            std::to_string(c.total) + ")");
        if (c.ignored > 0)
            out.notes.push_back(name + ": " + std::to_string(c.ignored) + " of " + std::to_string(c.announced) +
                                " samples fell in the ignore list (the idle loop) and are not counted");
        return;
    }
    if (c.kind == DumpChunk::Kind::raw) {
        if (c.pcs.size() < c.announced)
            out.notes.push_back(name + " holds the last " + std::to_string(c.pcs.size()) + " of " +
                                std::to_string(c.announced) + " samples (the ring wrapped, or the capture is cut)");
        return;
    }
    uint64_t held = c.outside;
    for (size_t k = 0; k < c.counts.size(); ++k) {
        held += c.counts[k];
        if (c.counts[k] == saturated_count)
            out.notes.push_back(name + ": bucket at 0x" + [&] {
                char text[16];
                std::snprintf(text, sizeof text, "%08x", c.base + uint32_t(k << c.shift));
                return std::string(text);
            }() + " is saturated at 65535: its share is a lower bound");
    }
    if (held != c.announced)
        out.notes.push_back(name + " counts " + std::to_string(held) + " samples in its buckets but its header says n=" +
                            std::to_string(c.announced));
}

} // namespace

Dump parse_dump(std::string_view text, const std::string& path, const ReadProgress& progress)
{
    return DumpParser(text, path, progress).run();
}

Dump read_dump(const std::string& path, const ReadProgress& progress)
{
    const MappedFile file(path);
    return parse_dump(file.bytes(), path, progress);
}


core::SampleSet to_samples(Dump dump, const DumpSelection& selection)
{
    if (dump.chunks.empty())
        throw Error(dump.path, "", "no dump in the file: no 'prof raw', 'prof hist' or 'prof topn' line");
    size_t begin = 0;
    size_t end = dump.chunks.size();
    if (selection.chunk) {
        if (*selection.chunk < 1 || *selection.chunk > dump.chunks.size())
            throw Error(dump.path, "", "--chunk " + std::to_string(*selection.chunk) + " asked, but the file holds " +
                                           std::to_string(dump.chunks.size()) + " dump(s)");
        begin = *selection.chunk - 1;
        end = begin + 1;
    }

    core::SampleSet out;
    out.measures_time = true;   // a timer interrupt's samples: it can interrupt WFI
    bool any_raw = false;
    bool any_histogram = false;
    bool any_table = false;
    bool any_tags = false;
    for (size_t i = begin; i < end; ++i) {
        any_raw |= dump.chunks[i].kind == DumpChunk::Kind::raw;
        any_histogram |= dump.chunks[i].kind == DumpChunk::Kind::histogram;
        any_table |= dump.chunks[i].kind == DumpChunk::Kind::table;
        any_tags |= !dump.chunks[i].tags.empty();
    }
    out.origin = std::string("on-chip sampler dump") + (any_raw ? ", raw PCs" : "") +
                 (any_histogram ? ", histogram" : "") + (any_table ? ", top-N table with decay" : "") +
                 (end - begin > 1 ? ", " + std::to_string(end - begin) + " dumps merged" : "") +
                 ": " + dump.path;
    if (selection.first && !any_raw)
        throw Error(dump.path, "", "--first needs raw samples, but the dump holds only a histogram or table");

    size_t budget = selection.first.value_or(SIZE_MAX);
    for (size_t i = begin; i < end; ++i) {
        DumpChunk& c = dump.chunks[i];
        describe(dump, i, out);
        if (c.kind == DumpChunk::Kind::histogram) {
            const uint32_t size = 1u << c.shift;
            for (size_t k = 0; k < c.counts.size(); ++k)
                if (c.counts[k] != 0)
                    out.buckets.push_back({c.base + uint32_t(k << c.shift), size, c.counts[k]});
            out.outside_buckets += c.outside;
            continue;
        }
        if (c.kind == DumpChunk::Kind::table) {
            for (const TableEntry& e : c.entries)
                if (e.hits != 0)
                    out.buckets.push_back({e.block, 1u << c.shift, e.hits});
            continue;
        }
        const size_t take = std::min(budget, c.pcs.size());
        budget -= take;
        const size_t first = out.pcs.size();
        if (first == 0 && take == c.pcs.size()) {
            out.pcs = std::move(c.pcs);   // a whole first chunk moves: millions of samples, no copy
        } else {
            out.pcs.insert(out.pcs.end(), c.pcs.begin(), c.pcs.begin() + take);
        }
        if (any_tags) {
            if (c.tags.empty())
                out.tags.insert(out.tags.end(), take, 0u);
            else
                out.tags.insert(out.tags.end(), c.tags.begin(), c.tags.begin() + take);
        }
        if (take > 0)
            out.sequences.push_back({first, out.pcs.size()});
    }
    if (out.pcs.empty() && out.buckets.empty() && out.outside_buckets == 0)
        throw Error(dump.path, "line " + std::to_string(dump.chunks[begin].header_line), "the dump holds no samples");
    if (any_tags)
        out.tag_names = dump.tasks;
    if (dump.skipped_lines > 0)
        out.origin += " (" + std::to_string(dump.skipped_lines) + " other line(s) skipped)";
    return out;
}

} // namespace mcuprof::sources
