#pragma once
// Every SVG chart joule writes (reports, sensitivity), drawn by one small module. Text is laid
// out from an estimate of its width (no clipping: margins grow to fit the longest tick label,
// axis label and the title; category labels longer than `max_label` characters are shortened in
// the middle with the full text kept as a tooltip). Charts are self-contained SVG elements with
// no scripts and no external fonts, embeddable in HTML or saved as .svg files.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace joule::plot {

constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();

struct Series {
  std::string name;
  std::vector<double> x, y;             // bars: y per category (x unused); NaN: no value
  std::vector<std::string> tips;        // optional tooltip per point
  std::vector<double> radius;           // optional scatter: circle radius per point, px (default 4)
};

// Grouped bars: one group per category, one bar per series. Vertical (categories along x,
// labels rotated) or horizontal (categories down the y axis: long names read best).
struct BarChart {
  std::string title, value_label;
  std::vector<std::string> categories;
  std::vector<Series> series;
  bool horizontal = false;
  double value_max = kMissing;  // NaN: from the data
  size_t max_label = 48;
};
std::string bars(const BarChart& c);

// Lines over a numeric x (sweep curves) or a scatter; with `pareto`, the front of the points that
// are best in both directions (x smaller, y larger unless the flags say otherwise) is drawn.
struct XYChart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
  bool lines = true;
  bool pareto = false, x_lower_better = true, y_higher_better = true;
};
std::string xy(const XYChart& c);

// Indices of the Pareto-optimal points of (x, y) (NaNs never are).
std::vector<size_t> pareto_front(const std::vector<double>& x, const std::vector<double>& y, bool x_lower_better,
                                 bool y_higher_better);

std::string xml_escape(const std::string& s);
double text_width(const std::string& s, double font_px, bool bold = false);  // an upper estimate for sans-serif
// `s` itself when at most `n` characters, else its start and end around "…".
std::string shorten_middle(const std::string& s, size_t n);
// Colours for series, cycled.
const char* colour(size_t i);

}  // namespace joule::plot
