#include "joule/train/distributed.h"

#include <cstdlib>
#include <string>

#include "joule/core/error.h"

#ifdef JOULE_MPI
#include <mpi.h>
#endif

namespace joule::train {

namespace {

// The number of ranks the launcher says this process is one of (1: not launched so).
// (mpirun: OMPI_COMM_WORLD_SIZE; MPICH-style launchers: PMI_SIZE; srun with PMIx: SLURM_NTASKS
// next to PMIX_RANK.)
int launched_ranks() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* s = std::getenv(v)) return std::max(1, std::atoi(s));
  if (std::getenv("PMIX_RANK"))
    if (const char* s = std::getenv("SLURM_NTASKS")) return std::max(1, std::atoi(s));
  return 1;
}

World make_world() {
  World w;
  if (launched_ranks() <= 1) return w;
#ifdef JOULE_MPI
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    std::atexit([] {
      int done = 0;
      MPI_Finalized(&done);
      if (!done) MPI_Finalize();
    });
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  return w;
#else
  fail("this joule was built without MPI (Debian's libopenmpi-dev): " + std::to_string(launched_ranks()) +
       " ranks would each train alone; install it and rebuild, or run one process");
#endif
}

}  // namespace

const World& world() {
  static const World w = make_world();
  return w;
}

bool mpi_available() {
#ifdef JOULE_MPI
  return true;
#else
  return false;
#endif
}

void allreduce_mean(std::vector<Tensor>& tensors) {
  const World& w = world();
  if (w.size <= 1) return;
#ifdef JOULE_MPI
  // One buffer for every tensor: one collective per step.
  size_t n = 0;
  for (const Tensor& t : tensors) n += static_cast<size_t>(t.numel());
  std::vector<float> buf(n);
  size_t at = 0;
  for (const Tensor& t : tensors) {
    std::copy(t.data<float>(), t.data<float>() + t.numel(), buf.begin() + static_cast<std::ptrdiff_t>(at));
    at += static_cast<size_t>(t.numel());
  }
  MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  const float inv = 1.f / static_cast<float>(w.size);
  at = 0;
  for (Tensor& t : tensors) {
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = buf[at + static_cast<size_t>(i)] * inv;
    at += static_cast<size_t>(t.numel());
  }
#endif
}

double allreduce_mean(double v) {
  const World& w = world();
  if (w.size <= 1) return v;
#ifdef JOULE_MPI
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
#endif
  return v / w.size;
}

}  // namespace joule::train
