#include "joule/data/image.h"

#include <turbojpeg.h>

#include <algorithm>
#include <cmath>

#include "joule/data/readers.h"

namespace joule::data {

namespace {

// Larger images are almost certainly corrupt headers; refusing them avoids a multi-GB allocation.
constexpr int64_t kMaxPixels = int64_t{1} << 28;

// One TurboJPEG handle per call: handles are not thread-safe, and creating one costs far less than
// decoding an image, so get() stays reentrant without any shared state.
struct TjHandle {
  tjhandle h = tjInitDecompress();
  ~TjHandle() {
    if (h) tjDestroy(h);
  }
};

// Decodes at 1/denom scale (1 or 8) to gray (channels 1) or RGB (channels 3).
std::string decode_scaled(const uint8_t* data, size_t size, int channels, int denom, Image* out) {
  if (size < 3 || data[0] != 0xFF || data[1] != 0xD8) return "not a JPEG (no start-of-image marker)";
  TjHandle tj;
  if (!tj.h) return std::string("cannot initialise TurboJPEG: ") + tjGetErrorStr2(nullptr);
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(tj.h, data, static_cast<unsigned long>(size), &w, &h, &subsamp, &colorspace) != 0)
    return std::string("not a JPEG (") + tjGetErrorStr2(tj.h) + ")";
  if (w <= 0 || h <= 0 || int64_t{w} * h > kMaxPixels)
    return "implausible JPEG size " + std::to_string(w) + "x" + std::to_string(h);
  const tjscalingfactor sf{1, denom};
  const int sw = TJSCALED(w, sf), sh = TJSCALED(h, sf);
  // TurboJPEG cannot convert CMYK/YCCK (Photoshop exports, ~20 ImageNet files) to RGB: take CMYK and
  // convert below.
  const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  const int pf = cmyk ? TJPF_CMYK : channels == 1 ? TJPF_GRAY : TJPF_RGB;
  std::vector<uint8_t> buf(static_cast<size_t>(sw) * sh * tjPixelSize[pf]);
  if (tjDecompress2(tj.h, data, static_cast<unsigned long>(size), buf.data(), sw, 0, sh, pf, 0) != 0) {
    const std::string msg = tjGetErrorStr2(tj.h);
    if (tjGetErrorCode(tj.h) == TJERR_FATAL) return "corrupt JPEG (" + msg + ")";
    // A warning still yields a full image. Truncation ("Premature end of JPEG file") leaves the missing
    // part grey, so it is an error; the others (e.g. "extraneous bytes before marker", found in a few
    // ImageNet files) decode fine and PIL, which torchvision's accuracy numbers use, accepts them too.
    if (msg.find("Premature end") != std::string::npos) return "truncated JPEG (" + msg + ")";
  }
  out->width = sw, out->height = sh, out->channels = channels;
  if (!cmyk) {
    out->pixels = std::move(buf);
    return "";
  }
  // libjpeg hands back Adobe CMYK as stored, i.e. inverted (255 = no ink), so R = C*K/255 etc.; gray
  // then uses PIL's "L" weights (ITU-R 601-2).
  out->pixels.resize(static_cast<size_t>(sw) * sh * channels);
  for (size_t i = 0, n = static_cast<size_t>(sw) * sh; i < n; ++i) {
    const uint8_t* q = &buf[i * 4];
    const int r = (q[0] * q[3] + 127) / 255, g = (q[1] * q[3] + 127) / 255, b = (q[2] * q[3] + 127) / 255;
    if (channels == 3) {
      out->pixels[i * 3] = static_cast<uint8_t>(r);
      out->pixels[i * 3 + 1] = static_cast<uint8_t>(g);
      out->pixels[i * 3 + 2] = static_cast<uint8_t>(b);
    } else {
      out->pixels[i] = static_cast<uint8_t>((r * 299 + g * 587 + b * 114 + 500) / 1000);
    }
  }
  return "";
}

// Resampling weights for output positions [o0, o0+n) of an in_size -> out_size resize, computed like
// PIL's bilinear filter (what torchvision's Resize uses on PIL images, so published accuracies apply):
// a triangle kernel of radius 1 in input pixels when enlarging (plain bilinear), stretched to radius
// `in/out` when shrinking, so every input pixel contributes (area-weighted averaging). That is the
// antialiasing: it applies to any shrink, not only beyond 2x, since PIL does the same.
struct Taps {
  std::vector<int> first, count;  // per output position: first input index, number of taps
  std::vector<float> weights;     // per output position: `stride` slots, `count` used
  int stride = 0;
};

Taps make_taps(int in_size, int out_size, int o0, int n) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double fscale = std::max(scale, 1.0);
  const double support = fscale;  // triangle radius 1, stretched
  Taps t;
  t.stride = static_cast<int>(std::ceil(support)) * 2 + 1;
  t.first.resize(n), t.count.resize(n), t.weights.assign(static_cast<size_t>(n) * t.stride, 0.0f);
  std::vector<double> w(static_cast<size_t>(t.stride) + 1);
  for (int k = 0; k < n; ++k) {
    const double center = (o0 + k + 0.5) * scale;
    const int lo = std::max(static_cast<int>(center - support + 0.5), 0);
    const int hi = std::min(static_cast<int>(center + support + 0.5), in_size);
    const int count = std::min(hi - lo, t.stride);  // never clips: hi - lo <= 2*ceil(support) + 1
    double sum = 0;
    for (int j = 0; j < count; ++j) {
      const double d = std::abs((lo + j - center + 0.5) / fscale);
      w[j] = d < 1.0 ? 1.0 - d : 0.0;
      sum += w[j];
    }
    t.first[k] = lo, t.count[k] = count;
    for (int j = 0; j < count; ++j)
      t.weights[static_cast<size_t>(k) * t.stride + j] = static_cast<float>(sum > 0 ? w[j] / sum : 0.0);
  }
  return t;
}

uint8_t to_u8(float v) { return static_cast<uint8_t>(std::clamp(v + 0.5f, 0.0f, 255.0f)); }

// Horizontal pass over input rows [r0, r1) into `mid` (rows of h.first.size() pixels). C is a template
// parameter so the channel loop unrolls.
template <int C>
void horizontal_pass(const Image& in, const Taps& h, int r0, int r1, uint8_t* mid) {
  const int n = static_cast<int>(h.first.size());
  for (int y = r0; y < r1; ++y) {
    const uint8_t* row = &in.pixels[static_cast<size_t>(y) * in.width * C];
    uint8_t* dst = mid + static_cast<size_t>(y - r0) * n * C;
    for (int x = 0; x < n; ++x) {
      const float* w = &h.weights[static_cast<size_t>(x) * h.stride];
      const uint8_t* src = row + static_cast<size_t>(h.first[x]) * C;
      float acc[C] = {};
      for (int j = 0; j < h.count[x]; ++j)
        for (int ch = 0; ch < C; ++ch) acc[ch] += w[j] * static_cast<float>(src[j * C + ch]);
      for (int ch = 0; ch < C; ++ch) dst[x * C + ch] = to_u8(acc[ch]);
    }
  }
}

}  // namespace

std::string decode_jpeg(const uint8_t* data, size_t size, int channels, Image* out) {
  return decode_scaled(data, size, channels, 1, out);
}

std::string check_jpeg(const uint8_t* data, size_t size) {
  Image img;
  return decode_scaled(data, size, 1, 8, &img);
}

Image resize_crop(const Image& in, int out_w, int out_h, int x0, int y0, int crop_w, int crop_h) {
  const int c = in.channels;
  // Horizontal pass first (as PIL), only for the cropped columns and the rows the vertical pass reads.
  // The intermediate is rounded to uint8, again as PIL does, so results match it to within 1 level.
  const bool same_w = out_w == in.width, same_h = out_h == in.height;
  Taps v = same_h ? Taps{} : make_taps(in.height, out_h, y0, crop_h);
  const int r0 = same_h ? y0 : v.first.front();
  const int r1 = same_h ? y0 + crop_h : v.first.back() + v.count.back();
  std::vector<uint8_t> mid(static_cast<size_t>(r1 - r0) * crop_w * c);
  if (same_w) {
    for (int y = r0; y < r1; ++y)
      std::copy_n(&in.pixels[(static_cast<size_t>(y) * in.width + x0) * c], static_cast<size_t>(crop_w) * c,
                  &mid[static_cast<size_t>(y - r0) * crop_w * c]);
  } else {
    const Taps h = make_taps(in.width, out_w, x0, crop_w);
    if (c == 3)
      horizontal_pass<3>(in, h, r0, r1, mid.data());
    else
      horizontal_pass<1>(in, h, r0, r1, mid.data());
  }
  Image out;
  out.width = crop_w, out.height = crop_h, out.channels = c;
  if (same_h) {
    out.pixels = std::move(mid);
    return out;
  }
  out.pixels.resize(static_cast<size_t>(crop_w) * crop_h * c);
  // Vertical pass: each output row is a weighted sum of a few intermediate rows, accumulated over the
  // whole row at once (contiguous and unaliased, so -O3 vectorises it).
  const size_t row_len = static_cast<size_t>(crop_w) * c;
  std::vector<float> acc_buf(row_len);
  float* __restrict acc = acc_buf.data();
  for (int y = 0; y < crop_h; ++y) {
    std::fill_n(acc, row_len, 0.0f);
    for (int j = 0; j < v.count[y]; ++j) {
      const float wj = v.weights[static_cast<size_t>(y) * v.stride + j];
      const uint8_t* __restrict src = &mid[static_cast<size_t>(v.first[y] + j - r0) * row_len];
      for (size_t i = 0; i < row_len; ++i) acc[i] += wj * static_cast<float>(src[i]);
    }
    uint8_t* __restrict dst = &out.pixels[y * row_len];
    for (size_t i = 0; i < row_len; ++i) dst[i] = to_u8(acc[i]);
  }
  return out;
}

int resize_target(const Preprocess& p) {
  if (p.resize > 0) return p.resize;
  const int64_t crop = std::max(p.sample_shape[1], p.sample_shape[2]);
  return static_cast<int>(std::lround(static_cast<double>(crop) * 256.0 / 224.0));
}

void check_image_preprocess(const Preprocess& p, const std::string& where) {
  const Shape& s = p.sample_shape;
  if (s.size() != 3 || (s[0] != 1 && s[0] != 3) || s[1] <= 0 || s[2] <= 0)
    fail(where + ": JPEG datasets need a sample shape [C,H,W] with C 1 or 3, got " + shape_str(s));
  if (p.resize < 0) fail(where + ": resize must be positive, got " + std::to_string(p.resize));
  // The shorter side after resizing must cover the crop in both directions.
  if (p.resize > 0 && p.resize < std::max(s[1], s[2]))
    fail(where + ": resize " + std::to_string(p.resize) + " is smaller than the crop " + std::to_string(s[1]) +
         "x" + std::to_string(s[2]));
  check_normalisation(p, s[0], where);
}

Tensor image_to_tensor(const Image& img, const Preprocess& p) {
  const int crop_h = static_cast<int>(p.sample_shape[1]), crop_w = static_cast<int>(p.sample_shape[2]);
  const int r = resize_target(p);
  // torchvision Resize(int): the shorter side becomes r, the longer int(r * long / short).
  int out_w, out_h;
  if (img.width <= img.height) {
    out_w = r, out_h = static_cast<int>(static_cast<double>(r) * img.height / img.width);
  } else {
    out_h = r, out_w = static_cast<int>(static_cast<double>(r) * img.width / img.height);
  }
  // torchvision CenterCrop: int(round((size - crop) / 2)), Python rounding half to even (nearbyint).
  const int x0 = static_cast<int>(std::nearbyint((out_w - crop_w) / 2.0));
  const int y0 = static_cast<int>(std::nearbyint((out_h - crop_h) / 2.0));
  const Image crop = resize_crop(img, out_w, out_h, x0, y0, crop_w, crop_h);

  const int c = crop.channels;
  const int64_t plane = int64_t{crop_w} * crop_h;
  std::vector<uint8_t> chw(crop.pixels.size());
  for (int64_t i = 0; i < plane; ++i)
    for (int ch = 0; ch < c; ++ch) chw[ch * plane + i] = crop.pixels[i * c + ch];
  Tensor t(DType::Float32, p.sample_shape);
  pixels_to_float(chw.data(), t.data<float>(), c, plane, p);
  return t;
}

Sample jpeg_sample(const uint8_t* data, size_t size, const Preprocess& p, const std::string& what) {
  Sample s;
  try {
    Image img;
    std::string err = decode_jpeg(data, size, static_cast<int>(p.sample_shape[0]), &img);
    if (!err.empty()) {
      s.error = what + ": " + err;
      return s;
    }
    s.input = image_to_tensor(img, p);
  } catch (const std::exception& e) {  // e.g. bad_alloc: one bad sample must not end an evaluation
    s.input = Tensor();
    s.error = what + ": " + e.what();
  }
  return s;
}

}  // namespace joule::data
