#include "strategy_common/outcome.h"

#include <algorithm>
#include <cstring>

namespace plexus::strategy_common {

void write_message(char* message, size_t capacity, const std::string& text) noexcept {
  if (message == nullptr || capacity == 0) return;
  const size_t n = std::min(text.size(), capacity - 1);
  std::memcpy(message, text.data(), n);
  message[n] = '\0';
}

}  // namespace plexus::strategy_common
