// What an origin's https server chose by ALPN, remembered a while (origin_pool.hpp).
#include "gather/downstream/pool/origin_pool.hpp"

namespace gather {

const char* to_string(origin_protocol protocol) {
  switch (protocol) {
    case origin_protocol::unknown: return "unknown";
    case origin_protocol::h1: return "h1";
    case origin_protocol::h2: return "h2";
  }
  return "?";
}

origin_protocol protocol_memory::of(const std::string& key, clock::time_point now) {
  auto it = known_.find(key);
  if (it == known_.end())
    return origin_protocol::unknown;
  if (now < it->second.until)
    return it->second.protocol;
  known_.erase(it); // asked again from now on
  return origin_protocol::unknown;
}

void protocol_memory::chose(const std::string& key, origin_protocol protocol, clock::time_point now) {
  if (protocol == origin_protocol::unknown || memory_.count() <= 0) {
    known_.erase(key);
    return;
  }
  known_[key] = answer{protocol, now + memory_};
}

} // namespace gather
