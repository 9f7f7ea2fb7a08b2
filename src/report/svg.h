#pragma once
// A minimal SVG writer for the report's charts: shapes, text, linear scales and tick
// placement. Charts are bars, lines and rectangles on linear axes, which SVG draws
// natively, so no charting library is bundled: the HTML stays one small file that opens
// offline and renders identically in any browser. Every string passed in is escaped here.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rtf::report {

// Linear map from the data interval [d0, d1] to the pixel interval [r0, r1]. A degenerate
// domain (d0 == d1) is widened so nothing divides by zero.
struct Scale {
    double d0 = 0, d1 = 1, r0 = 0, r1 = 1;
    Scale(double d0_, double d1_, double r0_, double r1_);
    double operator()(double v) const;
};

// About `n` round tick values (1, 2, 5 x 10^k steps) covering [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int n = 6);
// A tick label with just enough decimals for the step between ticks.
std::string tick_label(double v, double step);

// Series colour by index (the Tableau 10 palette, in its order).
const char *series_color(size_t i);

class Svg {
public:
    // width/height in px (the element scales to the page width; viewBox keeps proportions).
    Svg(double width, double height, std::string_view label);
    void rect(double x, double y, double w, double h, std::string_view fill, std::string_view tooltip = {},
              std::string_view extra = {});
    void line(double x1, double y1, double x2, double y2, std::string_view stroke, double width = 1,
              std::string_view dash = {});
    // Points (x, y) in px; non-finite points break the line into segments.
    void polyline(const std::vector<std::pair<double, double>> &pts, std::string_view stroke, double width = 1.5);
    void circle(double x, double y, double r, std::string_view fill, std::string_view tooltip = {});
    // anchor: start | middle | end
    void text(double x, double y, std::string_view s, std::string_view anchor = "start", double size = 11,
              std::string_view fill = "#333", std::string_view extra = {});
    // Axis helpers on the plot area: horizontal grid lines + labels at the left for y ticks,
    // labels under the plot for x ticks.
    void y_axis(const Scale &y, double x0, double x1, const std::vector<double> &ticks, std::string_view title);
    void x_axis(const Scale &x, double y0, const std::vector<double> &ticks, std::string_view title);
    std::string str() const;
    double width() const { return w_; }
    double height() const { return h_; }

private:
    double w_, h_;
    std::string body_, label_;
};

}  // namespace rtf::report
