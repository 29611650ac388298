#include "joule/api/profile.h"

#include "joule/cuda/backend.h"

#include <fmt/format.h>

#include "joule/api/opdb.h"
#include "joule/passes/pass.h"

namespace joule::api {

nlohmann::json ProfileReport::to_json() const {
  nlohmann::json pts = nlohmann::json::array();
  for (auto& r : points) pts.push_back(profile::to_json(r));
  nlohmann::json skip = nlohmann::json::array();
  for (auto& k : skipped) skip.push_back(k.fields());
  return {{"schema_version", 1},
          {"model", model},
          {"points", pts},
          {"skipped_finished_points", skip},
          {"precision", precision.to_json()},
          {"opdb_rows", opdb_rows}};
}

ProfileReport profile(const Model& m, const ProfileOptions& o, const Hooks& hooks) {
  check_int8_mode(o.int8);
  for (int t : o.threads)
    if (t < 0) fail("threads: " + std::to_string(t) + " is negative (0: every core)");
  profile::ProfileOptions opt;
  opt.model_name = m.name();
  if (o.warmup) opt.warmup = *o.warmup;
  opt.warmup_time_s = o.warmup_time_s;
  if (o.runs) opt.runs = *o.runs;
  if (opt.runs < 1) fail("runs: " + std::to_string(opt.runs) + " (at least 1)");
  opt.min_time_s = o.min_time_s;
  opt.coverage = o.coverage;
  opt.energy = o.energy;
  opt.meter.estimate_profile = o.energy_profile;
  opt.meter.min_window_s = o.energy_window_s;
  if (!o.powercap_root.empty()) opt.meter.powercap_root = o.powercap_root;
  opt.layer_energy = o.layer_energy;
  opt.check_numerics = o.check_numerics;
  opt.passes = passes::parse_pipeline(o.passes);
  opt.algo = o.algo.spec();
  opt.device = cuda::parse_device(o.device);
  opt.gpu_math = o.gpu_math;
  opt.gpu_fp32 = o.gpu_fp32;
  apply_int8_mode(o.int8, opt.passes, opt.algo);
  ProfileReport r;
  if (o.precision == "bf16" && o.bf16_min_sqnr_db > 0) {  // the ladder, once, at the given shapes
    PrepareOptions how;
    how.threads = opt.threads;
    how.passes = o.passes;
    how.int8 = o.int8;
    how.algo = o.algo;
    how.precision = o.precision;
    how.bf16_min_sqnr_db = o.bf16_min_sqnr_db;
    how.check_inputs = o.inputs;
    r.precision = prepare(m.resolved_for(o.inputs), how).precision;
    keep_fp32(r.precision, opt.algo);
  } else {
    check_precision(o.precision);
    r.precision.precision = o.precision;
  }
  precision_algorithms(o.precision, opt.algo);
  opt.checkpoint = [&hooks] { hooks.check(); };
  profile::SweepSpec spec;
  spec.batches = o.batches;
  spec.input_sizes = o.input_sizes;
  for (const std::string& v : o.algo_sweep) {
    kernels::AlgoSpec check;
    check.add(v);  // one-line error for a malformed value before anything runs
    spec.algos.push_back(v);
  }
  if (o.threads.size() == 1) opt.threads = o.threads[0];
  else spec.threads = o.threads;
  profile::apply_stage(o.stage, spec, opt, o.runs.has_value(), o.warmup.has_value() || o.warmup_time_s > 0);
  if (!o.inputs.empty())
    for (const std::string& name : m.input_names())
      if (!o.inputs.count(name)) fail("missing input '" + name + "'");
  r.model = m.name();
  r.sweep = profile::sweep_points(spec, opt.threads).size() > 1 || !o.stage.empty();
  if (r.sweep && !o.opdb.empty())
    fail("--opdb records one configuration: profile without a sweep (one batch, input size, thread count and --algo)");
  auto progress = [&](const profile::SweepProgress& p) {
    hooks.report("profiling", p.done, p.total,
                 fmt::format("[{}/{}] {} skipped (already measured)  elapsed {:.0f}s  eta {}", p.done, p.total,
                             p.skipped, p.elapsed_s, p.eta_s < 0 ? std::string("?") : fmt::format("{:.0f}s", p.eta_s)));
  };
  profile::SweepOutcome out = profile::run_sweep(m.resolved_for(o.inputs).graph(), spec, opt, o.out_dir, r.sweep,
                                                 o.inputs.empty() ? nullptr : &o.inputs, progress);
  r.points = std::move(out.measured);
  r.skipped = std::move(out.skipped);
  if (!o.opdb.empty()) {
    PrepareOptions how;
    how.passes = o.passes;
    how.int8 = o.int8;
    how.algo = o.algo;
    how.precision = o.precision;
    how.bf16_min_sqnr_db = o.bf16_min_sqnr_db;  // the same ladder: the rows name the algorithm each layer ran
    how.check_inputs = o.inputs;
    for (const profile::ProfileResult& p : r.points) r.opdb_rows += opdb_record_profile(m, p, o.opdb, how, o.inputs);
  }
  return r;
}

}  // namespace joule::api
