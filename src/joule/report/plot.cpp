#include "joule/report/plot.h"

#include <fmt/format.h>

#include <algorithm>

namespace joule::plot {

namespace {
constexpr double kFont = 11, kTitleFont = 14, kPad = 12;

struct Range {
  double lo = 0, hi = 1;
};

// A "nice" axis over [lo, hi]: ticks at 1, 2 or 5 x 10^k.
std::vector<double> ticks(Range& r, int target = 5) {
  if (!(r.hi > r.lo)) r.hi = r.lo + 1;
  const double raw = (r.hi - r.lo) / target;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  r.lo = std::floor(r.lo / step) * step;
  r.hi = std::ceil(r.hi / step) * step;
  std::vector<double> t;
  for (double v = r.lo; v <= r.hi + step * 1e-9; v += step) t.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  return t;
}

std::string num(double v) {
  if (v == 0) return "0";
  const double a = std::abs(v);
  if (a >= 1e6 || a < 1e-3) return fmt::format("{:.3g}", v);
  if (a >= 100) return fmt::format("{:.0f}", v);
  std::string s = fmt::format("{:.3f}", v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

Range data_range(const std::vector<Series>& ss, bool use_x, bool from_zero) {
  Range r{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
  for (const Series& s : ss)
    for (double v : use_x ? s.x : s.y)
      if (std::isfinite(v)) {
        r.lo = std::min(r.lo, v);
        r.hi = std::max(r.hi, v);
      }
  if (!std::isfinite(r.lo)) return {0, 1};
  if (from_zero) r.lo = std::min(r.lo, 0.0);
  if (r.hi == r.lo) {
    r.hi += std::max(1e-9, std::abs(r.hi) * 0.1);
    if (!from_zero) r.lo -= std::max(1e-9, std::abs(r.lo) * 0.1);
  }
  return r;
}

// The legend as rows of swatches wrapped at `width`; returns its height.
double legend(std::string& out, const std::vector<Series>& ss, double x0, double y0, double width) {
  if (ss.size() < 2 && (ss.empty() || ss[0].name.empty())) return 0;
  double x = x0, y = y0;
  for (size_t i = 0; i < ss.size(); ++i) {
    const double w = 16 + text_width(ss[i].name, kFont) + 14;
    if (x > x0 && x + w > x0 + width) {
      x = x0;
      y += kFont + 6;
    }
    out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"{}\"/>"
                       "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
                       x, y, colour(i), x + 14, y + 9, xml_escape(ss[i].name));
    x += w;
  }
  return y - y0 + kFont + 8;
}

std::string header(double w, double h, const std::string& title) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" viewBox=\"0 0 {:.0f} {:.0f}\" "
      "font-family=\"sans-serif\" font-size=\"{}\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"{}\" font-size=\"{}\" font-weight=\"bold\">{}</text>\n",
      w, h, w, h, kFont, kPad, kPad + kTitleFont, kTitleFont, xml_escape(title));
}
}  // namespace

const char* colour(size_t i) {
  static const char* c[] = {"#3b6ea8", "#e08a2c", "#4b9b5a", "#c8414b", "#8561a8", "#8c6d46", "#d16fb2", "#6f7c85",
                            "#b5b83a", "#3cb0c0"};
  return c[i % 10];
}

std::string xml_escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    switch (c) {
      case '<': r += "&lt;"; break;
      case '>': r += "&gt;"; break;
      case '&': r += "&amp;"; break;
      case '"': r += "&quot;"; break;
      case '\'': r += "&#39;"; break;
      default: r += c;
    }
  }
  return r;
}

double text_width(const std::string& s, double font_px, bool bold) {
  // Advance widths (in em) of DejaVu Sans, Debian's default sans-serif and wider than the
  // Liberation/Arial/Helvetica metrics, so that the estimate bounds the text whatever font the
  // viewer has; printable ASCII from ' ' to '~'. Bold is about 10 % wider.
  static constexpr double kEm[95] = {
      0.318, 0.401, 0.460, 0.838, 0.636, 0.950, 0.780, 0.275, 0.390, 0.390, 0.500, 0.838, 0.318, 0.361, 0.318, 0.337,
      0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.337, 0.337, 0.838, 0.838, 0.838, 0.531,
      1.000, 0.684, 0.686, 0.698, 0.770, 0.632, 0.575, 0.775, 0.752, 0.295, 0.295, 0.656, 0.557, 0.863, 0.748, 0.787,
      0.603, 0.787, 0.695, 0.635, 0.611, 0.732, 0.684, 0.989, 0.685, 0.611, 0.685, 0.390, 0.337, 0.390, 0.838, 0.500,
      0.500, 0.613, 0.635, 0.550, 0.635, 0.615, 0.352, 0.635, 0.634, 0.278, 0.278, 0.579, 0.278, 0.974, 0.634, 0.612,
      0.635, 0.635, 0.411, 0.521, 0.392, 0.634, 0.592, 0.818, 0.592, 0.592, 0.525, 0.636, 0.337, 0.636, 0.838};
  double w = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) == 0x80) continue;  // UTF-8 continuation
    w += c >= 32 && c < 127 ? kEm[c - 32] : 0.8;
  }
  return w * font_px * (bold ? 1.1 : 1.0);
}

std::string shorten_middle(const std::string& s, size_t n) {
  if (s.size() <= n || n < 5) return s;
  const size_t head = (n - 1) / 2, tail = n - 1 - head;
  return s.substr(0, head) + "\u2026" + s.substr(s.size() - tail);
}

std::string bars(const BarChart& c) {
  const size_t nc = c.categories.size(), ns = std::max<size_t>(1, c.series.size());
  std::vector<std::string> labels;
  double label_w = 0;
  for (const std::string& l : c.categories) {
    labels.push_back(shorten_middle(l, c.max_label));
    label_w = std::max(label_w, text_width(labels.back(), kFont));
  }
  Range r = data_range(c.series, false, true);
  if (std::isfinite(c.value_max)) r.hi = c.value_max;
  const std::vector<double> t = ticks(r);
  double tick_w = 0;
  for (double v : t) tick_w = std::max(tick_w, text_width(num(v), kFont));
  const double bar = c.series.size() > 3 ? 9 : 12, group = bar * static_cast<double>(ns) + 6;
  const double extent = std::max(160.0, group * static_cast<double>(nc));
  const double title_w = text_width(c.title, kTitleFont, true) + 2 * kPad;
  std::string body;
  double w = 0, h = 0;
  if (c.horizontal) {
    const double left = kPad + label_w + 8, plot_w = 420, top0 = kPad + kTitleFont + 10;
    w = std::max(left + plot_w + tick_w / 2 + kPad, title_w);
    const double lh = legend(body, c.series, left, top0, w - left - kPad);
    const double top = top0 + lh;
    const double axis_y = top + extent;
    auto X = [&](double v) { return left + plot_w * (v - r.lo) / (r.hi - r.lo); };
    for (double v : t)
      body += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\" stroke=\"#e3e3e3\"/>"
                          "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
                          X(v), top, axis_y, axis_y + kFont + 4, num(v));
    for (size_t i = 0; i < nc; ++i) {
      const double y0 = top + group * static_cast<double>(i) + 3;
      body += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\"><title>{}</title>{}</text>\n", left - 6,
                          y0 + group / 2 + 1, xml_escape(c.categories[i]), xml_escape(labels[i]));
      for (size_t k = 0; k < c.series.size(); ++k) {
        const double v = i < c.series[k].y.size() ? c.series[k].y[i] : kMissing;
        if (!std::isfinite(v)) continue;
        const std::string tip = k < c.series.size() && i < c.series[k].tips.size() ? c.series[k].tips[i] : "";
        body += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{}{}: "
                            "{}</title></rect>\n",
                            X(0), y0 + bar * static_cast<double>(k), std::max(0.5, X(std::min(v, r.hi)) - X(0)), bar - 1,
                            colour(k), xml_escape(c.categories[i]),
                            c.series[k].name.empty() ? "" : " " + xml_escape(c.series[k].name),
                            xml_escape(tip.empty() ? num(v) : tip));
      }
    }
    body += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", left + plot_w / 2,
                        axis_y + 2 * kFont + 10, xml_escape(c.value_label));
    h = axis_y + 2 * kFont + 10 + kPad;
  } else {
    const double left = kPad + kFont + 8 + tick_w + 6, top0 = kPad + kTitleFont + 10;
    const double rot = label_w * 0.7071 + kFont;  // labels at 45 degrees
    w = std::max({left + extent + rot + kPad, title_w, left + 200});
    const double lh = legend(body, c.series, left, top0, w - left - kPad);
    const double top = top0 + lh, plot_h = 240, axis_y = top + plot_h;
    auto Y = [&](double v) { return axis_y - plot_h * (v - r.lo) / (r.hi - r.lo); };
    for (double v : t)
      body += fmt::format("<line x1=\"{0:.1f}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#e3e3e3\"/>"
                          "<text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
                          left, left + extent, Y(v), left - 4, Y(v) + 4, num(v));
    for (size_t i = 0; i < nc; ++i) {
      const double x0 = left + group * static_cast<double>(i) + 3;
      for (size_t k = 0; k < c.series.size(); ++k) {
        const double v = i < c.series[k].y.size() ? c.series[k].y[i] : kMissing;
        if (!std::isfinite(v)) continue;
        const double vv = std::min(v, r.hi);
        const std::string tip = i < c.series[k].tips.size() ? c.series[k].tips[i] : "";
        body += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" fill=\"{}\"><title>{}{}: "
                            "{}</title></rect>\n",
                            x0 + bar * static_cast<double>(k), Y(vv), bar - 1, std::max(0.5, Y(0) - Y(vv)), colour(k),
                            xml_escape(c.categories[i]), c.series[k].name.empty() ? "" : " " + xml_escape(c.series[k].name),
                            xml_escape(tip.empty() ? num(v) : tip));
      }
      const double xl = x0 + group / 2 - 3;
      body += fmt::format("<text transform=\"translate({:.1f},{:.1f}) rotate(45)\"><title>{}</title>{}</text>\n", xl,
                          axis_y + 10, xml_escape(c.categories[i]), xml_escape(labels[i]));
    }
    body += fmt::format("<text transform=\"translate({:.1f},{:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
                        kPad + kFont, top + plot_h / 2, xml_escape(c.value_label));
    h = axis_y + rot + 10 + kPad;
  }
  return header(w, h, c.title) + body + "</svg>\n";
}

std::vector<size_t> pareto_front(const std::vector<double>& x, const std::vector<double>& y, bool xl, bool yh) {
  std::vector<size_t> out;
  auto better_eq = [&](size_t a, size_t b) {  // a at least as good as b in both
    return (xl ? x[a] <= x[b] : x[a] >= x[b]) && (yh ? y[a] >= y[b] : y[a] <= y[b]);
  };
  for (size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(y[i])) continue;
    bool dominated = false;
    for (size_t j = 0; j < x.size() && !dominated; ++j)
      dominated = j != i && std::isfinite(x[j]) && std::isfinite(y[j]) && better_eq(j, i) && (x[j] != x[i] || y[j] != y[i]);
    if (!dominated) out.push_back(i);
  }
  std::sort(out.begin(), out.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  return out;
}

std::string xy(const XYChart& c) {
  Range rx = data_range(c.series, true, false), ry = data_range(c.series, false, false);
  for (Range* r : {&rx, &ry}) {  // a margin, so no point sits on the frame (not below 0 for positive data)
    const double pad = 0.05 * (r->hi - r->lo);
    r->lo = r->lo >= 0 ? std::max(0.0, r->lo - pad) : r->lo - pad;
    r->hi += pad;
  }
  const std::vector<double> tx = ticks(rx), ty = ticks(ry);
  double tick_w = 0;
  for (double v : ty) tick_w = std::max(tick_w, text_width(num(v), kFont));
  const double left = kPad + kFont + 8 + tick_w + 6, plot_w = 440, plot_h = 260, top0 = kPad + kTitleFont + 10;
  const double w = std::max(left + plot_w + 40 + kPad, text_width(c.title, kTitleFont, true) + 2 * kPad);
  std::string body;
  const double lh = legend(body, c.series, left, top0, w - left - kPad);
  const double top = top0 + lh, axis_y = top + plot_h;
  auto X = [&](double v) { return left + plot_w * (v - rx.lo) / (rx.hi - rx.lo); };
  auto Y = [&](double v) { return axis_y - plot_h * (v - ry.lo) / (ry.hi - ry.lo); };
  for (double v : ty)
    body += fmt::format("<line x1=\"{0:.1f}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#e3e3e3\"/>"
                        "<text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
                        left, left + plot_w, Y(v), left - 4, Y(v) + 4, num(v));
  for (double v : tx)
    body += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\" stroke=\"#efefef\"/>"
                        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
                        X(v), top, axis_y, axis_y + kFont + 4, num(v));
  if (c.pareto) {
    std::vector<double> ax, ay;
    for (const Series& s : c.series)
      for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
        ax.push_back(s.x[i]);
        ay.push_back(s.y[i]);
      }
    std::string pts;
    for (size_t i : pareto_front(ax, ay, c.x_lower_better, c.y_higher_better))
      pts += fmt::format("{:.1f},{:.1f} ", X(ax[i]), Y(ay[i]));
    if (!pts.empty())
      body += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"#999\" stroke-dasharray=\"5,4\" "
                          "stroke-width=\"1.5\"><title>Pareto front</title></polyline>\n",
                          pts);
  }
  for (size_t k = 0; k < c.series.size(); ++k) {
    const Series& s = c.series[k];
    std::vector<size_t> idx;
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
      if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) idx.push_back(i);
    if (c.lines) {
      std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return s.x[a] < s.x[b]; });
      std::string pts;
      for (size_t i : idx) pts += fmt::format("{:.1f},{:.1f} ", X(s.x[i]), Y(s.y[i]));
      if (idx.size() > 1)
        body += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", pts, colour(k));
    }
    for (size_t i : idx) {
      const std::string tip = i < s.tips.size() ? s.tips[i] : s.name;
      const double r = i < s.radius.size() && std::isfinite(s.radius[i]) ? s.radius[i] : 4.0;
      body += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{:.1f}\" fill=\"{}\" fill-opacity=\"{}\"><title>{}: "
                          "({}, {})</title></circle>\n",
                          X(s.x[i]), Y(s.y[i]), r, colour(k), r > 4.0 ? "0.7" : "1", xml_escape(tip), num(s.x[i]),
                          num(s.y[i]));
    }
  }
  body += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", left + plot_w / 2,
                      axis_y + 2 * kFont + 10, xml_escape(c.x_label));
  body += fmt::format("<text transform=\"translate({:.1f},{:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
                      kPad + kFont, top + plot_h / 2, xml_escape(c.y_label));
  return header(w, axis_y + 2 * kFont + 10 + kPad, c.title) + body + "</svg>\n";
}

}  // namespace joule::plot
