#pragma once
// Inside the profile library only: the rows of a profile as attribution builds them, one per
// name, in the order they were first seen.
#include <string>
#include <unordered_map>
#include <vector>

#include "mcuprof/profile/profile.h"

namespace mcuprof::core::attribution {

class RowBuilder {
public:
    // `part` splits rows of one name: a source line shared by several functions (a
    // template's instances, a header's inline function) is one row per function.
    Row& row(const std::string& name, const std::string& part = {})
    {
        auto [it, added] = index_.emplace(name + '\0' + part, rows_.size());
        if (added) {
            rows_.emplace_back();
            rows_.back().name = name;
            ++parts_[name];
        }
        last_ = it->second;
        return rows_[it->second];
    }
    // The index of the row the last call of row() gave: take() keeps the order.
    size_t last() const { return last_; }
    // The rows, each name unique: the parts of a shared line are named by their function too.
    std::vector<Row> take()
    {
        for (Row& row : rows_)
            if (parts_[row.name] > 1)
                row.name += " (in " + row.function + ")";
        return std::move(rows_);
    }

private:
    std::unordered_map<std::string, size_t> index_;
    std::unordered_map<std::string, size_t> parts_;
    std::vector<Row> rows_;
    size_t last_ = 0;
};

} // namespace mcuprof::core::attribution
