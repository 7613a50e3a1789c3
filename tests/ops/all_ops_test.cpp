// Guard for "every op is tested": the registry must hold exactly the ops this suite covers,
// and exactly the ones with a gradient rule must be gradient-checked. Adding an op (or a
// gradient rule) without extending the family's test file and these lists fails here.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "core/ir/op_registry.h"

namespace plexus::ops::test {
namespace {

struct Coverage {
  const char* file;     ///< the test file that checks the forward kernel
  bool gradient_check;  ///< that file also runs a finite-difference gradient check
};

const std::map<std::string, Coverage>& covered() {
  static const std::map<std::string, Coverage> ops = {
      {"matmul", {"matmul_test.cpp", true}},
      {"batch_matmul", {"batch_matmul_test.cpp", true}},
      {"add", {"elementwise_binary_test.cpp", true}},
      {"add_", {"elementwise_binary_test.cpp", false}},
      {"copy_var_update_", {"elementwise_binary_test.cpp", false}},
      {"sub", {"elementwise_binary_test.cpp", true}},
      {"mul", {"elementwise_binary_test.cpp", true}},
      {"div", {"elementwise_binary_test.cpp", true}},
      {"equal", {"elementwise_binary_test.cpp", false}},
      {"where", {"where_test.cpp", true}},
      {"relu", {"elementwise_unary_test.cpp", true}},
      {"relu_grad", {"elementwise_unary_test.cpp", false}},
      {"gelu", {"elementwise_unary_test.cpp", true}},
      {"gelu_grad", {"elementwise_unary_test.cpp", false}},
      {"exp", {"elementwise_unary_test.cpp", true}},
      {"exp_grad", {"elementwise_unary_test.cpp", false}},
      {"log", {"elementwise_unary_test.cpp", true}},
      {"log_grad", {"elementwise_unary_test.cpp", false}},
      {"sqrt", {"elementwise_unary_test.cpp", true}},
      {"sqrt_grad", {"elementwise_unary_test.cpp", false}},
      {"tanh", {"elementwise_unary_test.cpp", true}},
      {"tanh_grad", {"elementwise_unary_test.cpp", false}},
      {"neg", {"elementwise_unary_test.cpp", true}},
      {"reshape", {"shape_ops_test.cpp", true}},
      {"transpose", {"shape_ops_test.cpp", true}},
      {"expand", {"shape_ops_test.cpp", true}},
      {"flatten", {"shape_ops_test.cpp", true}},
      {"gather", {"gather_test.cpp", true}},
      {"concat", {"concat_slice_test.cpp", true}},
      {"split", {"concat_slice_test.cpp", true}},
      {"slice", {"concat_slice_test.cpp", true}},
      {"slice_grad", {"concat_slice_test.cpp", false}},
      {"gather_grad", {"gather_test.cpp", false}},
      {"conv2d", {"conv_test.cpp", true}},
      {"conv2d_grad_input", {"conv_test.cpp", false}},
      {"conv2d_grad_weight", {"conv_test.cpp", false}},
      {"max_pool2d", {"pooling_test.cpp", true}},
      {"max_pool2d_grad", {"pooling_test.cpp", false}},
      {"reduce_sum", {"reductions_test.cpp", true}},
      {"reduce_mean", {"reductions_test.cpp", true}},
      {"argmax", {"reductions_test.cpp", false}},
      {"layer_norm", {"layer_norm_test.cpp", true}},
      {"layer_norm_grad", {"layer_norm_test.cpp", false}},
      {"softmax", {"softmax_test.cpp", true}},
      {"softmax_grad", {"softmax_test.cpp", false}},
      {"log_softmax", {"softmax_test.cpp", true}},
      {"log_softmax_grad", {"softmax_test.cpp", false}},
      {"softmax_cross_entropy", {"losses_test.cpp", true}},
      {"softmax_cross_entropy_grad", {"losses_test.cpp", false}},
      {"cast", {"conversions_test.cpp", true}},
      {"identity", {"identity_test.cpp", true}},
      {"detach", {"identity_test.cpp", true}},  // no gradient by definition: checked through autodiff
      {"repeat", {"repeat_test.cpp", true}},
      {"repeat_grad", {"repeat_test.cpp", false}},
      {"dropout", {"dropout_test.cpp", true}},
      {"dropout_grad", {"dropout_test.cpp", false}},
      {"scaled_add_", {"optimizers_test.cpp", false}},
      {"adamw_", {"optimizers_test.cpp", false}},
      {"sgd_momentum_", {"optimizers_test.cpp", false}},
      {"lr_schedule", {"lr_schedule_test.cpp", false}},
      {"global_sq_norm", {"grad_clip_test.cpp", false}},
      {"clip_scale_", {"grad_clip_test.cpp", false}},
      {"clip_by_global_norm_", {"grad_clip_test.cpp", false}},
      {"replicated_all_reduce", {"collectives_test.cpp", true}},
      {"replicated_all_reduce_", {"collectives_test.cpp", false}},
      {"replicated_all_gather", {"collectives_test.cpp", true}},
      {"replicated_reduce_scatter", {"collectives_test.cpp", true}},
      {"replica_sharded_slice", {"collectives_test.cpp", true}},
      {"replica_sharded_slice_grad", {"collectives_test.cpp", false}},
      {"remote_load", {"remote_test.cpp", false}},
      {"remote_store", {"remote_test.cpp", false}},
  };
  return ops;
}

TEST(AllOps, EveryRegisteredOpHasTests) {
  const std::vector<std::string> names = ir::OpRegistry::instance().names();
  for (const std::string& name : names) {
    EXPECT_TRUE(covered().count(name)) << "op '" << name << "' is registered but tests/ops has no tests for it";
  }
  const std::set<std::string> registered(names.begin(), names.end());
  for (const auto& [name, coverage] : covered()) {
    EXPECT_TRUE(registered.count(name)) << "op '" << name << "' is listed as tested in " << coverage.file
                                        << " but is not registered";
  }
}

TEST(AllOps, EveryDifferentiableOpIsGradientChecked) {
  for (const auto& [name, coverage] : covered()) {
    const ir::OpDef* def = ir::OpRegistry::instance().find(name);
    if (!def) continue;  // reported by EveryRegisteredOpHasTests
    EXPECT_EQ(static_cast<bool>(def->grad), coverage.gradient_check)
        << "op '" << name << "': " << (def->grad ? "has a gradient rule that " : "has no gradient rule but ")
        << coverage.file << (coverage.gradient_check ? " claims to check" : " does not check");
  }
}

}  // namespace
}  // namespace plexus::ops::test
