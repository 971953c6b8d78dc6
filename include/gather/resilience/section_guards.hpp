// Every route section's guard and every downstream host:port's retry budget, built once from a
// config. Addresses never change once built, so workers hold plain pointers into it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gather/config/config.hpp"
#include "gather/resilience/section_guard.hpp"

namespace gather {

class section_guards {
public:
  explicit section_guards(const config& cfg);

  section_guard& section(std::size_t route, std::size_t index) { return *sections_[route][index]; }
  /// The budget of a batch route's host:port (also shared with sections calling it).
  retry_budget& batch_budget(std::size_t route) { return *batch_budgets_[route]; }

private:
  /// By host:port, or one per upstream for a URL that names one.
  retry_budget& budget_for(const config& cfg, const std::string& url);

  retry_budget_policy policy_;
  std::map<std::string, std::unique_ptr<retry_budget>> budgets_; ///< by host:port
  std::vector<std::vector<std::unique_ptr<section_guard>>> sections_;
  std::vector<retry_budget*> batch_budgets_; ///< per route; null for aggregate routes
};

/// "host:port" of a URL ("http://a.b/x" -> "a.b:80"); the text before the path when unparsable.
std::string origin_of(const std::string& url);

} // namespace gather
