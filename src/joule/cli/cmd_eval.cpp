// joule eval: top-1/top-5 of a classifier on labelled data; joule data: dataset tools.
#include <fmt/format.h>

#include "joule/api/evaluate.h"
#include "joule/cli/commands.h"
#include "joule/cli/util.h"

namespace joule::cli {

namespace {
struct EvalArgs {
  std::string model, data, format = "table", store;
  ShapeFlags shapes;
  api::EvalOptions opt;
};
}  // namespace

Action add_eval(CLI::App& app) {
  auto a = std::make_shared<EvalArgs>();
  add_model_arg(app, a->model);
  app.add_option("--data", a->data, "labelled data SPEC: .npy (+ _labels.npy), IDX, JPEG class folder, LMDB")
      ->required();
  app.add_option("--limit", a->opt.limit, "evaluate only the first N samples");
  add_input_shape_option(app, a->shapes);
  app.add_option("--format", a->format, "table or json")->check(CLI::IsMember({"table", "json"}));
  app.add_flag("--check-numerics", a->opt.check_numerics,
               "count NaN and Inf in every node's outputs over the samples and name the first node that has any");
  add_data_options(app, a->opt.preprocess);
  add_prepare_options(app, a->opt.prepare, "graph passes: none, default or a list");
  add_store_option(app, a->store);
  return [a] {
    a->opt.data = api::DataSource::from_spec(a->data);
    a->opt.input_shapes = a->shapes.parse();
    const api::Model m = api::Model::load(a->model);
    const api::EvalReport r = api::evaluate(m, a->opt, terminal_hooks());
    end_status();
    record_run(a->store, "eval", m.name(), r.to_json());
    if (a->format == "json") {
      fmt::print("{}\n", r.to_json().dump(2));
      return 0;
    }
    const data::EvalResult& e = r.result;
    fmt::print("{} on {}\npreprocessing: {}\n", r.model, r.data, r.preprocessing);
    fmt::print("top-1 {:.2f}% ({}/{})", 100 * e.top1_rate(), e.top1, e.samples);
    if (e.classes >= 5) fmt::print("  top-5 {:.2f}%", 100 * e.top5_rate());
    fmt::print("  samples {}{}  {:.1f} s\n", e.samples, e.skipped ? fmt::format(" ({} skipped)", e.skipped) : "",
               e.seconds);
    if (r.precision.precision != "fp32") fmt::print("{}\n", r.precision.summary());
    if (!r.numerics_summary.empty()) fmt::print("{}\n", r.numerics_summary);
    return 0;
  };
}

Action add_data(CLI::App& app) {
  app.require_subcommand(1);
  auto folder = std::make_shared<std::string>(), out = std::make_shared<std::string>();
  CLI::App* conv = app.add_subcommand("convert", "JPEG class folders -> LMDB (JPEG bytes and labels, decoded at read)");
  conv->add_option("folder", *folder, "directory of class sub-folders of JPEGs")->required();
  conv->add_option("out", *out, "LMDB directory to create (must not exist)")->required();
  return [folder, out] {
    std::vector<std::string> skipped;
    const size_t n = data::convert_to_lmdb(*folder, *out, &skipped);
    for (auto& s : skipped) fmt::print(stderr, "joule: skipped {}\n", s);
    fmt::print("wrote {}: {} records{}\n", *out, n, skipped.empty() ? "" : fmt::format(", {} skipped", skipped.size()));
    return 0;
  };
}

}  // namespace joule::cli
