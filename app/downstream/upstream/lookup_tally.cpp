#include "upstream/lookup_tally.hpp"

namespace gather {

namespace {

/// A log line names at most this many of a lookup's problems, then how many more there were: an
/// SRV answer of a thousand failing targets makes one line, not a megabyte.
constexpr std::size_t named_problems = 3;

std::string listed(const std::vector<std::string>& items) {
  std::string text;
  for (std::size_t i = 0; i < items.size() && i < named_problems; ++i)
    text += (i ? "; " : "") + items[i];
  if (items.size() > named_problems)
    text += "; and " + std::to_string(items.size() - named_problems) + " more";
  return text;
}

} // namespace

lookup_tally::lookup_tally(std::string subject, std::size_t max_endpoints)
    : subject_(std::move(subject)), max_(max_endpoints == 0 ? 1 : max_endpoints) {}

void lookup_tally::found(const std::string& name, const std::vector<std::string>& addresses,
                         std::uint16_t port, std::uint32_t weight) {
  for (const auto& address : addresses) {
    key k{address, port};
    if (kept_.count(k))
      continue;
    if (kept_.size() == max_) {
      ++cut_;
      if (!(k < kept_.rbegin()->first))
        continue;
      kept_.erase(std::prev(kept_.end()));
    }
    kept_.emplace(std::move(k), found_endpoint{address, port, weight, name});
  }
}

void lookup_tally::nothing(const std::string& name, const std::string& why) {
  nothings_.push_back(name + ": " + why);
}

void lookup_tally::failed(const std::string& name, const std::string& why) {
  failures_.push_back(name + ": " + why);
}

void lookup_tally::note(std::string what) { notes_.push_back(std::move(what)); }

lookup_answer lookup_tally::finish() const {
  lookup_answer answer;
  if (!failures_.empty()) {
    answer.result = lookup_result::error;
    answer.detail = subject_ + " failed: " + listed(failures_);
  } else if (kept_.empty()) {
    answer.result = lookup_result::empty;
    answer.detail = subject_ + " found no endpoint";
    if (!nothings_.empty())
      answer.detail += ": " + listed(nothings_);
  } else {
    answer.result = lookup_result::ok;
    answer.endpoints.reserve(kept_.size());
    for (const auto& [k, endpoint] : kept_)
      answer.endpoints.push_back(endpoint);
    answer.detail = subject_ + ": " + std::to_string(kept_.size()) + " endpoint" +
                    (kept_.size() == 1 ? "" : "s");
    if (cut_ > 0)
      answer.detail += ", cut from " + std::to_string(kept_.size() + cut_) + " (max_endpoints " +
                       std::to_string(max_) + ": the lowest addresses kept)";
    if (!nothings_.empty())
      answer.detail += "; without address: " + listed(nothings_);
  }
  if (!notes_.empty())
    answer.detail += "; " + listed(notes_);
  return answer;
}

} // namespace gather
