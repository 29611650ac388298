#include "joule/quant/format_attrs.h"

#include "joule/core/error.h"

namespace joule::quant {

namespace {
const char* kind_name(FormatKind k) {
  switch (k) {
    case FormatKind::None: return "none";
    case FormatKind::Int: return "int";
    case FormatKind::Fixed: return "fixed";
    case FormatKind::Float16: return "fp16";
    case FormatKind::BFloat16: return "bf16";
    case FormatKind::MiniFloat: return "minifloat";
    case FormatKind::BlockFloat: return "bfp";
  }
  return "?";
}
}  // namespace

void set_format_attrs(ir::Node& n, const Format& f) {
  n.attrs["format"] = std::string(kind_name(f.kind));
  n.attrs["bits"] = int64_t{f.bits};
  n.attrs["symmetric"] = int64_t{f.symmetric};
  n.attrs["signed"] = int64_t{f.is_signed};
  n.attrs["narrow_range"] = int64_t{f.narrow_range};
  n.attrs["per_channel"] = int64_t{f.granularity == Granularity::PerChannel};
  n.attrs["axis"] = int64_t{f.axis};
  n.attrs["frac_bits"] = int64_t{f.frac_bits};
  n.attrs["exp_bits"] = int64_t{f.exp_bits};
  n.attrs["man_bits"] = int64_t{f.man_bits};
  n.attrs["exp_bias"] = int64_t{f.bias};
  n.attrs["finite_only"] = int64_t{f.finite_only};
  n.attrs["has_nan"] = int64_t{f.has_nan};
  n.attrs["denormals"] = int64_t{f.denormals};
  n.attrs["saturate"] = int64_t{f.saturate};
  n.attrs["scaled"] = int64_t{f.scaled};
  n.attrs["block"] = int64_t{f.block};
}

Format format_from_attrs(const ir::Node& n) {
  Format f;
  const std::string k = n.attr_string("format", "");
  if (k == "int") f.kind = FormatKind::Int;
  else if (k == "fixed") f.kind = FormatKind::Fixed;
  else if (k == "fp16") f.kind = FormatKind::Float16;
  else if (k == "bf16") f.kind = FormatKind::BFloat16;
  else if (k == "minifloat") f.kind = FormatKind::MiniFloat;
  else if (k == "bfp") f.kind = FormatKind::BlockFloat;
  else if (k == "none") f.kind = FormatKind::None;
  else fail(n.where() + ": attribute 'format' must be int, fixed, fp16, bf16, minifloat, bfp or none, got '" + k + "'");
  auto i = [&](const char* a, int def) { return static_cast<int>(n.attr_int(a, def)); };
  f.bits = i("bits", f.bits);
  f.symmetric = i("symmetric", f.symmetric);
  f.is_signed = i("signed", f.is_signed);
  f.narrow_range = i("narrow_range", f.narrow_range);
  f.granularity = i("per_channel", 0) ? Granularity::PerChannel : Granularity::PerTensor;
  f.axis = i("axis", f.axis);
  f.frac_bits = i("frac_bits", f.frac_bits);
  f.exp_bits = i("exp_bits", f.exp_bits);
  f.man_bits = i("man_bits", f.man_bits);
  f.bias = i("exp_bias", f.bias);
  f.finite_only = i("finite_only", f.finite_only);
  f.has_nan = i("has_nan", f.has_nan);
  f.denormals = i("denormals", f.denormals);
  f.saturate = i("saturate", f.saturate);
  f.scaled = i("scaled", f.scaled);
  f.block = i("block", f.block);
  f.validate(n.where());
  return f;
}

}  // namespace joule::quant
