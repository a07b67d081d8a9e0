#pragma once
// JSON text exactly as NeMo Gym renders it (docs/design/wire-compatibility.md#json-numbers):
// compact separators, non-ASCII characters unescaped, floats in Python repr form, non-finite floats
// as null.
#include <boost/json/storage_ptr.hpp>
#include <boost/json/value.hpp>

#include <boost/system/error_code.hpp>

#include <string>
#include <string_view>

namespace gym::core {

// Parses one JSON document. Unlike boost::json::parse in Boost 1.81, doubles are read to the
// nearest value (shortest-repr floats written by Python round-trip exactly), so rewards and
// token counts are echoed and aggregated as NeMo Gym computed them. Nesting is limited to 1000
// levels (Python's recursion limit). Sets `ec` (and `*consumed`, the bytes read before the
// error when given) and returns null on error.
// `storage` holds the result's memory (default: the heap); a request-scoped arena avoids one
// allocation per string, array and object.
boost::json::value parse_json(std::string_view text, boost::system::error_code& ec,
                              std::size_t* consumed = nullptr,
                              boost::json::storage_ptr storage = {});
// Throws std::runtime_error naming the problem and its byte offset.
boost::json::value parse_json(std::string_view text);

// Appends the rendering of `v` to `out`. A string that is not valid UTF-8 (bytes of unknown
// encoding, e.g. an endpoint's Latin-1 error page) is written with U+FFFD in place of each byte
// that does not start a valid sequence, as utf8_replace_invalid does: every JSON text gym writes
// (output files, HTTP bodies) is UTF-8 that Python's json reads.
void render_json(const boost::json::value& v, std::string& out);
std::string render_json(const boost::json::value& v);
// Indented like Python's json.dumps(v, indent=N) (", " and ": " separators, empty containers
// as {} and []), with the same scalars as render_json; for files and terminals people read.
// A negative indent gives one line with those separators, like json.dumps(v).
std::string render_json_indented(const boost::json::value& v, int indent);

// bytes.decode("utf-8", errors="replace"): valid sequences are kept, and each byte that does
// not start a valid sequence (overlong forms, surrogates and code points above U+10FFFF are
// invalid) becomes U+FFFD. Unlike Python, a truncated multi-byte sequence gives one U+FFFD per
// byte, not one for the whole sequence.
std::string utf8_replace_invalid(std::string_view bytes);
// Whether `bytes` is valid UTF-8 (what utf8_replace_invalid leaves unchanged).
bool is_valid_utf8(std::string_view bytes);

// A double as Python's repr() writes it (1.0, 0.0001, 1e-05, 1e+16, inf, nan): JSON bodies,
// interpolated strings and child processes then see the same text as under NeMo Gym.
std::string python_float_repr(double d);

}  // namespace gym::core
