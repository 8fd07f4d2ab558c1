// pprof's profile.proto (github.com/google/pprof, proto/profile.proto), gzipped, as
// `go tool pprof` reads it. Message and field numbers below are that file's.
#include <cmath>
#include <map>
#include <ostream>
#include <tuple>
#include <vector>

#include "mcuprof/profile/address_chains.h"
#include "mcuprof/report/protobuf.h"
#include "mcuprof/report/report.h"
#include "mcuprof/image/symbols.h"
#include "interned_strings.h"

namespace mcuprof::core {

namespace {

// Profile's fields.
enum ProfileField : uint32_t {
    sample_type = 1, sample = 2, mapping = 3, location = 4, function = 5, string_table = 6,
    period_type = 11, period = 12, comment = 13,
};

// A frame that is no code address: a task, a row without an address such as "(sleep)".
constexpr uint32_t no_address = 0;

class PprofBuilder {
public:
    PprofBuilder() { strings_.index(""); }   // the string table's first entry must be ""

    uint64_t text(const std::string& s) { return strings_.index(s); }

    uint64_t function_id(const StackFrame& frame)
    {
        const std::string& name = frame.function;
        const std::string& file = frame.file;
        auto [it, added] = functions_.emplace(std::pair(name, file), functions_.size() + 1);
        if (added) {
            ProtoWriter f;
            f.varint(1, it->second);    // id
            f.varint(2, text(name));    // name, demangled
            f.varint(3, text(frame.symbol.empty() ? name : frame.symbol));   // system_name: as the ELF spells it
            f.varint(4, text(file));    // filename
            out_.message(function, f);
        }
        return it->second;
    }

    // One location per code address and inline chain: `frames` outermost first, all at one
    // address. Its lines go innermost first, the last being the function they are inlined into.
    uint64_t location_id(std::span<const StackFrame> frames)
    {
        std::vector<std::tuple<std::string, std::string, uint32_t>> key;
        for (const StackFrame& f : frames)
            key.emplace_back(f.function, f.file, f.line);
        const uint32_t address = frames.front().address;
        auto [it, added] = locations_.emplace(std::pair(address, key), locations_.size() + 1);
        if (added) {
            ProtoWriter l;
            l.varint(1, it->second);    // id
            if (address != no_address) {
                l.varint(2, 1);         // mapping_id: the firmware
                l.varint(3, address);
                low_ = std::min(low_, address);
                high_ = std::max(high_, address);
            }
            for (auto f = frames.rbegin(); f != frames.rend(); ++f) {
                ProtoWriter line;
                line.varint(1, function_id(*f));
                if (f->line != 0)
                    line.varint(2, f->line);
                l.message(4, line);
            }
            out_.message(location, l);
        }
        return it->second;
    }

    // `core`: the sample's "core" label (a multi-core chip's), none when empty.
    void add_sample(std::span<const uint64_t> leaf_first, uint64_t value, const std::string& core = {})
    {
        ProtoWriter s;
        s.packed(1, leaf_first);        // location_id, the leaf first
        const uint64_t values[] = {value};
        s.packed(2, values);
        if (!core.empty()) {
            ProtoWriter label;          // Label: key, str (string table indexes)
            label.varint(1, text("core"));
            label.varint(2, text(core));
            s.message(3, label);
        }
        samples_.message(sample, s);
    }

    // The whole message: the tables built so far, then the strings.
    std::string finish(const std::string& type, const std::string& elf, const std::string& origin)
    {
        ProtoWriter value_type;
        value_type.varint(1, text(type));
        value_type.varint(2, text("count"));
        ProtoWriter head;
        head.message(sample_type, value_type);

        ProtoWriter tail;
        if (low_ <= high_) {
            ProtoWriter m;
            m.varint(1, 1);                 // id
            m.varint(2, low_);              // memory_start
            m.varint(3, uint64_t(high_) + 2);   // memory_limit: past the last Thumb halfword
            m.varint(5, text(elf));         // filename
            for (uint32_t has = 7; has <= 10; ++has)
                m.varint(has, 1);           // has_functions, _filenames, _line_numbers, _inline_frames
            tail.message(mapping, m);
        }
        tail.message(period_type, value_type);
        tail.varint(period, 1);
        tail.varint(comment, text(origin));
        for (const std::string& s : strings_.strings())
            tail.bytes(string_table, s);
        return head.data() + samples_.data() + out_.data() + tail.data();
    }

private:
    InternedStrings strings_;
    std::map<std::pair<std::string, std::string>, uint64_t> functions_;
    std::map<std::pair<uint32_t, std::vector<std::tuple<std::string, std::string, uint32_t>>>, uint64_t>
        locations_;
    uint32_t low_ = UINT32_MAX;
    uint32_t high_ = 0;
    ProtoWriter samples_;
    ProtoWriter out_;   // functions and locations, as they are met
};

} // namespace

std::string write_pprof(const ReportInput& input, std::ostream& out)
{
    const Profile& profile = input.profile;
    const SampleSet& samples = input.samples;
    PprofBuilder builder;
    std::map<uint32_t, std::vector<StackFrame>> frames_of;   // per address: its inline chain
    // The samples' address chains (root first), each with its weight: every sampled PC with its
    // callers, or each exact count. One Location per address then carries that address's line
    // and inline chain, so that `go tool pprof -lines`, `-list` and `-raw` see what
    // `mcuprof report --by line` and `--by address` see. The roots above the code are the stack
    // formats' (shown_frames): [truncated], the task or exception, [Secure state].
    auto root = [&](const std::string& name) {
        StackFrame frame;
        frame.function = name;
        return builder.location_id({&frame, 1});
    };
    for (const AddressChain& chain : address_chains(samples, profile)) {
        std::vector<uint64_t> root_first;
        if (chain.truncated)   // above the task, as shown_frames puts it
            root_first.push_back(root(truncated_frame_name));
        if (!chain.task.empty())
            root_first.push_back(root(chain.task));
        if (chain.from_secure)
            root_first.push_back(root(secure_frame_name));
        for (uint32_t address : chain.addresses) {
            auto it = frames_of.find(address);
            if (it == frames_of.end())
                it = frames_of.emplace(address, frames_at(address, input.symbols, input.locator)).first;
            root_first.push_back(builder.location_id(it->second));
        }
        const std::vector<uint64_t> leaf_first(root_first.rbegin(), root_first.rend());
        builder.add_sample(leaf_first, uint64_t(std::llround(chain.weight)), chain.core);
    }
    // Histogram buckets have no one address, and some rows none at all ("(sleep)"): those
    // come from the profile's stacks, one Location per function as they name it.
    const bool by_address = !samples.pcs.empty() || !samples.counts.empty();
    for (const StackRow& row : profile.stacks) {
        const bool without_address =
            row.frames.size() == 1 && samples.without_address.count(row.frames.front().function) != 0;
        if (by_address && !without_address)
            continue;   // written above, by address
        std::vector<uint64_t> root_first;
        if (row.truncated)
            root_first.push_back(root(truncated_frame_name));
        for (size_t begin = 0; begin < row.frames.size();) {
            size_t end = begin + 1;   // the frames inlined into this one share its location
            while (end < row.frames.size() && row.frames[end].inlined)
                ++end;
            root_first.push_back(builder.location_id({row.frames.data() + begin, end - begin}));
            begin = end;
        }
        const std::vector<uint64_t> leaf_first(root_first.rbegin(), root_first.rend());
        // Histogram shares can be fractional; profile.proto's values are integers.
        builder.add_sample(leaf_first, uint64_t(std::llround(row.samples)));
    }
    const std::string message =
        builder.finish(profile.exact ? "instructions" : "samples", input.symbols.path(), profile.origin);
    out << gzip(message);
    return {};
}

} // namespace mcuprof::core
