// Inbound TLS: the server-side OpenSSL context made from the config's certificate and key.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <boost/asio/ssl/context.hpp>

#include "gather/config/config.hpp"

namespace gather {

/// What is wrong with `tls`'s files, one problem a line with its JSON path (as `gather check`
/// prints them); empty when the certificate and key load and belong together.
std::vector<std::string> tls_problems(const tls_config& tls);

/// A TLS 1.2+ server context. Throws std::runtime_error with tls_problems()' text when it cannot.
std::unique_ptr<boost::asio::ssl::context> make_tls_context(const tls_config& tls);

} // namespace gather
