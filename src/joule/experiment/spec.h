#pragma once
// An experiment file: models x a grid of parameters x steps. Each combination of a model and one
// value of every grid axis is a point; a point runs the steps in order on its model (a
// `quantize` step hands its quantized model to the steps after it). See docs/experiments.md.
//
//   name: quickstart
//   models:
//     - default                                   # the bundled CNN
//     - {name: mnv3, path: ${JOULE_MODEL_DIR}/mobilenet_v3_small/model.onnx, calib: ..., data: ...}
//   grid:
//     config: {fp32: none, w8a8: ../quant/w8a8.yaml}   # a map: label -> value
//     threads: [1, 2]                                 # a list: each value is its own label
//   steps:
//     - quantize: {config: "${config}", calib_samples: 16}
//     - bench: {threads: "${threads}", runs: 20}
//   slurm: {partition: cpu, time: "00:30:00", cpus_per_task: 2, retries: 1}   # --executor slurm
//
// "${axis}" in a step's parameters is the point's value on that axis (the whole value when the
// string is only the placeholder, so numbers stay numbers and maps stay maps); "${model}" is the
// model's name; any other "${NAME}" is the environment variable (an error when unset; "${NAME:-x}"
// gives x instead). A leading "~/" in a model's path, calib and data is $HOME. Relative
// file names are resolved against the experiment file's folder when such a file exists there.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace joule::experiment {

struct ModelEntry {
  std::string name, path;  // path "default": the bundled CNN
  std::string calib, data;  // default calibration / labelled data SPEC for the steps ("" none)
};

struct Axis {
  std::string name;
  std::vector<std::pair<std::string, nlohmann::json>> values;  // label -> value, in file order
};

struct Step {
  std::string kind;    // prune | quantize | bench | profile | eval | compare | sensitivity | predict
  std::string name;    // the key of its result and metrics: kind, or kind_2 for a second one
  nlohmann::json params = nlohmann::json::object();
};

struct ExperimentSpec {
  std::string name;
  std::string file, text;   // the experiment file and its text (snapshotted with every run)
  std::string base_dir;     // the file's folder: relative names are resolved against it
  std::string dir;          // where run folders go (default runs/NAME)
  std::vector<ModelEntry> models;
  std::vector<Axis> grid;
  std::vector<Step> steps;  // with placeholders
  // The SLURM executor's resources: partition, time, cpus_per_task, mem, retries, options (a list
  // of further sbatch arguments). Empty: the cluster's defaults, one CPU per task, one retry.
  nlohmann::json slurm = nlohmann::json::object();
};

struct Point {
  size_t index = 0;
  std::string key;   // "model=NAME axis=label ..." (unique in the experiment)
  std::string slug;  // folder name under the experiment's dir
  ModelEntry model;
  std::map<std::string, std::string> labels;  // axis -> label ("model" included)
  std::vector<Step> steps;                    // placeholders replaced
  nlohmann::json params() const;              // labels as JSON
  // What the point runs (model file and data, steps with their parameters), hashed: a done point
  // whose hash changed since (the experiment file was edited) is run again.
  std::string config_hash() const;
};

// Reads and checks an experiment file (BadInput naming the file and the key at fault).
ExperimentSpec read_experiment(const std::string& path);
// `v` (a file name or data SPEC "file:split") against `base` when it is relative and names
// something there; else `v`.
std::string resolve_path(const std::string& v, const std::string& base);
// Every point, models outermost then the axes in file order.
std::vector<Point> expand(const ExperimentSpec& spec);

// The steps an experiment may run.
const std::vector<std::string>& step_kinds();

}  // namespace joule::experiment
