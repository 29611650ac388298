// An ONNX model from anywhere: load -> shape inference -> the default passes -> session (kernels
// chosen and prepared, memory planned) -> one run on zero-filled inputs.
#include "fuzz.h"
#include "joule/api/model.h"
#include "joule/api/prepare.h"
#include "joule/passes/annotate_costs.h"
#include "joule/passes/infer_shapes.h"

using namespace joule;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::expect_clean([&] {
    // External data resolves inside an empty scratch folder: a path outside it must be refused.
    api::Model m = api::Model::from_bytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz",
                                          (fuzz::scratch() / "model").string());
    api::Prepared p = api::prepare(m, api::PrepareOptions::with_threads(1));
    const ir::Graph& g = p.session->graph();
    // A few kilobytes can declare a model that computes for minutes: a legitimate model, not a bug.
    // Run only what finishes in milliseconds.
    ir::Graph costed = g;
    const passes::CostTotals cost = passes::annotate_costs(costed);
    if (cost.flops > 2e7 || cost.bytes > 6.4e7) return;
    runtime::TensorMap inputs;
    for (const std::string& name : g.inputs) {
      const ir::TensorType* t = g.type_of(name);
      if (!t || !t->is_tensor() || !t->has_shape) return;
      Shape s;
      for (const ir::Dim& d : t->dims) s.push_back(d.is_static() ? d.value : 1);
      if (shape_numel(s) > (int64_t{1} << 20)) return;
      inputs[name] = Tensor(t->dtype, s);
    }
    p.session->run(inputs);
  });
  return 0;
}
