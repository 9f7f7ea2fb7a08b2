#include "report/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "report/escape.h"

namespace rtf::report {

namespace {
std::string n(double v) {
    if (!std::isfinite(v)) v = 0;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
}
}  // namespace

Scale::Scale(double d0_, double d1_, double r0_, double r1_) : d0(d0_), d1(d1_), r0(r0_), r1(r1_) {
    if (!std::isfinite(d0)) d0 = 0;
    if (!std::isfinite(d1)) d1 = d0 + 1;
    if (d1 == d0) d1 = d0 + (d0 == 0 ? 1 : std::fabs(d0) * 0.1);
}

double Scale::operator()(double v) const { return r0 + (v - d0) / (d1 - d0) * (r1 - r0); }

std::vector<double> nice_ticks(double lo, double hi, int n_ticks) {
    if (!std::isfinite(lo) || !std::isfinite(hi)) return {};
    if (hi < lo) std::swap(lo, hi);
    if (hi == lo) hi = lo + 1;
    double raw = (hi - lo) / std::max(1, n_ticks);
    double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = mag;
    for (double m : {1.0, 2.0, 5.0, 10.0}) {
        step = m * mag;
        if (step >= raw) break;
    }
    std::vector<double> t;
    // Multiples of step computed from an integer index, so 1.0 stays 1.0 (no drift).
    double k0 = std::ceil(lo / step - 1e-9);
    for (int k = 0; k < 100; ++k) {
        double v = (k0 + k) * step;
        if (v > hi + step * 1e-9) break;
        t.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
    }
    return t;
}

std::string tick_label(double v, double step) {
    int dec = step >= 1 || step <= 0 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", std::min(dec, 6), v);
    return buf;
}

const char *series_color(size_t i) {
    static const char *k[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                              "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
    return k[i % 10];
}

Svg::Svg(double width, double height, std::string_view label) : w_(width), h_(height), label_(label) {}

void Svg::rect(double x, double y, double w, double h, std::string_view fill, std::string_view tooltip,
               std::string_view extra) {
    body_ += "<rect x=\"" + n(x) + "\" y=\"" + n(y) + "\" width=\"" + n(std::max(0.0, w)) + "\" height=\"" +
             n(std::max(0.0, h)) + "\" fill=\"" + html_escape(fill) + "\"";
    if (!extra.empty()) body_ += " " + std::string(extra);
    if (tooltip.empty()) body_ += "/>";
    else body_ += "><title>" + html_escape(tooltip) + "</title></rect>";
}

void Svg::line(double x1, double y1, double x2, double y2, std::string_view stroke, double width,
               std::string_view dash) {
    body_ += "<line x1=\"" + n(x1) + "\" y1=\"" + n(y1) + "\" x2=\"" + n(x2) + "\" y2=\"" + n(y2) + "\" stroke=\"" +
             html_escape(stroke) + "\" stroke-width=\"" + n(width) + "\"";
    if (!dash.empty()) body_ += " stroke-dasharray=\"" + html_escape(dash) + "\"";
    body_ += "/>";
}

void Svg::polyline(const std::vector<std::pair<double, double>> &pts, std::string_view stroke, double width) {
    std::string seg;
    std::pair<double, double> last{0, 0};
    size_t count = 0;
    auto flush = [&] {
        if (count == 1) circle(last.first, last.second, width + 1, stroke);  // a lone point stays visible
        if (count >= 2)
            body_ += "<polyline fill=\"none\" stroke=\"" + html_escape(stroke) + "\" stroke-width=\"" + n(width) +
                     "\" stroke-linejoin=\"round\" points=\"" + seg + "\"/>";
        seg.clear();
        count = 0;
    };
    for (const auto &p : pts) {
        if (!std::isfinite(p.first) || !std::isfinite(p.second)) {
            flush();
            continue;
        }
        seg += n(p.first) + "," + n(p.second) + " ";
        last = p;
        ++count;
    }
    flush();
}

void Svg::circle(double x, double y, double r, std::string_view fill, std::string_view tooltip) {
    body_ += "<circle cx=\"" + n(x) + "\" cy=\"" + n(y) + "\" r=\"" + n(r) + "\" fill=\"" + html_escape(fill) + "\"";
    if (tooltip.empty()) body_ += "/>";
    else body_ += "><title>" + html_escape(tooltip) + "</title></circle>";
}

void Svg::text(double x, double y, std::string_view s, std::string_view anchor, double size, std::string_view fill,
               std::string_view extra) {
    body_ += "<text x=\"" + n(x) + "\" y=\"" + n(y) + "\" text-anchor=\"" + html_escape(anchor) + "\" font-size=\"" +
             n(size) + "\" fill=\"" + html_escape(fill) + "\"";
    if (!extra.empty()) body_ += " " + std::string(extra);
    body_ += ">" + html_escape(s) + "</text>";
}

void Svg::y_axis(const Scale &y, double x0, double x1, const std::vector<double> &ticks, std::string_view title) {
    double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
    for (double t : ticks) {
        double py = y(t);
        line(x0, py, x1, py, "#e3e3e3", 1);
        text(x0 - 6, py + 4, tick_label(t, step), "end", 10, "#666");
    }
    if (!title.empty()) {
        double cy = (y.r0 + y.r1) / 2;
        text(14, cy, title, "middle", 11, "#444", "transform=\"rotate(-90 14 " + n(cy) + ")\"");
    }
}

void Svg::x_axis(const Scale &x, double y0, const std::vector<double> &ticks, std::string_view title) {
    double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
    line(x.r0, y0, x.r1, y0, "#999", 1);
    for (double t : ticks) {
        double px = x(t);
        line(px, y0, px, y0 + 4, "#999", 1);
        text(px, y0 + 16, tick_label(t, step), "middle", 10, "#666");
    }
    if (!title.empty()) text((x.r0 + x.r1) / 2, y0 + 32, title, "middle", 11, "#444");
}

std::string Svg::str() const {
    return "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + n(w_) + " " + n(h_) + "\" width=\"" + n(w_) +
           "\" height=\"" + n(h_) + "\" role=\"img\" aria-label=\"" + html_escape(label_) +
           "\" font-family=\"system-ui, sans-serif\">" + body_ + "</svg>";
}

}  // namespace rtf::report
