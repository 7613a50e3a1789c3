// The byte format of the C API sequence fuzzer's inputs (c_api_sequence_fuzzer.cpp), shared
// with its seed corpus program (seed_corpus.cpp). An input is a list of calls: an opcode
// byte (taken modulo the number of opcodes) and the call's argument bytes, read with the
// reader of tests/abi/fuzz/fuzz_input.h (integers little-endian, strings as a length byte
// and the bytes, 0xFF a NULL string; an input that runs out reads as zeros). Most argument
// bytes are choices: a "pick" byte selects an object of the fuzzer's state modulo how many
// there are. What each call reads, in order, is in c_api_sequence_fuzzer.cpp next to the
// opcode's case.
#pragma once

#include <cstdint>

namespace plexus::test {

enum class SequenceOp : uint8_t {
  CreateIr,           // pick of R value
  SetReplication,     // ir pick, R byte
  AddVariable,        // ir pick, name, dtype byte, shape, data mode, options mode [grouping, retrieval, shard_over]
  AddConstant,        // ir pick, dtype byte, shape, data mode
  AddH2dStream,       // ir pick, name, dtype byte, shape
  AddD2hStream,       // ir pick, name, tensor operand
  AddOp,              // ir pick, op byte [name], input count, operands, attributes, output capacity
  Autodiff,           // ir pick, loss operand, wrt count, operands
  TensorType,         // ir pick, operand, max_rank
  AddRemoteBuffer,    // ir pick, dtype byte, shape, entries
  AddRemoteVariable,  // ir pick, name, dtype byte, shape, data mode, buffer pick, entry, options mode
  Scope,              // ir pick, which (begin/end sequence, begin/end block), block name pick, device
  DestroyIr,          // ir pick
  CreateSession,      // ir pick, options bytes
  Run,                // session pick, how (sync, with, async), array mutations, callbacks
  WaitRun,            // run pick, timeout byte
  DestroyRun,         // run pick
  ReadVariable,       // session pick, variable pick, size mode
  WriteVariable,      // session pick, variable pick, size mode, data mode
  SessionQuery,       // session pick, which getter, argument bytes
  Checkpoint,         // session pick, save or load, level byte
  Cancel,             // session pick
  DestroySession,     // session pick
  Grouping,           // R, group size, stride, which query, argument
  Count
};

}  // namespace plexus::test
