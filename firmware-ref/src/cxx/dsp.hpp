// A FIR filter template, instantiated twice (float, 16 taps and long, 8 taps): the two
// instances share every source line below, so a line row of this file belongs to two
// functions (docs/firmware-ref.md, "C++ scenario").
#pragma once

namespace dsp {

template <typename T, unsigned N>
class Fir {
public:
    constexpr Fir() : taps_{}, history_{}, at_(0)
    {
        for (unsigned i = 0; i < N; ++i)
            taps_[i] = T(i + 1);
    }

    // Out of line in every build, so each instance is a function of its own.
    __attribute__((noinline)) T push(T sample)
    {
        history_[at_] = sample;
        at_ = (at_ + 1) % N;
        T sum = T(0);
        unsigned k = at_;
        for (unsigned i = 0; i < N; ++i) {
            sum += taps_[i] * history_[k];
            k = (k + 1) % N;
        }
        return sum;
    }

private:
    T taps_[N];
    T history_[N];
    unsigned at_;
};

} // namespace dsp
