#include "joule/profile/sweep.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>

#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/core/thread_pool.h"

namespace joule::profile {

namespace fs = std::filesystem;

void apply_stage(const std::string& stage, SweepSpec& spec, ProfileOptions& opt, bool runs_given,
                 bool warmup_given) {
  if (stage.empty()) return;
  const int cores = ThreadPool::default_threads();
  int runs = 0, warmup = 0;
  if (stage == "sanity") {
    runs = 3;
    warmup = 1;
  } else if (stage == "quick") {
    if (spec.batches.empty()) spec.batches = {1, 2, 4, 8, 16};
    if (spec.threads.empty()) spec.threads = cores > 1 ? std::vector<int>{1, cores} : std::vector<int>{1};
    runs = 10;
    warmup = 3;
  } else if (stage == "full") {
    // About 100 points on a small machine: 40 batch sizes (every size to 16, then coarser
    // steps to 128) times every thread count.
    if (spec.batches.empty()) {
      for (int64_t b = 1; b <= 128; b += b < 16 ? 1 : b < 32 ? 2 : b < 64 ? 4 : 8) spec.batches.push_back(b);
    }
    if (spec.threads.empty())
      for (int t = 1; t <= cores; ++t) spec.threads.push_back(t);
    runs = 30;
    warmup = 5;
  } else {
    fail("unknown stage '" + stage + "' (sanity, quick, full)");
  }
  if (!runs_given) opt.runs = runs;
  if (!warmup_given) opt.warmup = warmup;
}

std::vector<SweepPoint> sweep_points(const SweepSpec& spec, int default_threads) {
  std::vector<int64_t> b = spec.batches.empty() ? std::vector<int64_t>{-1} : spec.batches;
  std::vector<int64_t> s = spec.input_sizes.empty() ? std::vector<int64_t>{-1} : spec.input_sizes;
  std::vector<int> t = spec.threads.empty() ? std::vector<int>{default_threads} : spec.threads;
  std::vector<std::string> a = spec.algos.empty() ? std::vector<std::string>{""} : spec.algos;
  std::vector<SweepPoint> pts;
  for (const std::string& al : a)
    for (int th : t)
      for (int64_t sz : s)
        for (int64_t bt : b) {
          JOULE_CHECK(bt == -1 || bt > 0, "--batch values must be positive");
          JOULE_CHECK(sz == -1 || sz > 0, "--input-size values must be positive");
          JOULE_CHECK(th >= 0, "--threads values must be >= 0");
          pts.push_back({bt, sz, th, al});
        }
  return pts;
}

std::map<std::string, Shape> input_shapes_for(const ir::Graph& g, const SweepPoint& p) {
  std::map<std::string, Shape> m;
  if (p.batch < 0 && p.input_size < 0) return m;
  bool any_nchw = false;
  for (auto& in : g.inputs) {
    const ir::TensorType* t = g.type_of(in);
    if (!t || !t->has_shape || t->dims.empty()) continue;
    Shape s;
    for (auto& d : t->dims) s.push_back(d.is_static() ? d.value : -1);
    if (p.batch > 0) s[0] = p.batch;
    if (p.input_size > 0 && s.size() == 4) {
      s[2] = s[3] = p.input_size;
      any_nchw = true;
    }
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] < 0) fail("input '" + in + "' dimension " + std::to_string(i) + " is symbolic (" + t->str() +
                         "): --batch/--input-size cannot complete its shape");
    m[in] = s;
  }
  if (p.input_size > 0 && !any_nchw) fail("--input-size needs a 4-D (NCHW) model input; this model has none");
  return m;
}

namespace {
std::string describe(const SweepPoint& p) {
  std::string s;
  if (p.batch > 0) s += "batch " + std::to_string(p.batch);
  if (p.input_size > 0) s += std::string(s.empty() ? "" : ", ") + "input size " + std::to_string(p.input_size);
  if (!p.algo.empty()) s += std::string(s.empty() ? "" : ", ") + "--algo " + p.algo;
  return s.empty() ? "the model's own shapes" : s;
}

// Appends lines to a CSV, rewriting it atomically; checks the header of an existing file.
void append_csv(const fs::path& path, const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows, bool fresh) {
  std::string text;
  if (!fresh && fs::exists(path)) {
    text = read_file(path.string());
    auto parsed = parse_csv(text);
    if (!parsed.empty() && parsed[0] != header)
      fail(path.string() + ": existing file has different columns (written by another version?): use a new -o DIR");
    if (!text.empty() && text.back() != '\n') text.erase(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
  }
  if (text.empty()) text = csv_line(header);
  for (auto& r : rows) text += csv_line(r);
  write_file_atomic(path.string(), text);
}

// A sweep killed between its two appends (a point's layer rows, then its overall row) leaves
// layer rows of a point the overall CSV does not list, which the resumed sweep measures and
// appends again: keep only the first `points` blocks of layer rows (each starts at rank 1).
void keep_layer_blocks(const fs::path& path, size_t points) {
  const auto rows = parse_csv(read_file(path.string()));
  if (rows.empty()) return;
  const size_t rank = static_cast<size_t>(std::find(rows[0].begin(), rows[0].end(), "rank") - rows[0].begin());
  if (rank >= rows[0].size()) return;
  size_t blocks = 0, keep = rows.size();
  for (size_t i = 1; i < rows.size() && keep == rows.size(); ++i)
    if (rows[i].size() > rank && rows[i][rank] == "1" && ++blocks > points) keep = i;
  if (keep == rows.size()) return;
  std::string text;
  for (size_t i = 0; i < keep; ++i) text += csv_line(rows[i]);
  write_file_atomic(path.string(), text);
}
}  // namespace

SweepOutcome run_sweep(const ir::Graph& g, const SweepSpec& spec, const ProfileOptions& base,
                       const std::string& out_dir, bool resume, const runtime::TensorMap* inputs,
                       const std::function<void(const SweepProgress&)>& progress) {
  std::vector<SweepPoint> pts = sweep_points(spec, base.threads);
  fs::path dir(out_dir);
  const std::string stem = base.model_name;
  fs::path overall = dir / (stem + "_overall.csv"), layers = dir / (stem + "_layers.csv");
  std::set<std::vector<std::string>> finished;
  if (!out_dir.empty()) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) fail(out_dir + ": cannot create directory: " + ec.message());
    if (resume && fs::exists(overall)) {
      auto rows = parse_csv(read_file(overall.string()));
      for (size_t i = 1; i < rows.size(); ++i)
        if (rows[i].size() >= 5) finished.insert(std::vector<std::string>(rows[i].begin(), rows[i].begin() + 5));
      if (fs::exists(layers)) keep_layer_blocks(layers, rows.empty() ? 0 : rows.size() - 1);
    }
  }
  SweepOutcome out;
  SweepProgress pr;
  pr.total = pts.size();
  auto t0 = std::chrono::steady_clock::now();
  bool fresh = !resume;
  nlohmann::json points = nlohmann::json::array();
  for (const SweepPoint& p : pts) {
    ProfileOptions opt = base;
    opt.threads = p.threads;
    opt.input_shapes = input_shapes_for(g, p);
    if (!p.algo.empty()) {
      opt.algo.add(p.algo);
      opt.algo_label = p.algo;
    }
    if (!opt.input_shapes.empty() && inputs)
      fail("-i inputs cannot be combined with --batch/--input-size (their shapes are fixed)");
    PointKey key;
    try {
      key = point_key(g, opt);
    } catch (const Error& e) {
      if (opt.input_shapes.empty()) throw;
      fail("the model cannot run at " + describe(p) + ": " + e.what() +
           " (its constants likely pin the input size or batch)");
    }
    if (finished.count(key.fields())) {
      out.skipped.push_back(key);
      ++pr.skipped;
    } else {
      ProfileResult r;
      try {
        r = profile_model(g, opt, opt.input_shapes.empty() ? inputs : nullptr);
      } catch (const Error& e) {
        if (opt.input_shapes.empty() || !e.is_user_error()) throw;
        fail("the model cannot run at " + describe(p) + ": " + e.what() +
             " (its constants likely pin the input size or batch)");
      }
      if (!out_dir.empty()) {
        append_csv(layers, layers_csv_columns(), layers_csv_rows(r), fresh);
        append_csv(overall, overall_csv_columns(), {overall_csv_row(r)}, fresh);  // last: marks the point done
        fresh = false;
        points.push_back(to_json(r));
        nlohmann::json skipped = nlohmann::json::array();
        for (auto& k : out.skipped) skipped.push_back(k.fields());
        nlohmann::json doc = {{"schema_version", 1}, {"model", stem}, {"points", points},
                              {"skipped_finished_points", skipped},
                              {"trace", "trace.json: the first point measured in this invocation"}};
        write_file_atomic((dir / "profile.json").string(), doc.dump(1) + "\n");
        if (out.measured.empty()) write_file_atomic((dir / "trace.json").string(), r.trace.dump() + "\n");
      }
      out.measured.push_back(std::move(r));
    }
    ++pr.done;
    pr.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    size_t measured = pr.done - pr.skipped;
    pr.eta_s = measured ? pr.elapsed_s / static_cast<double>(measured) * static_cast<double>(pr.total - pr.done) : -1;
    if (progress) progress(pr);
  }
  return out;
}

}  // namespace joule::profile
