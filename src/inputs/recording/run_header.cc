// The run header's one JSON codec (docs/schema/run-header.schema.json): every key of the
// header is spelled here and nowhere else.
#include "mcuprof/inputs/run_header.h"

#include <utility>

#include "mcuprof/hex.h"
#include "mcuprof/inputs/text_file.h"

namespace mcuprof::sources {
namespace {

template <class Enum>
using Names = std::initializer_list<std::pair<Enum, const char*>>;

const Names<LinkKind> link_kinds = {{LinkKind::gdb, "gdb"}, {LinkKind::openocd, "openocd"}, {LinkKind::qemu, "qemu"}, {LinkKind::stlink, "stlink"}};
const Names<SampleMethod> methods = {
    {SampleMethod::halt, "halt"}, {SampleMethod::pcsr, "pcsr"}, {SampleMethod::swo, "swo"}};
const Names<PacingClock> clocks = {{PacingClock::wall, "wall"}, {PacingClock::icount, "icount"}};
const Names<IntervalShape> shapes = {
    {IntervalShape::exponential, "exponential"}, {IntervalShape::uniform, "uniform"}, {IntervalShape::fixed, "fixed"}};
const Names<PacedBetween> betweens = {{PacedBetween::samples, "samples"}, {PacedBetween::batches, "batches"}};
const Names<CoreSkew> skews = {
    {CoreSkew::none, "none"}, {CoreSkew::measured, "measured"}, {CoreSkew::not_measured, "not measured"}};

template <class Enum>
const char* text_of(Enum value, const Names<Enum>& names)
{
    for (const auto& [each, text] : names)
        if (each == value)
            return text;
    return "";
}

} // namespace

std::string RecordedVariable::name_of(uint32_t bits) const
{
    bits &= mask();
    if (auto known = names.find(bits); known != names.end())
        return known->second;
    if (is_signed && size < 4 && (bits >> (8 * size - 1)) != 0)
        return std::to_string(int64_t(bits) - (int64_t(1) << (8 * size)));   // two's complement
    return is_signed ? std::to_string(int32_t(bits)) : std::to_string(bits);
}

namespace {

// ---- reading: each accessor gives nothing for a member that is missing or of another type.

const nlohmann::json* member(const nlohmann::json& object, const char* key)
{
    if (!object.is_object())
        return nullptr;
    const auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
}

template <class Enum>
std::optional<Enum> enum_at(const nlohmann::json& object, const char* key, const Names<Enum>& names)
{
    const nlohmann::json* j = member(object, key);
    if (j == nullptr || !j->is_string())
        return std::nullopt;
    for (const auto& [each, text] : names)
        if (j->get_ref<const std::string&>() == text)
            return each;
    return std::nullopt;
}

std::optional<std::string> text_at(const nlohmann::json& object, const char* key)
{
    const nlohmann::json* j = member(object, key);
    return j != nullptr && j->is_string() ? std::optional(j->get<std::string>()) : std::nullopt;
}

std::optional<uint64_t> count_at(const nlohmann::json& object, const char* key)
{
    const nlohmann::json* j = member(object, key);
    return j != nullptr && j->is_number_unsigned() ? std::optional(j->get<uint64_t>()) : std::nullopt;
}

std::optional<double> number_at(const nlohmann::json& object, const char* key)
{
    const nlohmann::json* j = member(object, key);
    return j != nullptr && j->is_number() ? std::optional(j->get<double>()) : std::nullopt;
}

bool flag_at(const nlohmann::json& object, const char* key)
{
    const nlohmann::json* j = member(object, key);
    return j != nullptr && j->is_boolean() && j->get<bool>();
}

// ---- writing: an optional member only when it is there.

template <class T>
void put(nlohmann::json& object, const char* key, const std::optional<T>& value)
{
    if (value)
        object[key] = *value;
}

nlohmann::json to_json(const core::FirmwareIdentity& identity)
{
    return {{"kind", identity.kind}, {"value", identity.value}};
}

std::optional<core::FirmwareIdentity> identity_at(const nlohmann::json& object, const char* key)
{
    const nlohmann::json* j = member(object, key);
    if (j == nullptr)
        return std::nullopt;
    const std::optional<std::string> kind = text_at(*j, "kind");
    const std::optional<std::string> value = text_at(*j, "value");
    if (!kind || !value)
        return std::nullopt;
    return core::FirmwareIdentity{*kind, *value};
}

nlohmann::json to_json(const RunHeader::Image& image)
{
    nlohmann::json j = {{"elf", image.elf}, {"elf_path", image.elf_path}};
    if (image.elf_identity)
        j["elf_identity"] = to_json(*image.elf_identity);
    return j;
}

RunHeader::Image image_of(const nlohmann::json& j)
{
    return {text_at(j, "elf").value_or(""), text_at(j, "elf_path").value_or(""), identity_at(j, "elf_identity")};
}

void put_link(nlohmann::json& j, const RunHeader::Link& link)
{
    if (link.source)
        j["source"] = text_of(*link.source, link_kinds);
    put(j, "gdb", link.gdb);
    put(j, "openocd", link.openocd);
    put(j, "stlink", link.stlink);
    put(j, "stlink_probe", link.stlink_probe);
    if (link.server_is_qemu)
        j["server"] = "qemu";
    put(j, "target", link.target);
    put(j, "targets", link.targets);
    put(j, "target_selection", link.target_selection);
    put(j, "round_trip", link.round_trip);
    if (!link.cores.empty()) {
        nlohmann::json& cores = j["cores"] = nlohmann::json::array();
        for (const RunHeader::Core& c : link.cores) {
            nlohmann::json core = {{"core", c.core}, {"name", c.name}};
            put(core, "thread", c.thread);
            put(core, "target", c.target);
            cores.push_back(std::move(core));
        }
    }
    if (link.core_stops)
        j["core_stops"] = {{"skew", text_of(link.core_stops->skew, skews)}, {"how", link.core_stops->how}};
}

RunHeader::Link link_of(const nlohmann::json& j)
{
    RunHeader::Link link;
    link.source = enum_at(j, "source", link_kinds);
    link.gdb = text_at(j, "gdb");
    link.openocd = text_at(j, "openocd");
    link.stlink = text_at(j, "stlink");
    link.stlink_probe = text_at(j, "stlink_probe");
    link.server_is_qemu = text_at(j, "server") == "qemu";
    link.target = text_at(j, "target");
    link.targets = count_at(j, "targets");
    link.target_selection = text_at(j, "target_selection");
    link.round_trip = text_at(j, "round_trip");
    if (const nlohmann::json* cores = member(j, "cores"); cores != nullptr && cores->is_array())
        for (const nlohmann::json& c : *cores)
            if (const std::optional<uint64_t> core = count_at(c, "core")) {
                const uint32_t number = uint32_t(*core);
                link.cores.push_back({number, text_at(c, "name").value_or("core " + std::to_string(number)),
                                      text_at(c, "thread"), text_at(c, "target")});
            }
    if (const nlohmann::json* stops = member(j, "core_stops"); stops != nullptr && stops->is_object())
        link.core_stops = RunHeader::CoreStops{enum_at(*stops, "skew", skews).value_or(CoreSkew::not_measured),
                                               text_at(*stops, "how").value_or("")};
    return link;
}

RunHeader::Pacing pacing_of(const nlohmann::json& j)
{
    RunHeader::Pacing p;
    p.clock = enum_at(j, "clock", clocks).value_or(PacingClock::wall);
    p.shape = enum_at(j, "shape", shapes).value_or(IntervalShape::exponential);
    p.mean_seconds = number_at(j, "mean_seconds");
    p.mean_instructions = number_at(j, "mean_instructions");
    p.between = enum_at(j, "between", betweens);
    if (const std::optional<uint64_t> batch = count_at(j, "batch"))
        p.batch = unsigned(*batch);
    p.note = text_at(j, "note");
    p.jitter = number_at(j, "jitter");
    p.max_halted = number_at(j, "max_halted");
    return p;
}

nlohmann::json to_json(const RecordedVariable& v)
{
    nlohmann::json values = nlohmann::json::object();
    for (const auto& [bits, name] : v.names)
        values[std::to_string(bits)] = name;
    return {{"name", v.name}, {"address", hex32(v.address)}, {"size", v.size}, {"signed", v.is_signed}, {"values", values}};
}

// Nothing without a name, or of a size other than 1, 2 or 4 bytes.
std::optional<RecordedVariable> variable_of(const nlohmann::json& j)
{
    const std::optional<std::string> name = text_at(j, "name");
    const std::optional<uint64_t> size = count_at(j, "size");
    if (!name || !size || (*size != 1 && *size != 2 && *size != 4))
        return std::nullopt;
    RecordedVariable v;
    v.name = *name;
    v.size = uint32_t(*size);
    v.is_signed = flag_at(j, "signed");
    if (const std::optional<std::string> address = text_at(j, "address"))
        parse_hex32(*address, v.address);
    if (const nlohmann::json* values = member(j, "values"); values != nullptr && values->is_object())
        for (const auto& [bits, name] : values->items()) {
            if (!name.is_string() || bits.empty() || bits.size() > 10 ||
                bits.find_first_not_of("0123456789") != std::string::npos)
                continue;
            const uint64_t number = std::stoull(bits);
            if (number <= 0xFFFFFFFFu)
                v.names[uint32_t(number)] = name.get<std::string>();
        }
    return v;
}

nlohmann::json to_json(const RunHeader::QemuRun& q)
{
    nlohmann::json j = {{"machine", q.machine}, {"record", q.record}, {"replay", q.replay},
                        {"exited", q.exited},   {"run_end", q.run_end}};
    put(j, "instructions", q.instructions);
    return j;
}

RunHeader::QemuRun qemu_run_of(const nlohmann::json& j)
{
    return {text_at(j, "machine").value_or(""), text_at(j, "record").value_or(""), text_at(j, "replay").value_or(""),
            count_at(j, "instructions"),        flag_at(j, "exited"),                text_at(j, "run_end").value_or("")};
}

nlohmann::json to_json(const RunHeader::OpenocdRun& o)
{
    return {{"chip", o.chip}, {"probe", o.probe}, {"command", o.command}};
}

RunHeader::OpenocdRun openocd_run_of(const nlohmann::json& j)
{
    return {text_at(j, "chip").value_or(""), text_at(j, "probe").value_or(""), text_at(j, "command").value_or("")};
}

} // namespace

const char* to_string(LinkKind kind)
{
    return text_of(kind, link_kinds);
}

const char* to_string(SampleMethod method)
{
    return text_of(method, methods);
}

nlohmann::json to_json(const RunHeader::Pacing& p)
{
    nlohmann::json j = {{"clock", text_of(p.clock, clocks)}, {"shape", text_of(p.shape, shapes)}};
    put(j, "mean_seconds", p.mean_seconds);
    put(j, "mean_instructions", p.mean_instructions);
    if (p.between)
        j["between"] = text_of(*p.between, betweens);
    put(j, "batch", p.batch);
    put(j, "note", p.note);
    put(j, "jitter", p.jitter);
    put(j, "max_halted", p.max_halted);
    return j;
}

nlohmann::json to_json(const RunHeader& h)
{
    nlohmann::json j = nlohmann::json::object();
    put_link(j, h.link);
    if (h.method)
        j["method"] = to_string(*h.method);
    put(j, "seed", h.seed);
    if (h.pacing)
        j["pacing"] = to_json(*h.pacing);
    put(j, "qmp", h.qmp);
    put(j, "probe", h.probe);
    put(j, "bias", h.bias);
    if (h.variable)
        j["variable"] = to_json(*h.variable);
    if (h.qemu)
        j["qemu"] = to_json(*h.qemu);
    if (h.openocd_run)
        j["openocd_run"] = to_json(*h.openocd_run);
    if (!h.images.empty())
        j.update(to_json(h.images.front()));
    if (h.images.size() > 1) {
        nlohmann::json& more = j["more_elves"] = nlohmann::json::array();
        for (size_t i = 1; i < h.images.size(); ++i)
            more.push_back(to_json(h.images[i]));
    }
    put(j, "started", h.started);
    if (!h.tasks.empty()) {
        nlohmann::json& tasks = j["tasks"] = nlohmann::json::object();
        for (const auto& [control_block, name] : h.tasks)
            tasks[hex32(control_block)] = name;
    }
    return j;
}

RunHeader run_header_from_json(const nlohmann::json& j)
{
    RunHeader h;
    h.link = link_of(j);
    h.method = enum_at(j, "method", methods);
    h.seed = count_at(j, "seed");
    if (const nlohmann::json* pacing = member(j, "pacing"); pacing != nullptr && pacing->is_object())
        h.pacing = pacing_of(*pacing);
    h.qmp = text_at(j, "qmp");
    h.probe = text_at(j, "probe");
    h.bias = text_at(j, "bias");
    if (const nlohmann::json* variable = member(j, "variable"))
        h.variable = variable_of(*variable);
    if (const nlohmann::json* qemu = member(j, "qemu"); qemu != nullptr && qemu->is_object())
        h.qemu = qemu_run_of(*qemu);
    if (const nlohmann::json* run = member(j, "openocd_run"); run != nullptr && run->is_object())
        h.openocd_run = openocd_run_of(*run);
    // Recordings before the absolute path and the identity have "elf" alone, and the oldest none.
    if (member(j, "elf") != nullptr || member(j, "elf_path") != nullptr || member(j, "elf_identity") != nullptr)
        h.images.push_back(image_of(j));
    if (const nlohmann::json* more = member(j, "more_elves"); more != nullptr && more->is_array()) {
        if (h.images.empty())
            h.images.emplace_back();   // the main image unnamed
        for (const nlohmann::json& image : *more)
            if (image.is_object())
                h.images.push_back(image_of(image));
    }
    if (const nlohmann::json* started = member(j, "started"); started != nullptr && started->is_number_integer())
        h.started = started->get<int64_t>();
    if (const nlohmann::json* tasks = member(j, "tasks"); tasks != nullptr && tasks->is_object())
        for (const auto& [address, name] : tasks->items()) {
            uint32_t control_block = 0;
            if (name.is_string() && parse_hex32(address, control_block))
                h.tasks[control_block] = name.get<std::string>();
        }
    return h;
}

bool RunHeader::measures_time() const
{
    // Halts at random instants of time (wall clock) can find the core asleep; halts at random
    // instruction counts (icount pacing) land on executed instructions only.
    return !pacing || pacing->clock != PacingClock::icount;
}

bool RunHeader::reads_pcsr() const
{
    return method == SampleMethod::pcsr;
}

} // namespace mcuprof::sources
