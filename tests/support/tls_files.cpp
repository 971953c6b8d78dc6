#include "support/tls_files.hpp"

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include <unistd.h>

#include "support/child_process.hpp"

namespace gather::test {

std::string find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs{path ? path : "/usr/bin:/bin"};
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0)
      return dir + "/" + name;
  return {};
}

const tls_files& tls_files::get() {
  static tls_files files;
  return files;
}

tls_files::tls_files() {
  const std::string openssl = find_program("openssl");
  if (openssl.empty())
    throw std::runtime_error("the openssl command is not on PATH");
  std::string pattern = (std::filesystem::temp_directory_path() / "gather-front-tls-XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    throw std::runtime_error("mkdtemp failed");
  dir = pattern;
  cert = dir + "/cert.pem";
  key = dir + "/key.pem";
  other_key = dir + "/other-key.pem";
  auto made = run(openssl, {"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out",
                            cert, "-days", "1", "-subj", "/CN=127.0.0.1", "-addext",
                            "subjectAltName=IP:127.0.0.1"});
  if (made.code != 0)
    throw std::runtime_error("openssl req failed: " + made.err);
  auto other = run(openssl, {"genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                             "-out", other_key});
  if (other.code != 0)
    throw std::runtime_error("openssl genpkey failed: " + other.err);
}

tls_files::~tls_files() {
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

} // namespace gather::test
