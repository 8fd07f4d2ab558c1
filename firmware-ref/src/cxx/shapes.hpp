// Virtual dispatch: the loop in main calls area() through the vtable.
#pragma once

namespace shapes {

struct Shape {
    virtual int area() const { return 0; }
};

struct Square : Shape {
    constexpr explicit Square(int side) : side(side) {}
    int area() const override;
    int side;
};

struct Triangle : Shape {
    constexpr Triangle(int base, int height) : base(base), height(height) {}
    int area() const override;
    int base, height;
};

} // namespace shapes
