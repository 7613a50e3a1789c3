#include "core/ops/matmul/blis_runtime.h"

#include <blis.h>

#include <cstdlib>
#include <mutex>
#include <optional>

#include "core/ir/error.h"

namespace plexus::ops {

namespace {

using ir::ErrorCode;

// The x86-64 sub-configurations of Debian's BLIS 0.9 build, with what each needs from
// the CPU. `tier` orders ISA generations; candidates come from the highest tier the CPU
// runs plus the AVX2 tier (zen3 beats skx on small shapes, the table of docs/design.md, "Platform facts").
struct ArchSpec {
  arch_t id;
  const char* name;
  int tier;  // 3 = AVX-512, 2 = AVX2+FMA, 1 = AVX or SSSE3, 0 = generic, -1 = never measured
  bool (*supported)();
};

bool has_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}
bool has_avx2_fma() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

const ArchSpec kArchs[] = {
    {BLIS_ARCH_SKX, "skx", 3, [] { return has_avx512(); }},
    {BLIS_ARCH_ZEN3, "zen3", 2, [] { return has_avx2_fma(); }},
    {BLIS_ARCH_ZEN2, "zen2", 2, [] { return has_avx2_fma(); }},
    {BLIS_ARCH_ZEN, "zen", 2, [] { return has_avx2_fma(); }},
    {BLIS_ARCH_HASWELL, "haswell", 2, [] { return has_avx2_fma(); }},
    {BLIS_ARCH_SANDYBRIDGE, "sandybridge", 1, [] { return static_cast<bool>(__builtin_cpu_supports("avx")); }},
    {BLIS_ARCH_PENRYN, "penryn", 1, [] { return static_cast<bool>(__builtin_cpu_supports("ssse3")); }},
    {BLIS_ARCH_KNL, "knl", -1, [] { return static_cast<bool>(__builtin_cpu_supports("avx512er")); }},
    {BLIS_ARCH_EXCAVATOR, "excavator", -1, [] { return static_cast<bool>(__builtin_cpu_supports("fma4")); }},
    {BLIS_ARCH_STEAMROLLER, "steamroller", -1, [] { return static_cast<bool>(__builtin_cpu_supports("fma4")); }},
    {BLIS_ARCH_PILEDRIVER, "piledriver", -1, [] { return static_cast<bool>(__builtin_cpu_supports("fma4")); }},
    {BLIS_ARCH_BULLDOZER, "bulldozer", -1, [] { return static_cast<bool>(__builtin_cpu_supports("fma4")); }},
    {BLIS_ARCH_GENERIC, "generic", 0, [] { return true; }},
};

std::string known_ids() {
  std::string s;
  for (const auto& a : kArchs) s += (s.empty() ? "" : ", ") + std::to_string(a.id) + "=" + a.name;
  return s;
}

const ArchSpec* find_arch(long id) {
  for (const auto& a : kArchs) {
    if (a.id == id) return &a;
  }
  return nullptr;
}

// Parses BLIS_ARCH_TYPE. nullopt when unset or empty; throws when BLIS would abort,
// silently pick another kernel set, or the CPU cannot run the named one.
std::optional<const ArchSpec*> arch_override() {
  const char* raw = std::getenv("BLIS_ARCH_TYPE");
  if (raw == nullptr || *raw == '\0') return std::nullopt;
  char* end = nullptr;
  const long id = std::strtol(raw, &end, 10);
  const std::string value = raw;
  if (*end != '\0') {
    ir::fail(ErrorCode::Unsupported, "BLIS_ARCH_TYPE='" + value + "' is not a number; BLIS 0.9 takes a numeric id (" +
                                         known_ids() + ")");
  }
  if (id == -1) return std::nullopt;  // BLIS's own "unset" value
  const ArchSpec* spec = find_arch(id);
  if (spec == nullptr) {
    ir::fail(ErrorCode::Unsupported, "BLIS_ARCH_TYPE=" + value + " is not a kernel set of this BLIS build (" +
                                         known_ids() + ")");
  }
  if (!spec->supported()) {
    ir::fail(ErrorCode::Unsupported, "BLIS_ARCH_TYPE=" + value + " selects '" + spec->name +
                                         "' kernels, which use instructions this CPU does not have");
  }
  return spec;
}

struct BlisState {
  std::vector<BlisArch> candidates;
  std::optional<ir::Error> error;
  bool forced = false;  // BLIS_ARCH_TYPE named the one candidate
  BlisInfo info;
};

BlisArch make_arch(const ArchSpec& spec) {
  return BlisArch{spec.id, spec.name, bli_gks_lookup_nat_cntx(spec.id)};
}

BlisState init_blis() {
  BlisState state;
  state.info.flavour = "pthread";
  const std::pair<const char*, bool> features[] = {{"avx512f", __builtin_cpu_supports("avx512f")},
                                                   {"avx2", __builtin_cpu_supports("avx2")},
                                                   {"fma", __builtin_cpu_supports("fma")},
                                                   {"avx", __builtin_cpu_supports("avx")},
                                                   {"ssse3", __builtin_cpu_supports("ssse3")}};
  for (const auto& [name, present] : features) {
    if (present) state.info.cpu_features += std::string(state.info.cpu_features.empty() ? "" : " ") + name;
  }
  std::optional<const ArchSpec*> forced;
  try {
    forced = arch_override();
  } catch (const ir::Error& e) {
    state.error = e;
    state.info.selection = e.what();
    return state;
  }
  bli_init();  // only now: bli_arch_query_id() before initialisation aborts when the variable is set
  state.info.version = bli_info_get_version_str();
  state.info.blis_default = bli_arch_string(bli_arch_query_id());
  if (forced) {
    state.candidates.push_back(make_arch(**forced));
    state.forced = true;
    state.info.selection = "BLIS_ARCH_TYPE=" + std::to_string((*forced)->id) + " (" + (*forced)->name + ")";
  } else {
    int best_tier = 0;
    for (const auto& a : kArchs) {
      if (a.tier > best_tier && a.supported()) best_tier = a.tier;
    }
    for (const auto& a : kArchs) {
      const bool in_tier = a.tier == best_tier || (best_tier == 3 && a.tier == 2);
      if (in_tier && a.supported()) state.candidates.push_back(make_arch(a));
    }
    state.info.selection = "chosen per GEMM shape";
  }
  for (const auto& c : state.candidates) state.info.candidates.push_back(c.name);
  return state;
}

const BlisState& state() {
  static const BlisState s = init_blis();
  return s;
}

}  // namespace

const std::vector<BlisArch>& blis_candidates() {
  const BlisState& s = state();
  if (s.error) throw *s.error;
  return s.candidates;
}

BlisInfo blis_info() { return state().info; }

bool blis_arch_forced() { return state().forced; }

}  // namespace plexus::ops
