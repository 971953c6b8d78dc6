// What one lookup of an endpoint_watch gathers while its queries answer, and the lookup_answer it
// comes to (endpoint_lookup.hpp). Pure: no socket, no clock.
//
// Bounded whatever the answers hold: at most `max_endpoints` endpoints are ever kept, the lowest
// by (address, port), so a cut answer keeps the same endpoints whatever order the server lists
// them in (DNS servers rotate their records) and the upstream's set does not churn on each refresh.
// The same address and port found twice (two names, two records) is one endpoint, the first found.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gather/downstream/upstream/endpoint_lookup.hpp"

namespace gather {

class lookup_tally {
public:
  /// `subject`: what the log line names ("dns library.test", "srv _grpc._tcp.library.test").
  lookup_tally(std::string subject, std::size_t max_endpoints);

  /// The addresses one name answered, each an endpoint of `port` and `weight`.
  void found(const std::string& name, const std::vector<std::string>& addresses, std::uint16_t port,
             std::uint32_t weight);
  /// A name that does not exist or has no address: it contributes nothing.
  void nothing(const std::string& name, const std::string& why);
  /// A query that failed (timeout, server failure, refused): the whole lookup is an error, so the
  /// upstream keeps its last good set rather than losing that name's endpoints for one refresh.
  void failed(const std::string& name, const std::string& why);
  /// Something the answer said that the lookup left out (an SRV target skipped, targets cut).
  void note(std::string what);

  /// The answer: error if any query failed, else ok with what was kept, else empty.
  lookup_answer finish() const;

private:
  using key = std::pair<std::string, std::uint16_t>;
  std::string subject_;
  std::size_t max_;
  std::map<key, found_endpoint> kept_; ///< at most max_, the lowest keys of all found
  std::size_t cut_ = 0;                ///< endpoints dropped to stay within max_
  std::vector<std::string> failures_, nothings_, notes_;
};

} // namespace gather
