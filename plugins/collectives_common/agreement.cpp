#include "collectives_common/agreement.h"

#include <vector>

#include "collectives_common/messages.h"

namespace plexus::collectives {
namespace {

// One field of a call, as text ("100 float32 elements", "op sum", ...).
using Describe = std::string (*)(const CallDescriptor&);

std::string describe_kind(const CallDescriptor& c) {
  return std::string("called ") + collective_name(c.kind);
}
std::string describe_data(const CallDescriptor& c) {
  return "passed " + std::to_string(c.count) + " " + dtype_name(c.dtype) + " elements";
}
std::string describe_op(const CallDescriptor& c) { return "passed op " + op_name(c.op); }
std::string describe_root(const CallDescriptor& c) {
  return "passed root " + std::to_string(c.root);
}
std::string describe_buffers(const CallDescriptor& c) {
  return "passed " + buffer_kind_name(c.buffer_kind);
}

// "replicas 0,2 passed 100 float32 elements, replica 1 passed 99 float32 elements": members
// grouped by the text of the field, in order of first appearance; "" when all agree.
std::string describe_difference(std::span<const int64_t> members,
                                std::span<const CallDescriptor> calls, Describe describe) {
  std::vector<std::string> values;
  std::vector<std::vector<int64_t>> holders;
  for (size_t i = 0; i < calls.size(); ++i) {
    std::string value = describe(calls[i]);
    size_t v = 0;
    while (v < values.size() && values[v] != value) ++v;
    if (v == values.size()) {
      values.push_back(std::move(value));
      holders.emplace_back();
    }
    holders[v].push_back(members[i]);
  }
  if (values.size() == 1) return "";
  std::string text;
  for (size_t v = 0; v < values.size(); ++v) {
    if (v > 0) text += ", ";
    text += format_replicas(holders[v]) + " " + values[v];
  }
  return text;
}

std::vector<Describe> fields_of(Collective kind) {
  if (!moves_data(kind)) return {};
  std::vector<Describe> fields{describe_data};
  if (is_reduction(kind)) fields.push_back(describe_op);
  if (kind == Collective::broadcast) fields.push_back(describe_root);
  fields.push_back(describe_buffers);
  return fields;
}

bool same_fields(Collective kind, const CallDescriptor& a, const CallDescriptor& b) {
  if (a.kind != b.kind) return false;
  if (!moves_data(kind)) return true;
  if (a.count != b.count || a.dtype != b.dtype || a.buffer_kind != b.buffer_kind) return false;
  if (is_reduction(kind) && a.op != b.op) return false;
  if (kind == Collective::broadcast && a.root != b.root) return false;
  return true;
}

}  // namespace

bool calls_agree(std::span<const CallDescriptor> calls) {
  for (size_t i = 1; i < calls.size(); ++i) {
    if (!same_fields(calls[0].kind, calls[0], calls[i])) return false;
  }
  return true;
}

std::string describe_disagreement(std::span<const int64_t> members,
                                  std::span<const CallDescriptor> calls) {
  const std::string kinds = describe_difference(members, calls, describe_kind);
  if (!kinds.empty()) {
    return "mismatched collectives on group " + format_members(members) + ": " + kinds;
  }
  std::string differences;
  for (Describe field : fields_of(calls[0].kind)) {
    const std::string difference = describe_difference(members, calls, field);
    if (difference.empty()) continue;
    if (!differences.empty()) differences += "; ";
    differences += difference;
  }
  if (differences.empty()) return "";
  return call_prefix(calls[0].kind, members) + ": members disagree: " + differences;
}

}  // namespace plexus::collectives
