// Trace and span ids as strings, for comparing and printing in tests.
#pragma once

#include <string>

#include "gather/values/trace_context.hpp"

namespace gather::test {

inline std::string text(const trace_id_hex& id) { return {id.begin(), id.end()}; }
inline std::string text(const span_id_hex& id) { return {id.begin(), id.end()}; }

} // namespace gather::test
