#pragma once
// The search algorithms over a discrete space (each variable picks one of its choices), all
// minimising a vector of objectives:
//   random - seeded uniform sampling (the baseline every other algorithm must beat);
//   nsga2  - pagmo2's NSGA-II on integer genes (Deb et al. 2002);
//   moead  - pagmo2's MOEA/D-DE on the continuous relaxation (each gene floored to its choice).
// The caller's fitness function counts what it evaluates and throws Budget when the trial
// budget is spent; the algorithms stop there. Genomes given as `seeds` start the population.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace joule::search {

// Thrown by a fitness function when no trial is left.
struct Budget {};

using Fitness = std::function<std::vector<double>(const std::vector<int>&)>;

struct OptimizerOptions {
  std::string algorithm = "nsga2";  // random | nsga2 | moead
  size_t trials = 100;              // distinct genomes to evaluate (the fitness throws Budget after)
  size_t population = 0;            // 0: from trials (nsga2: a multiple of 4, 8..32)
  uint32_t seed = 1;
  std::vector<std::vector<int>> seeds;  // genomes the first population starts with
  // Distinct genomes evaluated so far (stops a search that only revisits known genomes).
  std::function<size_t()> evaluated;
};

// Calls `f` until it throws Budget, or (nsga2, moead) five generations in a row bring no new
// genome, or (random) 20 x trials draws found no new one. BadInput for an unknown algorithm.
void optimize(const std::vector<size_t>& choices, size_t objectives, const Fitness& f, const OptimizerOptions& o);

// Indices of the non-dominated rows (every objective minimised; rows holding NaN never are).
// Equal rows are all kept.
std::vector<size_t> nondominated(const std::vector<std::vector<double>>& rows);

}  // namespace joule::search
