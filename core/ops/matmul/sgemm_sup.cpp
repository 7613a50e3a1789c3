#include "core/ops/matmul/sgemm_sup.h"

#include <blis.h>

#include <algorithm>

#include "core/ir/error.h"
#include "core/ops/matmul/blis_runtime.h"

namespace plexus::ops {

namespace {

cntx_t* cntx_of(const BlisArch& arch) { return static_cast<cntx_t*>(const_cast<void*>(arch.context)); }

bool has_sup(const BlisArch& arch) { return bli_cntx_get_l3_sup_blksz_def_dt(BLIS_FLOAT, BLIS_NR, cntx_of(arch)) > 0; }

const BlisArch& chosen_arch() {
  const std::vector<BlisArch>& candidates = blis_candidates();
  const std::string preferred = blis_info().blis_default;
  const auto it = std::find_if(candidates.begin(), candidates.end(),
                               [&](const BlisArch& a) { return a.name == preferred && has_sup(a); });
  if (it != candidates.end()) return *it;
  const auto any = std::find_if(candidates.begin(), candidates.end(), has_sup);
  return any != candidates.end() ? *any : candidates.front();
}

}  // namespace

const SgemmSup& SgemmSup::get() {
  static const SgemmSup sup = [] {
    const BlisArch& arch = chosen_arch();
    cntx_t* cntx = cntx_of(arch);
    SgemmSup s;
    s.mr_ = bli_cntx_get_l3_sup_blksz_def_dt(BLIS_FLOAT, BLIS_MR, cntx);
    s.nr_ = bli_cntx_get_l3_sup_blksz_def_dt(BLIS_FLOAT, BLIS_NR, cntx);
    s.rrr_ = bli_cntx_get_l3_sup_ker_dt(BLIS_FLOAT, BLIS_RRR, cntx);
    s.rrc_ = bli_cntx_get_l3_sup_ker_dt(BLIS_FLOAT, BLIS_RRC, cntx);
    s.rcr_ = bli_cntx_get_l3_sup_ker_dt(BLIS_FLOAT, BLIS_RCR, cntx);
    s.context_ = arch.context;
    s.description_ = arch.name + " sup " +
                     (s.nr_ > 0 ? std::to_string(s.mr_) + "x" + std::to_string(s.nr_) : std::string("reference"));
    return s;
  }();
  return sup;
}

void SgemmSup::run(int64_t m, int64_t n, int64_t k, const float* a, int64_t rs_a, int64_t cs_a, const float* b,
                   int64_t rs_b, int64_t cs_b, float beta, float* c, int64_t ldc) const {
  const bool b_rows = cs_b == 1;
  if (!b_rows && cs_a != 1) ir::fail(ir::ErrorCode::Internal, "SgemmSup: A and B both column-stored");
  const auto fn = reinterpret_cast<sgemmsup_ker_ft>(const_cast<void*>(b_rows ? (cs_a == 1 ? rrr_ : rcr_) : rrc_));
  auxinfo_t aux;
  bli_auxinfo_set_ps_a(std::max<int64_t>(mr_, 1) * rs_a, &aux);  // next mr rows of A, as BLIS sets it
  bli_auxinfo_set_ps_b(std::max<int64_t>(nr_, 1) * cs_b, &aux);
  bli_auxinfo_set_is_a(1, &aux);
  bli_auxinfo_set_is_b(1, &aux);
  float alpha = 1.0f;
  const int64_t step = nr_ > 0 ? nr_ : n;
  for (int64_t j0 = 0; j0 < n; j0 += step) {
    fn(BLIS_NO_CONJUGATE, BLIS_NO_CONJUGATE, m, std::min(step, n - j0), k, &alpha, const_cast<float*>(a), rs_a, cs_a,
       const_cast<float*>(b + j0 * cs_b), rs_b, cs_b, &beta, c + j0, ldc, 1, &aux,
       static_cast<cntx_t*>(const_cast<void*>(context_)));
  }
}

}  // namespace plexus::ops
