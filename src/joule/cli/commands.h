#pragma once
// Each `joule <verb>` registers its flags on a CLI11 subcommand and returns the action to run.
#include <CLI/CLI.hpp>
#include <functional>

namespace joule::cli {

using Action = std::function<int()>;

Action add_info(CLI::App& app);
Action add_run(CLI::App& app);
Action add_graph(CLI::App& app);
Action add_bench(CLI::App& app);
Action add_profile(CLI::App& app);
Action add_energy(CLI::App& app);
Action add_eval(CLI::App& app);
Action add_data(CLI::App& app);
Action add_quantize(CLI::App& app);
Action add_sensitivity(CLI::App& app);
Action add_automp(CLI::App& app);
Action add_compare(CLI::App& app);
Action add_train(CLI::App& app);
Action add_finetune(CLI::App& app);
Action add_qat(CLI::App& app);
Action add_opdb(CLI::App& app);
Action add_predict(CLI::App& app);
Action add_experiment(CLI::App& app);
Action add_report(CLI::App& app);
Action add_serve(CLI::App& app);
Action add_prune(CLI::App& app);
Action add_search(CLI::App& app);
Action add_devices(CLI::App& app);

}  // namespace joule::cli
