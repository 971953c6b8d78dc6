// A self-signed certificate for 127.0.0.1 and its key, made by the openssl command for the tests
// that speak TLS to the gateway.
#pragma once

#include <string>

namespace gather::test {

/// The full path of `name` on $PATH, or "" when it is not there.
std::string find_program(const std::string& name);

/// A self-signed certificate for 127.0.0.1 with its key, and a second key that is not its own,
/// made once per test run with the openssl command in a temporary directory (removed at exit).
struct tls_files {
  std::string dir, cert, key, other_key;

  static const tls_files& get();

private:
  tls_files();
  ~tls_files();
};

} // namespace gather::test
