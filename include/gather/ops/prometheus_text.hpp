// Pieces of the Prometheus text format 0.0.4 that every family's writer shares (metrics.cpp,
// upstream_report.cpp).
#pragma once

#include <string>

namespace gather {

/// A family's "# HELP" and "# TYPE" lines.
void write_family_header(std::string& out, const char* name, const char* type, const char* help);

} // namespace gather
