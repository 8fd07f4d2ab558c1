#pragma once
// A string table giving each distinct string one index, in the order first met: pprof and the
// Firefox Profiler name functions and files by such indices.
#include <map>
#include <string>
#include <vector>

namespace mcuprof::core {

class InternedStrings {
public:
    size_t index(const std::string& s)
    {
        auto [it, added] = indices_.emplace(s, strings_.size());
        if (added)
            strings_.push_back(s);
        return it->second;
    }
    const std::vector<std::string>& strings() const { return strings_; }

private:
    std::map<std::string, size_t> indices_;
    std::vector<std::string> strings_;
};

} // namespace mcuprof::core
