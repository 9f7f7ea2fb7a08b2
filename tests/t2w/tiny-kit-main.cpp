// t2w-tiny-kit DIR [SEED]: writes a tiny random token2wav kit (for the e2e script tests).
#include <cstdio>
#include <cstdlib>

#include "tiny-kit.h"

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: t2w-tiny-kit DIR [SEED]\n");
        return 1;
    }
    rtf::t2w::test::write_tiny_kit(argv[1], {}, argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : 1u);
    return 0;
}
