// The header names the downstream client leaves out (header_names.hpp).
#include "gather/downstream/call/header_names.hpp"

#include <algorithm>
#include <iterator>

namespace gather {

namespace {

constexpr std::string_view connection_specific[] = {"connection", "keep-alive", "proxy-connection",
                                                    "transfer-encoding", "upgrade", "host"};
constexpr std::string_view other_hop_by_hop[] = {"proxy-authenticate", "proxy-authorization", "te", "trailer"};

bool among(std::string_view name, const std::string_view* first, const std::string_view* last) {
  return std::find(first, last, name) != last;
}

} // namespace

bool is_connection_specific(std::string_view lower_name) {
  return among(lower_name, std::begin(connection_specific), std::end(connection_specific));
}

bool is_hop_by_hop(std::string_view lower_name) {
  return is_connection_specific(lower_name) ||
         among(lower_name, std::begin(other_hop_by_hop), std::end(other_hop_by_hop));
}

} // namespace gather
