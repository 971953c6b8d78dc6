// GET /dashboard (docs/dashboard.md): one self-contained HTML page, inline CSS, JS and SVG, no external
// resources. It polls /metrics and /debug/actors (relative URLs) every second and draws them;
// docs/dashboard.md describes what it shows and how each figure is computed. Its sources are
// app/ops/dashboard/ (index.html, dashboard.css, dashboard.js), inlined and embedded at build time.
#pragma once

#include <string>

namespace gather {

/// The page: index.html with dashboard.css and dashboard.js inlined (the bytes the build embedded).
const std::string& dashboard_html();

/// The Content-Security-Policy sent with the page: inline script and style, fetches to the
/// gateway itself, nothing from anywhere else.
const std::string& dashboard_csp();

} // namespace gather
