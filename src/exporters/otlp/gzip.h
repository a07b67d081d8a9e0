#pragma once
// gzip (RFC 1952) of a request body, for OTEL_EXPORTER_OTLP_COMPRESSION=gzip.
#include <string>
#include <string_view>

namespace gym::exporters {

// Throws std::runtime_error if zlib fails (it does not for in-memory input).
std::string gzip(std::string_view data);

// The inverse, for tests and receivers; throws std::runtime_error on malformed input.
std::string gunzip(std::string_view data);

}  // namespace gym::exporters
