#include "core/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace rtf {

std::string fmt(double v, int decimals, std::string_view non_finite) {
    if (!std::isfinite(v)) return std::string(non_finite);
    // 17 decimals is the most a double carries; the clamp also keeps the buffer large
    // enough for any finite double ("%.17f" of 1.8e308 is 327 characters).
    char buf[352];
    std::snprintf(buf, sizeof buf, "%.*f", std::clamp(decimals, 0, 17), v);
    return buf;
}

}  // namespace rtf
