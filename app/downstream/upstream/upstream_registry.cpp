// The gateway's upstreams across reloads (upstream_registry.hpp).
#include "gather/downstream/upstream/upstream_registry.hpp"

namespace gather {

std::vector<std::string> upstream_registry::check(const config& cfg) const {
  std::vector<std::string> out;
  for (const auto& up : cfg.upstreams) {
    if (!up.tls)
      continue;
    std::string error;
    if (!make_endpoint_tls(*up.tls, error))
      out.push_back("upstreams." + up.name + ".tls: " + error);
  }
  return out;
}

upstream_directory upstream_registry::apply(const config& cfg) {
  std::lock_guard<std::mutex> lock(mutex_);
  upstream_directory next;
  for (const auto& up : cfg.upstreams) {
    auto it = tables_.find(up.name);
    if (it == tables_.end()) {
      next.emplace(up.name, std::make_shared<upstream_table>(up, log_));
      continue;
    }
    std::string error; // check() saw it first; a file changed since keeps the settings in force
    it->second->configure(up, error);
    next.emplace(up.name, std::move(it->second));
    tables_.erase(it);
  }
  for (auto& [name, table] : tables_) {
    std::string ignored;
    upstream_config gone;
    gone.name = name;
    table->configure(gone, ignored); // an empty list: every endpoint leaves
  }
  tables_ = next;
  return next;
}

upstream_directory upstream_registry::current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return tables_;
}

} // namespace gather
