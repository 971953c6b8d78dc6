// The gateway's upstreams across reloads (docs/upstreams.md): one table per upstream name, kept
// while a configuration names it (its endpoints' state and their connections stay), made for a
// new name, dropped for a name the new configuration lacks (its endpoints leave: their
// connections close when their calls have ended). Each generation holds the tables it names.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gather/config/config.hpp"
#include "gather/downstream/upstream/upstream_table.hpp"

namespace gather {

/// A generation's upstreams by name.
using upstream_directory = std::map<std::string, std::shared_ptr<upstream_table>>;

class upstream_registry {
public:
  explicit upstream_registry(upstream_table::log_sink log = {}) : log_(std::move(log)) {}

  /// What `cfg`'s upstreams would fail on before anything changes: a `tls` whose files are not
  /// a usable CA, certificate or key ("upstreams.NAME.tls: ..."). Empty: apply() will take it.
  std::vector<std::string> check(const config& cfg) const;
  /// The tables of `cfg`'s upstreams, kept, configured anew or made; the others dropped.
  upstream_directory apply(const config& cfg);
  /// Every upstream now, by name.
  upstream_directory current() const;

private:
  upstream_table::log_sink log_;
  mutable std::mutex mutex_;
  upstream_directory tables_;
};

} // namespace gather
