// Guard for "every op is tested": the schema registry must hold exactly the ops this suite
// covers, each with a kernel (and no kernel without a schema), and exactly the ones with a
// gradient rule must be gradient-checked. Adding an op (or a gradient rule) without
// extending the family's test file and these lists fails here.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "core/ir/op_schema.h"
#include "core/ops/kernel_def.h"

namespace plexus::ops::test {
namespace {

struct Coverage {
  const char* file;     ///< the test file that checks the forward kernel
  bool gradient_check;  ///< that file also runs a finite-difference gradient check
};

const std::map<std::string, Coverage>& covered() {
  static const std::map<std::string, Coverage> ops = {
      {"matmul", {"matmul/matmul_test.cpp", true}},
      {"batch_matmul", {"matmul/batch_matmul_test.cpp", true}},
      {"add", {"elementwise/elementwise_binary_test.cpp", true}},
      {"add_", {"elementwise/elementwise_binary_test.cpp", false}},
      {"copy_var_update_", {"elementwise/elementwise_binary_test.cpp", false}},
      {"sub", {"elementwise/elementwise_binary_test.cpp", true}},
      {"mul", {"elementwise/elementwise_binary_test.cpp", true}},
      {"div", {"elementwise/elementwise_binary_test.cpp", true}},
      {"equal", {"elementwise/elementwise_binary_test.cpp", false}},
      {"where", {"elementwise/where_test.cpp", true}},
      {"relu", {"elementwise/elementwise_unary_test.cpp", true}},
      {"relu_grad", {"elementwise/elementwise_unary_test.cpp", false}},
      {"gelu", {"elementwise/elementwise_unary_test.cpp", true}},
      {"gelu_grad", {"elementwise/elementwise_unary_test.cpp", false}},
      {"exp", {"elementwise/elementwise_unary_test.cpp", true}},
      {"exp_grad", {"elementwise/elementwise_unary_test.cpp", false}},
      {"log", {"elementwise/elementwise_unary_test.cpp", true}},
      {"log_grad", {"elementwise/elementwise_unary_test.cpp", false}},
      {"sqrt", {"elementwise/elementwise_unary_test.cpp", true}},
      {"sqrt_grad", {"elementwise/elementwise_unary_test.cpp", false}},
      {"tanh", {"elementwise/elementwise_unary_test.cpp", true}},
      {"tanh_grad", {"elementwise/elementwise_unary_test.cpp", false}},
      {"neg", {"elementwise/elementwise_unary_test.cpp", true}},
      {"reshape", {"shape/shape_ops_test.cpp", true}},
      {"alias", {"shape/shape_ops_test.cpp", true}},
      {"transpose", {"shape/shape_ops_test.cpp", true}},
      {"expand", {"shape/shape_ops_test.cpp", true}},
      {"flatten", {"shape/shape_ops_test.cpp", true}},
      {"gather", {"shape/gather_test.cpp", true}},
      {"concat", {"shape/concat_slice_test.cpp", true}},
      {"split", {"shape/concat_slice_test.cpp", true}},
      {"slice", {"shape/concat_slice_test.cpp", true}},
      {"slice_grad", {"shape/concat_slice_test.cpp", false}},
      {"gather_grad", {"shape/gather_test.cpp", false}},
      {"conv2d", {"conv/conv_test.cpp", true}},
      {"conv2d_relu", {"conv/conv_test.cpp", false}},
      {"conv2d_relu_max_pool2d", {"conv/conv_pool_test.cpp", false}},
      {"conv2d_relu_max_pool2d_grad_weight", {"conv/conv_pool_test.cpp", false}},
      {"conv2d_grad_input", {"conv/conv_test.cpp", false}},
      {"conv2d_grad_weight", {"conv/conv_test.cpp", false}},
      {"max_pool2d", {"pool/pooling_test.cpp", true}},
      {"max_pool2d_relu", {"pool/pooling_test.cpp", false}},
      {"max_pool2d_grad", {"pool/pooling_test.cpp", false}},
      {"reduce_sum", {"reduction/reductions_test.cpp", true}},
      {"reduce_mean", {"reduction/reductions_test.cpp", true}},
      {"argmax", {"reduction/reductions_test.cpp", false}},
      {"layer_norm", {"reduction/layer_norm_test.cpp", true}},
      {"layer_norm_grad", {"reduction/layer_norm_test.cpp", false}},
      {"softmax", {"reduction/softmax_test.cpp", true}},
      {"softmax_grad", {"reduction/softmax_test.cpp", false}},
      {"log_softmax", {"reduction/softmax_test.cpp", true}},
      {"log_softmax_grad", {"reduction/softmax_test.cpp", false}},
      {"softmax_cross_entropy", {"reduction/losses_test.cpp", true}},
      {"softmax_cross_entropy_grad", {"reduction/losses_test.cpp", false}},
      {"cast", {"elementwise/conversions_test.cpp", true}},
      {"identity", {"elementwise/identity_test.cpp", true}},
      {"detach", {"elementwise/identity_test.cpp", true}},  // no gradient by definition: checked through autodiff
      {"call", {"graph/call_test.cpp", true}},
      {"call_grad", {"graph/call_test.cpp", false}},
      {"bound_count", {"graph/call_test.cpp", true}},  // a test op: call_test.cpp registers it
      {"repeat", {"graph/repeat_test.cpp", true}},
      {"repeat_grad", {"graph/repeat_test.cpp", false}},
      {"dropout", {"elementwise/dropout_test.cpp", true}},
      {"dropout_grad", {"elementwise/dropout_test.cpp", false}},
      {"scaled_add_", {"optimizer/optimizers_test.cpp", false}},
      {"adamw_", {"optimizer/optimizers_test.cpp", false}},
      {"sgd_momentum_", {"optimizer/optimizers_test.cpp", false}},
      {"lr_schedule", {"optimizer/lr_schedule_test.cpp", false}},
      {"global_sq_norm", {"optimizer/grad_clip_test.cpp", false}},
      {"clip_scale_", {"optimizer/grad_clip_test.cpp", false}},
      {"clip_by_global_norm_", {"optimizer/grad_clip_test.cpp", false}},
      {"replicated_all_reduce", {"collective/collectives_test.cpp", true}},
      {"replicated_all_reduce_", {"collective/collectives_test.cpp", false}},
      {"replicated_all_reduce_bucket", {"collective/collectives_test.cpp", false}},
      {"replicated_all_reduce_bucket_", {"collective/collectives_test.cpp", false}},
      {"replicated_all_gather", {"collective/collectives_test.cpp", true}},
      {"replicated_reduce_scatter", {"collective/collectives_test.cpp", true}},
      {"replica_sharded_slice", {"collective/collectives_test.cpp", true}},
      {"replica_sharded_slice_grad", {"collective/collectives_test.cpp", false}},
      {"remote_load", {"collective/remote_test.cpp", false}},
      {"remote_store", {"collective/remote_test.cpp", false}},
  };
  return ops;
}

TEST(AllOps, EveryRegisteredOpHasTests) {
  const std::vector<std::string> names = ir::OpSchemaRegistry::instance().names();
  for (const std::string& name : names) {
    EXPECT_TRUE(covered().count(name)) << "op '" << name << "' is registered but tests/ops has no tests for it";
  }
  const std::set<std::string> registered(names.begin(), names.end());
  for (const auto& [name, coverage] : covered()) {
    EXPECT_TRUE(registered.count(name)) << "op '" << name << "' is listed as tested in " << coverage.file
                                        << " but is not registered";
  }
}

TEST(AllOps, EverySchemaHasAKernelAndEveryKernelASchema) {
  const std::vector<std::string> schemas = ir::OpSchemaRegistry::instance().names();
  EXPECT_EQ(KernelRegistry::instance().names(), schemas);
  for (const std::string& name : schemas) {
    const KernelDef* def = KernelRegistry::instance().find(name);
    EXPECT_TRUE(def && def->kernel) << "op '" << name << "' has a schema but no kernel factory";
  }
}

TEST(AllOps, EveryDifferentiableOpIsGradientChecked) {
  for (const auto& [name, coverage] : covered()) {
    const ir::OpSchema* def = ir::OpSchemaRegistry::instance().find(name);
    if (!def) continue;  // reported by EveryRegisteredOpHasTests
    EXPECT_EQ(static_cast<bool>(def->grad), coverage.gradient_check)
        << "op '" << name << "': " << (def->grad ? "has a gradient rule that " : "has no gradient rule but ")
        << coverage.file << (coverage.gradient_check ? " claims to check" : " does not check");
  }
}

}  // namespace
}  // namespace plexus::ops::test
