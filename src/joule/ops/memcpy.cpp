// MemcpyToDevice / MemcpyToHost (domain "joule"): a value copied from host memory to a GPU's,
// or back. Inserted by runtime::place_on_device where a value crosses between a CPU node and a
// GPU node; run by the CUDA backend on the GPU's stream (its kernels in cuda/). The type is the
// input's; without a GPU session there is nothing to copy, so the reference kernel refuses.
#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) { infer_same_as_input(c); }
void run(KernelContext& c) {
  fail(c.node.where() + ": a copy between host and GPU memory runs only in a session placed on a GPU (--device cuda)");
}

}  // namespace

extern const OpDef kOpMemcpyToDevice, kOpMemcpyToHost;
const OpDef kOpMemcpyToDevice{"MemcpyToDevice", "joule", 1, 1, infer, run, data_movement_cost};
const OpDef kOpMemcpyToHost{"MemcpyToHost", "joule", 1, 1, infer, run, data_movement_cost};

}  // namespace joule::ops
