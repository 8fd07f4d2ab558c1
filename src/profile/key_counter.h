#pragma once
// Inside core only: the counter of equal 64-bit keys that attribution and the address chains
// count raw samples with.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace mcuprof::core {

// Counts of equal 64-bit keys: open addressing with linear probing. Profiles have few
// distinct addresses and many samples, so this beats std::unordered_map several times
// over on the ten-million-sample dumps the benchmark reads.
class KeyCounter {
public:
    void add(uint64_t key) { add_many(key, 1); }
    void add_many(uint64_t key, uint64_t n)
    {
        if ((used_ + 1) * 2 > slots_.size())
            grow();
        size_t i = slot_of(key);
        while (slots_[i].count != 0 && slots_[i].key != key)
            i = (i + 1) & (slots_.size() - 1);
        used_ += slots_[i].count == 0;
        slots_[i].key = key;
        slots_[i].count += n;
    }
    template <typename Visit> void each(Visit visit) const
    {
        for (const Slot& s : slots_)
            if (s.count != 0)
                visit(s.key, s.count);
    }

private:
    struct Slot {
        uint64_t key = 0;
        uint64_t count = 0;
    };
    size_t slot_of(uint64_t key) const
    {
        return size_t((key * 0x9E3779B97F4A7C15ull) >> 20) & (slots_.size() - 1);   // Fibonacci hashing
    }
    void grow()
    {
        std::vector<Slot> old = std::move(slots_);
        slots_.assign(old.empty() ? 1024 : old.size() * 2, Slot{});
        used_ = 0;
        for (const Slot& s : old)
            if (s.count != 0) {
                size_t i = slot_of(s.key);
                while (slots_[i].count != 0)
                    i = (i + 1) & (slots_.size() - 1);
                slots_[i] = s;
                ++used_;
            }
    }
    std::vector<Slot> slots_;
    size_t used_ = 0;
};

} // namespace mcuprof::core
