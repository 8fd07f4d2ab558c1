#include "mcuprof/link/target_description.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>

#include "mcuprof/link/error.h"

namespace pt = boost::property_tree;

namespace mcuprof::transport {
namespace {

struct Walker {
    const std::function<std::string(const std::string&)>& fetch;
    const std::string& peer;
    std::vector<RegisterInfo> registers;
    std::string architecture;
    unsigned next_number = 0;
    std::set<std::string> seen;   // guards against include loops

    void document(const std::string& annex)
    {
        if (!seen.insert(annex).second)
            return;
        pt::ptree tree;
        std::istringstream text(fetch(annex));
        try {
            // The DOCTYPE line names a DTD the parser need not load.
            pt::read_xml(text, tree, pt::xml_parser::no_comments);
        } catch (const pt::xml_parser_error& e) {
            throw Error(Error::Kind::protocol, peer, annex, std::string("bad target description XML: ") + e.what());
        }
        for (const auto& [name, node] : tree)
            element(name, node);
    }

    void element(const std::string& name, const pt::ptree& node)
    {
        if (name == "target" || name == "feature") {
            for (const auto& [child_name, child] : node)
                element(child_name, child);
        } else if (name == "architecture") {
            architecture = node.get_value<std::string>();
        } else if (name == "xi:include") {
            document(node.get<std::string>("<xmlattr>.href"));
        } else if (name == "reg") {
            RegisterInfo r;
            r.name = node.get<std::string>("<xmlattr>.name", "");
            r.bits = node.get<unsigned>("<xmlattr>.bitsize", 32);
            // A register without regnum follows the one before it (GDB's rule).
            r.number = node.get<unsigned>("<xmlattr>.regnum", next_number);
            next_number = r.number + 1;
            registers.push_back(std::move(r));
        }
    }
};

} // namespace

TargetDescription TargetDescription::parse(const std::function<std::string(const std::string&)>& fetch,
                                           const std::string& peer)
{
    Walker walker{fetch, peer, {}, {}, 0, {}};
    try {
        walker.document("target.xml");
    } catch (const pt::ptree_error& e) {
        throw Error(Error::Kind::protocol, peer, "target.xml", std::string("bad target description: ") + e.what());
    }
    TargetDescription d;
    d.registers_ = std::move(walker.registers);
    d.architecture_ = walker.architecture;
    // The 'g' packet carries registers in number order, each its size in bytes.
    std::vector<RegisterInfo*> ordered;
    for (RegisterInfo& r : d.registers_)
        ordered.push_back(&r);
    std::stable_sort(ordered.begin(), ordered.end(),
                     [](const RegisterInfo* a, const RegisterInfo* b) { return a->number < b->number; });
    size_t offset = 0;
    for (RegisterInfo* r : ordered) {
        r->g_offset = offset;
        offset += r->bits / 8;
    }
    return d;
}

const RegisterInfo* TargetDescription::find(std::string_view name) const
{
    // Servers differ in case: QEMU says "xpsr", OpenOCD "xPSR".
    auto same = [](std::string_view a, std::string_view b) {
        return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
                   return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
               });
    };
    for (const RegisterInfo& r : registers_)
        if (same(r.name, name))
            return &r;
    return nullptr;
}

} // namespace mcuprof::transport
