#include <doctest/doctest.h>

#include "mcuprof/inputs/error.h"
#include "mcuprof/inputs/input_kind.h"

using namespace mcuprof::sources;

TEST_CASE("input kind: found from the content")
{
    CHECK(detect_input("boot\nprof raw n=3\np 1 2 3\n") == InputKind::dump);
    CHECK(detect_input("prof hist base=0x08000000 shift=4 n=1 out=0\n") == InputKind::dump);
    CHECK(detect_input("# truth\n0x08000000 12\n") == InputKind::truth_counts);
    CHECK(detect_input("\x7f" "ELF\x01\x01") == InputKind::unknown);
    CHECK(detect_input("") == InputKind::unknown);
    CHECK_THROWS_AS(detect_input_file("/nonexistent/input"), Error);
}
