#include "gather/front/query_string.hpp"

#include "gather/config/url_template.hpp"

namespace gather {

std::multimap<std::string, std::string> parse_query(std::string_view query) {
  std::multimap<std::string, std::string> out;
  const auto decode = [](std::string_view text) {
    std::string spaced(text);
    for (auto& c : spaced)
      if (c == '+')
        c = ' ';
    return percent_decode(spaced);
  };
  while (!query.empty()) {
    const auto amp = query.find('&');
    const auto pair = query.substr(0, amp);
    if (!pair.empty()) {
      const auto eq = pair.find('=');
      out.emplace(decode(pair.substr(0, eq)),
                  eq == std::string_view::npos ? std::string{} : decode(pair.substr(eq + 1)));
    }
    if (amp == std::string_view::npos)
      break;
    query.remove_prefix(amp + 1);
  }
  return out;
}

} // namespace gather
