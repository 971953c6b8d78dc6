// `gather demo`: simulated product-page downstreams served in-process, and a config pointing at them.
#pragma once

#include <memory>
#include <string>

#include "gather/config/config.hpp"

namespace gather {

/// base, price, stock, promo, reviews, shop and orders on one loopback server with an ephemeral
/// port, and a carrier port that refuses connections. reviews is slow (answers after its timeout),
/// shop is flaky (every third call 503, a retry recovers), stock's items >= 1000 answer 404 so the
/// fallback_from path shows, items that are not numbers answer 404 (a missing product), promo
/// answers per X-Tenant, orders "slow-*" take 250 ms and "stuck-*" hang.
class demo_downstreams {
public:
  demo_downstreams();  ///< starts serving
  ~demo_downstreams(); ///< stops and joins
  int port() const;
  /// The demo configuration (a product-page route) as JSON text, pointing at port().
  std::string config_json(const std::string& listen) const;
  /// What `gather demo` prints after its listening line: the examples to try, each a curl line
  /// with `{base}` standing for http://host:port, and the progressive page's address (on port()).
  std::string banner() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace gather
