// Fuzzes the downstream client's own URL split (include/gather/downstream/call/url_split.hpp), the one
// that decides where a call connects and what it sends as Host and target.
// Input: the URL. Invariants for a URL it accepts: the scheme decides TLS; the host is not empty,
// and neither it nor the Host header holds a '/', '?' or '@'; the port is 1..65535 in digits
// (80 or 443 when none was written); the target starts with '/'; the pool key is
// scheme://host:port; and scheme + Host header + target give back the URL (a target that began
// with '?' gained its '/'). A URL with user info or without an http(s) scheme is refused.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.hpp"
#include "gather/downstream/call/url_split.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string url(reinterpret_cast<const char*>(data), size);
  const auto split = gather::split_url(url);
  const bool http = url.rfind("http://", 0) == 0, https = url.rfind("https://", 0) == 0;
  if (!http && !https) {
    FUZZ_CHECK(!split);
    return 0;
  }
  if (!split)
    return 0;
  FUZZ_CHECK(split->origin != nullptr);
  const std::string scheme = split->origin->tls ? "https://" : "http://";
  FUZZ_CHECK(split->origin->tls == https);
  FUZZ_CHECK(!split->origin->host.empty());
  FUZZ_CHECK(split->origin->host_header.find_first_of("/?@") == std::string::npos);
  FUZZ_CHECK(split->origin->host.find_first_of("/?@") == std::string::npos);
  FUZZ_CHECK(!split->origin->port.empty() && split->origin->port.size() <= 5);
  for (char c : split->origin->port)
    FUZZ_CHECK(c >= '0' && c <= '9');
  const long port = std::stol(split->origin->port);
  FUZZ_CHECK(port >= 1 && port <= 65535);
  FUZZ_CHECK(!split->target.empty() && split->target[0] == '/');
  FUZZ_CHECK(split->origin->key == scheme + split->origin->host + ":" + split->origin->port);
  const std::string rebuilt = scheme + split->origin->host_header + split->target;
  const std::string after = url.substr(scheme.size() + split->origin->host_header.size());
  FUZZ_CHECK(rebuilt == url || (after.empty() && split->target == "/") ||
             (!after.empty() && after[0] == '?' && split->target == "/" + after));
  // The host is the authority without its port (and without the brackets of an IPv6 literal).
  const bool bracketed = !split->origin->host_header.empty() && split->origin->host_header[0] == '[';
  FUZZ_CHECK(split->origin->host_header.rfind(bracketed ? "[" + split->origin->host + "]" : split->origin->host, 0) == 0);
  return 0;
}
