// GET /dashboard: the page is app/ops/dashboard/index.html with dashboard.css and dashboard.js
// inlined, embedded at build time (cmake/embed_dashboard.cmake writes it as a byte array into a
// generated source of gather_core). It has no external resource. docs/dashboard.md describes the
// figures; tests/ops/dashboard_*_test.cpp loads it in headless Chromium and compares what it drew
// with /metrics, and checks that the page served is the three files inlined.
//
// Rules the script keeps:
// - every text that comes from the gateway (route paths, section names, node addresses, request
//   ids) is inserted as a Text node or an attribute value, never parsed as HTML;
// - every drawn figure carries data-metric (plus data-route / data-section / data-status /
//   data-code / data-node / data-window) and data-value with the unformatted number, so tests
//   and scripts can read it back.
#include "gather/ops/dashboard.hpp"

#include <cstddef>

namespace gather {

namespace dashboard_embedded {
// Defined in the generated dashboard_page.cpp (build directory, generated/).
extern const unsigned char page[];
extern const std::size_t page_size;
} // namespace dashboard_embedded

const std::string& dashboard_html() {
  static const std::string html{reinterpret_cast<const char*>(dashboard_embedded::page),
                                dashboard_embedded::page_size};
  return html;
}

const std::string& dashboard_csp() {
  static const std::string csp{
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; "
    "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"};
  return csp;
}

} // namespace gather
