#include "shapes.hpp"

namespace shapes {

// Each area() spins a little so that its share is large enough to measure.
int Square::area() const
{
    int sum = 0;
    for (int i = 0; i < 40; ++i)
        sum += side * side + i;
    return sum;
}

int Triangle::area() const
{
    int sum = 0;
    for (int i = 0; i < 120; ++i)
        sum += base * height / 2 + (i & 3);
    return sum;
}

} // namespace shapes
