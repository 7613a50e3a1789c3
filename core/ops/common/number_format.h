// How ops' error messages show a floating-point attribute value, shared by the op families.
#pragma once

#include <sstream>
#include <string>

namespace plexus::ops {

/// `value` as std::ostream's default format prints it ("1e-05", "-0.5", "nan").
inline std::string number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace plexus::ops
