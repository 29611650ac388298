#include "joule/search/optimizer.h"

#include <pagmo/algorithms/moead.hpp>
#include <pagmo/algorithms/nsga2.hpp>
#include <pagmo/population.hpp>
#include <pagmo/problem.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <set>

#include "joule/core/error.h"

namespace joule::search {

namespace {

struct Context {
  std::vector<size_t> choices;
  size_t objectives = 1;
  const Fitness* f = nullptr;
  bool continuous = false;
};

// pagmo's user-defined problem: the genome as doubles (integers, or reals floored).
struct Problem {
  std::shared_ptr<Context> ctx;
  pagmo::vector_double fitness(const pagmo::vector_double& x) const {
    std::vector<int> g(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const double hi = static_cast<double>(ctx->choices[i] - 1);
      g[i] = static_cast<int>(std::clamp(std::floor(x[i] + (ctx->continuous ? 0.0 : 0.5)), 0.0, hi));
    }
    return (*ctx->f)(g);
  }
  std::pair<pagmo::vector_double, pagmo::vector_double> get_bounds() const {
    pagmo::vector_double lo(ctx->choices.size(), 0.0), hi(ctx->choices.size());
    for (size_t i = 0; i < hi.size(); ++i)
      hi[i] = ctx->continuous ? static_cast<double>(ctx->choices[i]) - 1e-9 : static_cast<double>(ctx->choices[i] - 1);
    return {lo, hi};
  }
  pagmo::vector_double::size_type get_nobj() const { return ctx->objectives; }
  pagmo::vector_double::size_type get_nix() const { return ctx->continuous ? 0 : ctx->choices.size(); }
  std::string get_name() const { return "joule search"; }
};

pagmo::vector_double as_doubles(const std::vector<int>& g, bool continuous) {
  pagmo::vector_double x(g.size());
  for (size_t i = 0; i < g.size(); ++i) x[i] = g[i] + (continuous ? 0.5 : 0.0);
  return x;
}

std::vector<int> random_genome(const std::vector<size_t>& choices, std::mt19937& rng) {
  std::vector<int> g(choices.size());
  for (size_t i = 0; i < g.size(); ++i) g[i] = std::uniform_int_distribution<int>(0, static_cast<int>(choices[i]) - 1)(rng);
  return g;
}

}  // namespace

void optimize(const std::vector<size_t>& choices, size_t objectives, const Fitness& f, const OptimizerOptions& o) {
  if (o.algorithm != "random" && o.algorithm != "nsga2" && o.algorithm != "moead")
    fail("search: algorithm '" + o.algorithm + "': expected random, nsga2 or moead");
  if (choices.empty()) fail("search: no variables");
  std::mt19937 rng(o.seed);
  auto evaluated = [&] { return o.evaluated ? o.evaluated() : size_t{0}; };
  try {
    if (o.algorithm == "random") {
      for (const auto& s : o.seeds) f(s);
      size_t idle = 0;
      while (idle < 20 * std::max<size_t>(o.trials, 1)) {
        const size_t before = evaluated();
        f(random_genome(choices, rng));
        idle = evaluated() == before ? idle + 1 : 0;
      }
      return;
    }
    auto ctx = std::make_shared<Context>(Context{choices, objectives, &f, o.algorithm == "moead"});
    pagmo::problem prob{Problem{ctx}};
    size_t pop_size = o.population;
    if (pop_size == 0) pop_size = std::clamp<size_t>((o.trials / 6 + 3) / 4 * 4, 8, 32);
    if (o.algorithm == "nsga2") pop_size = std::max<size_t>(8, (pop_size + 3) / 4 * 4);
    pop_size = std::max<size_t>(pop_size, objectives + 2);
    pagmo::population pop{prob, 0u, o.seed};
    for (size_t i = 0; i < o.seeds.size() && pop.size() < pop_size; ++i) pop.push_back(as_doubles(o.seeds[i], ctx->continuous));
    while (pop.size() < pop_size) pop.push_back(as_doubles(random_genome(choices, rng), ctx->continuous));
    size_t idle = 0;
    for (unsigned gen = 0; idle < 5; ++gen) {
      const size_t before = evaluated();
      if (o.algorithm == "nsga2") {
        pagmo::nsga2 a(1u, 0.95, 10., 1.0 / static_cast<double>(choices.size()), 50., o.seed + gen);
        pop = a.evolve(pop);
      } else {
        pagmo::moead a(1u, "random", "tchebycheff", std::min<size_t>(20, pop_size - 1), 1.0, 0.5, 20., 0.9, 2u, true,
                       o.seed + gen);
        pop = a.evolve(pop);
      }
      idle = evaluated() == before ? idle + 1 : 0;
    }
  } catch (const Budget&) {
  }
}

std::vector<size_t> nondominated(const std::vector<std::vector<double>>& rows) {
  auto valid = [](const std::vector<double>& r) {
    return std::none_of(r.begin(), r.end(), [](double v) { return std::isnan(v); });
  };
  std::vector<size_t> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!valid(rows[i])) continue;
    bool dominated = false;
    for (size_t j = 0; j < rows.size() && !dominated; ++j) {
      if (j == i || !valid(rows[j])) continue;
      bool all_le = true, some_lt = false;
      for (size_t k = 0; k < rows[i].size(); ++k) {
        all_le = all_le && rows[j][k] <= rows[i][k];
        some_lt = some_lt || rows[j][k] < rows[i][k];
      }
      dominated = all_le && some_lt;
    }
    if (!dominated) out.push_back(i);
  }
  return out;
}

}  // namespace joule::search
