// Writes the C API sequence fuzzer's seed corpus into the folder given: whole programs in
// the fuzzer's input format (sequence_input.h), each argument byte in the order
// c_api_sequence_fuzzer.cpp reads it. A tiny training step (matmul, reduce_sum, autodiff,
// scaled_add_) run, read, written, checkpointed, run asynchronously with callbacks, its IR
// destroyed before its session; the same on 2 replicas with a grouped variable and an
// all-reduce (collectives plugin "local"); two blocks run by the "pipelined" strategy.
// Ops are named by string (the catalog's order is the library's), so seeds do not depend
// on it.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>

#include "abi/fuzz/fuzz_input.h"
#include "sequence_input.h"

namespace {

using plexus::test::FuzzInputWriter;
using plexus::test::SequenceOp;

class Program {
 public:
  Program& call(SequenceOp op, std::initializer_list<uint8_t> args = {}) {
    w_.put(static_cast<uint8_t>(op));
    return bytes(args);
  }
  Program& bytes(std::initializer_list<uint8_t> args) {
    for (uint8_t b : args) w_.put(b);
    return *this;
  }
  // plx_ir_add_op by name on IR 0: inputs are picks of IR 0's tensors, no attributes, room
  // for 4 outputs.
  Program& op(const char* name, std::initializer_list<uint8_t> inputs) {
    call(SequenceOp::AddOp, {0, 0xF0});
    w_.string(name);
    w_.put(static_cast<uint8_t>(inputs.size()));
    for (uint8_t pick : inputs) bytes({0, pick});  // operand: this IR's tensor number `pick`
    return bytes({0, 0});                          // no extra attribute; outputs: room for 4
  }
  const std::vector<uint8_t>& data() const { return w_.bytes(); }

 private:
  FuzzInputWriter w_;
};

// Variable "w" [2] or [2,2], stream "x" of the same shape, y = x * w (or matmul),
// loss = reduce_sum(y), g = d loss / d w, w -= g, d2h stream "y" of the loss.
// Tensors of IR 0 after: 0 w, 1 x, 2 y, 3 loss, 4 g.
void training_graph(Program& p, const char* op, uint8_t rank, uint8_t options_mode, uint8_t g) {
  p.call(SequenceOp::AddVariable, {0, 0, 0, rank});  // IR 0, "w", float32, rank dims of 2
  for (uint8_t d = 0; d < rank; ++d) p.bytes({1});
  p.bytes({1, options_mode, g, 0, 0, 0, 0, 1});  // with options, grouping, data right
  p.call(SequenceOp::AddH2dStream, {0, 2, 0, rank});  // "x"
  for (uint8_t d = 0; d < rank; ++d) p.bytes({1});
  p.op(op, {1, 0});
  p.op("reduce_sum", {2});
  p.call(SequenceOp::Autodiff, {0, 0, 3, 1, 0, 0});
  p.op("scaled_add_", {0, 4});
  p.call(SequenceOp::AddD2hStream, {0, 3, 0, 3});
}

void session_work(Program& p) {
  p.call(SequenceOp::Run, {0, 0, 1, 0, 0, 0, 0});           // plx_session_run: right arrays
  p.call(SequenceOp::ReadVariable, {0, 0, 0, 0, 0});
  p.call(SequenceOp::WriteVariable, {0, 0, 0, 0, 3});
  p.call(SequenceOp::SessionQuery, {0, 6, 2});              // the report
  p.call(SequenceOp::Checkpoint, {0, 0, 0});                // save
  p.call(SequenceOp::Checkpoint, {0, 3, 0});                // load, strict
  p.call(SequenceOp::Run, {0, 3, 2, 0, 14, 7, 1});          // async: fill and deliver callbacks
  p.call(SequenceOp::WaitRun, {0, 3});
  p.call(SequenceOp::Run, {0, 0, 1, 0, 12, 0, 0});          // wrong dtype
  p.call(SequenceOp::DestroyIr, {0});
  p.call(SequenceOp::Run, {0, 2, 1, 0, 0, 0, 0});           // plx_session_run_with, after its IR went
  p.call(SequenceOp::DestroySession, {0});
}

void write(const std::filesystem::path& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                    static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus folder>\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);

  Program one;  // R = 1, matmul
  one.call(SequenceOp::CreateIr, {0});
  training_graph(one, "matmul", 2, 0, 0);
  one.call(SequenceOp::CreateSession, {0, 0, 0, 0, 0, 0, 0, 0});
  session_work(one);
  write(dir, "train_r1", one.data());

  Program two;  // R = 2, a variable per replica group, an all-reduce of the loss
  two.call(SequenceOp::CreateIr, {1});
  training_graph(two, "mul", 1, 2, 1);
  two.op("replicated_all_reduce", {3});
  two.call(SequenceOp::CreateSession, {0, 1, 0, 5, 0, 0, 0, 0});  // collectives "local", 2 iterations
  session_work(two);
  write(dir, "train_r2_local", two.data());

  Program pipe;  // two blocks on two devices, the "pipelined" strategy, 2 micro-batches
  pipe.call(SequenceOp::CreateIr, {0});
  pipe.call(SequenceOp::Scope, {0, 6, 0});  // begin_block("b0", 0)
  pipe.call(SequenceOp::AddVariable, {0, 0, 0, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1});
  pipe.call(SequenceOp::AddH2dStream, {0, 2, 0, 2, 1, 1});
  pipe.op("matmul", {1, 0});
  pipe.call(SequenceOp::Scope, {0, 3, 0});   // end_block
  pipe.call(SequenceOp::Scope, {0, 10, 1});  // begin_block("b1", 1)
  pipe.op("gelu", {2});
  pipe.op("reduce_sum", {3});
  pipe.call(SequenceOp::Scope, {0, 3, 0});
  pipe.call(SequenceOp::Autodiff, {0, 0, 4, 1, 0, 0});
  pipe.op("scaled_add_", {0, 5});
  pipe.call(SequenceOp::AddD2hStream, {0, 3, 0, 4});
  pipe.call(SequenceOp::CreateSession, {0, 4, 0, 0, 0, 160, 0, 0});
  session_work(pipe);
  write(dir, "pipelined", pipe.data());
  return 0;
}
