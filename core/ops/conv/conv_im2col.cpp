#include "core/ops/conv/conv_im2col.h"

#include <algorithm>

namespace plexus::ops {

void im2col(const ConvGeometry& g, const float* xn, float* col, int64_t ld) {
  for (int64_t c = 0; c < g.c; ++c) {
    const float* xc = xn + c * g.h * g.w;
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        float* row = col + ((c * g.kh + i) * g.kw + j) * ld;
        int64_t lo = 0, hi = 0;
        valid_columns(g, j, lo, hi);
        for (int64_t oh = 0; oh < g.oh; ++oh) {
          float* out = row + oh * g.ow;
          const int64_t hi_in = oh * g.sh - g.ph + i;
          if (hi_in < 0 || hi_in >= g.h) {
            std::fill(out, out + g.ow, 0.0f);
            continue;
          }
          const float* xr = xc + hi_in * g.w;  // xr[ow*sw - pw + j] is input column ow*sw - pw + j
          std::fill(out, out + lo, 0.0f);
          if (g.sw == 1) {  // kept apart so that it vectorises (a memcpy call costs more on short rows)
            for (int64_t ow = lo; ow < hi; ++ow) out[ow] = xr[ow - g.pw + j];
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) out[ow] = xr[ow * g.sw - g.pw + j];
          }
          std::fill(out + hi, out + g.ow, 0.0f);
        }
      }
    }
  }
}

void col2im(const ConvGeometry& g, const float* col, int64_t ld, float* dxn) {
  for (int64_t c = 0; c < g.c; ++c) {
    float* dxc = dxn + c * g.h * g.w;
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        const float* row = col + ((c * g.kh + i) * g.kw + j) * ld;
        int64_t lo = 0, hi = 0;
        valid_columns(g, j, lo, hi);
        for (int64_t oh = 0; oh < g.oh; ++oh) {
          const int64_t hi_in = oh * g.sh - g.ph + i;
          if (hi_in < 0 || hi_in >= g.h) continue;
          const float* in = row + oh * g.ow;
          float* dr = dxc + hi_in * g.w;  // dr[ow*sw - pw + j] is input column ow*sw - pw + j
          if (g.sw == 1) {                // kept apart so that it vectorises
            for (int64_t ow = lo; ow < hi; ++ow) dr[ow - g.pw + j] += in[ow];
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) dr[ow * g.sw - g.pw + j] += in[ow];
          }
        }
      }
    }
  }
}

}  // namespace plexus::ops
