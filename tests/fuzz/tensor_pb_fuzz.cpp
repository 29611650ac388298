// A serialized ONNX TensorProto (.pb, as the conformance suite's inputs and outputs).
#include "fuzz.h"
#include "joule/onnx/model_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  joule::fuzz::expect_clean([&] {
    joule::Tensor t = joule::onnx::parse_tensor_pb(std::string(reinterpret_cast<const char*>(data), size), "fuzz.pb");
    if (t.dtype() == joule::DType::String) return;
    volatile uint8_t sum = 0;
    const auto* b = static_cast<const uint8_t*>(t.raw());
    for (size_t i = 0; i < t.nbytes(); ++i) sum = static_cast<uint8_t>(sum + b[i]);
  });
  return 0;
}
