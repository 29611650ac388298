// The bundled example model (models/fashion_cnn.onnx, trained by tools/train_fashion_mnist.py)
// against the PyTorch logits saved with it, and on the real Fashion-MNIST test images.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "joule/core/npy.h"
#include "joule/onnx/model_io.h"
#include "joule/runtime/session.h"

using namespace joule;

TEST(FashionCnn, MatchesPyTorchLogitsOnSamples) {
  const std::string dir = std::string(JOULE_SOURCE_DIR) + "/models/";
  runtime::Session s(onnx::load_model(dir + "fashion_cnn.onnx"), {1, {}, {}});
  Tensor x = load_npy(dir + "fashion_cnn_sample.npy");
  Tensor logits = load_npy(dir + "fashion_cnn_sample_logits.npy");
  Tensor labels = load_npy(dir + "fashion_cnn_sample_labels.npy");
  const int64_t n = x.dim(0), per = x.numel() / n, classes = logits.dim(1);
  int correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    Tensor xi(DType::Float32, {1, x.dim(1), x.dim(2), x.dim(3)});
    std::memcpy(xi.raw(), x.data<float>() + i * per, per * sizeof(float));
    Tensor y = s.run({{s.input_names()[0], xi}}).at(s.output_names()[0]);
    ASSERT_EQ(y.numel(), classes);
    double scale = 0, err = 0;
    int64_t best = 0;
    for (int64_t c = 0; c < classes; ++c) {
      double r = logits.data<float>()[i * classes + c];
      scale = std::max(scale, std::fabs(r));
      err = std::max(err, std::fabs(r - y.data<float>()[c]));
      if (y.data<float>()[c] > y.data<float>()[best]) best = c;
    }
    EXPECT_LE(err / scale, 1e-4) << "sample " << i;
    correct += best == labels.value_as_int(i);
  }
  EXPECT_GE(correct, 13) << "the trained model should classify most of the 16 samples";
}
