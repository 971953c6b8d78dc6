// What the two halves of an upstream's table share (upstream_table.cpp: who is in it, its
// settings and views; upstream_balancer.cpp: the pick, a call's end, ejection). Private to
// app/downstream/.
#pragma once

#include <string>
#include <vector>

#include "gather/downstream/upstream/upstream_table.hpp"

namespace gather {

/// An immutable snapshot of the endpoints in rotation (not leaving), read by picks without a lock.
struct upstream_table::endpoint_set {
  std::vector<std::shared_ptr<upstream_endpoint>> members;
  /// Smooth weighted round robin (nginx's): member indices in the order the weights give, one
  /// turn of it as long as the weights' sum. A pick walks it from a shared counter.
  std::vector<std::uint16_t> schedule;
};

/// What a reload changes and a new target is built from.
struct upstream_table::settings {
  std::shared_ptr<const endpoint_tls> tls; ///< null without `tls`
  std::string tls_tag;
  std::string server_name;                 ///< the explicit one; "" : each endpoint's own name
  link_bounds bounds;
  bool literal = false;                    ///< an `endpoints` list of IP literals only
};

/// Steady-clock nanoseconds now: what ejected_until holds.
inline std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}


} // namespace gather
