// The HTTP client's response path without sockets: arbitrary bytes, as a server might send them,
// go through ResponseReader (http/response_reader.h), the parser the client's exchange and the
// orchestrator's probes read every answer with, in pieces as reads deliver them, the unconsumed
// rest passed again as the exchange does. Any bytes must end in a response, a clear failure or a
// wait for more: never a crash, and never more buffered than the limits allow.
#include "http/response_reader.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

// Small limits so the fuzzer reaches the body, header and chunk-line bounds with small inputs.
constexpr std::uint64_t kMaxBodyBytes = 4096;
constexpr std::size_t kMaxHeadBytes = 1024;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // The first byte shapes the reads: how many bytes each delivers, and whether the request was a
  // HEAD (a response with headers only).
  const std::size_t read_size = 1 + (data[0] & 0x3f);
  const bool head_request = (data[0] & 0x40) != 0;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  // Keep-alive: several responses may follow each other, as on one connection.
  std::string pending;  // received, not consumed: what the connection's buffer holds
  while (true) {
    gym::http::ResponseReader reader({kMaxBodyBytes, kMaxHeadBytes}, head_request);
    while (!reader.done() && !reader.failed()) {
      if (bytes.empty()) {
        // The rest of what was received: consumed like any read, so a keep-alive response in it
        // is not parsed again by the next reader.
        pending.erase(0, reader.put(pending));
        if (!reader.done() && !reader.failed()) reader.put_eof();  // the server closed
        break;
      }
      const std::string_view read = bytes.substr(0, read_size);
      bytes.remove_prefix(read.size());
      pending.append(read);
      pending.erase(0, reader.put(pending));
      // What stays unparsed is bounded by the head limit (plus the one read that overran it).
      if (!reader.failed() && pending.size() > kMaxHeadBytes + read_size) std::abort();
    }
    if (reader.failed()) {
      (void)reader.describe("http://fuzz/x", "fuzz");
      return 0;
    }
    if (!reader.done()) return 0;
    const bool again = reader.keep_alive();
    const gym::http::ClientResponse response = reader.take();
    if (response.status < 100 || response.status > 999) std::abort();
    if (!head_request && response.body.size() > kMaxBodyBytes) std::abort();
    if (!again || (bytes.empty() && pending.empty())) return 0;
  }
}
