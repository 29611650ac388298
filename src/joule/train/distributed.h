#pragma once
// Data-parallel training across processes and machines (QuantLab's Horovod setup, on MPI): every
// rank trains a replica on its share of each global batch and the gradients are averaged by an
// allreduce, so N ranks with batch B step as one process with batch N*B. The world is MPI's when
// the process was started by mpirun / srun and joule was built with MPI (Debian's OpenMPI);
// otherwise a world of one.
#include <vector>

#include "joule/core/tensor.h"

namespace joule::train {

struct World {
  int rank = 0, size = 1;
};

// The process's world (MPI initialised on first use when launched as one of several ranks).
// BadInput when launched as several ranks by a joule built without MPI.
const World& world();
// Whether this build can run data-parallel (built with MPI).
bool mpi_available();

// In place: every rank ends with the mean over ranks (float32 tensors / one double).
void allreduce_mean(std::vector<Tensor>& tensors);
double allreduce_mean(double v);

}  // namespace joule::train
