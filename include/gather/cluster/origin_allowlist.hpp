// What a cluster node may call (`gather node --allow ORIGIN`, `--allow-any`): a node is never an
// open relay into the network it sits in. Checked for every attempt, on the node.
#pragma once

#include <optional>
#include <set>
#include <string>

namespace gather {

class origin_allowlist {
public:
  /// Any origin (`--allow-any`).
  static origin_allowlist any();
  /// The origins given (`scheme://host:port`), or the problem with the first one that is not one.
  static std::optional<origin_allowlist> of(const std::set<std::string>& origins, std::string& problem);

  /// True when `url`'s origin may be called; when it may not, `origin` is set (for the log).
  bool allows(const std::string& url, std::string& origin) const;

private:
  bool any_ = false;
  std::set<std::string> origins_; ///< as url_origin() spells them
};

} // namespace gather
