#pragma once
// JPEG decoding and the torchvision-style eval transform (Resize(short side) -> CenterCrop ->
// ToTensor -> Normalize) shared by the class-folder and LMDB readers.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "joule/data/dataset.h"

namespace joule::data {

struct Image {
  int width = 0, height = 0, channels = 0;  // channels 1 (gray) or 3 (RGB)
  std::vector<uint8_t> pixels;             // HWC, row-major
};

// Decodes a JPEG to `channels` (1 or 3). Returns "" on success, else why ("not a JPEG (...)",
// "truncated JPEG (...)"). Never throws for bad data.
std::string decode_jpeg(const uint8_t* data, size_t size, int channels, Image* out);
// Decodes at the smallest DCT scale just to check the whole entropy-coded stream; "" when readable.
std::string check_jpeg(const uint8_t* data, size_t size);

// Bilinear resize, antialiased on shrink (see image.cpp), of a W x H image to out_w x out_h, keeping
// only the window [x0, x0+crop_w) x [y0, y0+crop_h) of the resized image.
Image resize_crop(const Image& in, int out_w, int out_h, int x0, int y0, int crop_w, int crop_h);

// The shorter-side resize target: p.resize, or round(crop * 256 / 224) (ImageNet's 256 -> 224).
int resize_target(const Preprocess& p);
// Throws naming `where` unless p.sample_shape is [C,H,W] with C 1 or 3 and the resize covers the crop.
void check_image_preprocess(const Preprocess& p, const std::string& where);
// Resize shorter side, centre crop, HWC uint8 -> CHW float32, x*scale, (x-mean)/std.
Tensor image_to_tensor(const Image& img, const Preprocess& p);

// decode + image_to_tensor into a Sample; errors become Sample.error prefixed with `what` (a path).
Sample jpeg_sample(const uint8_t* data, size_t size, const Preprocess& p, const std::string& what);

}  // namespace joule::data
