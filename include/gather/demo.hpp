// `gather demo`: simulated product-page downstreams served in-process, and a config pointing at them.
#pragma once

#include <memory>
#include <string>

#include "gather/config/config.hpp"

namespace gather {

/// base, price, stock, promo, reviews and shop on one loopback server with an ephemeral port.
/// reviews is slow (answers after its timeout), shop is flaky (every other call 503, then ok on retry
/// or not), stock's items >= 1000 answer 404 so the fallback_from path shows.
class demo_downstreams {
public:
  demo_downstreams();  ///< starts serving
  ~demo_downstreams(); ///< stops and joins
  int port() const;
  /// The demo configuration (a product-page route) as JSON text, pointing at port().
  std::string config_json(const std::string& listen) const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace gather
