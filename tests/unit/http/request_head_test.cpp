// request_head writes the request line and header block by hand; Beast's own serializer, given
// the same fields, is the reference for the bytes.
#include "http/client_exchange.h"

#include <gtest/gtest.h>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http.hpp>

#include <string>

namespace gym::http {
namespace {
namespace bhttp = boost::beast::http;

Url url(std::string host = "127.0.0.1", std::string port = "8000",
        std::string target = "/v1/responses") {
  return Url{false, std::move(host), std::move(port), std::move(target)};
}

// The head Beast writes for `req` set up field by field (set: a later field replaces an earlier
// one of the same name) and prepared with prepare_payload.
std::string beast_head(bhttp::request<bhttp::string_body>& req) {
  req.prepare_payload();
  bhttp::request_serializer<bhttp::string_body> serializer(req);
  serializer.split(true);
  std::string out;
  boost::system::error_code ec;
  while (!serializer.is_header_done()) {
    serializer.next(ec, [&](boost::system::error_code&, const auto& buffers) {
      out += boost::beast::buffers_to_string(buffers);
      serializer.consume(boost::asio::buffer_size(buffers));
    });
    EXPECT_FALSE(ec) << ec.message();
  }
  return out;
}

TEST(RequestHead, PostWithBodyHeadersAndCookiesMatchesBeast) {
  ClientRequest req;
  req.headers = {{"Authorization", "Bearer k"},
                 {"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}};
  req.cookies = {{"session", "abc"}, {"other", "1"}};
  bhttp::request<bhttp::string_body> ref{bhttp::verb::post, "/v1/responses", 11};
  ref.set(bhttp::field::host, "127.0.0.1:8000");
  ref.set(bhttp::field::content_type, "application/json");
  ref.set("Authorization", "Bearer k");
  ref.set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  ref.set(bhttp::field::cookie, "session=abc; other=1");
  ref.body() = std::string(17, 'x');
  EXPECT_EQ(request_head(url(), req, Method::post, 17), beast_head(ref));
}

TEST(RequestHead, EmptyBodiesGetALengthOnlyWhereBeastWritesOne) {
  for (auto [method, verb] :
       {std::pair{Method::get, bhttp::verb::get}, std::pair{Method::head, bhttp::verb::head},
        std::pair{Method::post, bhttp::verb::post}, std::pair{Method::put, bhttp::verb::put},
        std::pair{Method::del, bhttp::verb::delete_},
        std::pair{Method::options, bhttp::verb::options}}) {
    bhttp::request<bhttp::string_body> ref{verb, "/health?x=1", 11};
    ref.set(bhttp::field::host, "localhost:80");
    EXPECT_EQ(request_head(url("localhost", "80", "/health?x=1"), {}, method, 0), beast_head(ref))
        << to_string(method);
  }
}

TEST(RequestHead, ALaterHeaderReplacesAnEarlierOneHostAndContentTypeIncluded) {
  ClientRequest req;
  req.headers = {
      {"X-A", "1"},       {"content-type", "text/plain"}, {"Host", "api.example"},
      {"x-a", "2"},       {"Content-Length", "999"},      {"Transfer-Encoding", "chunked"},
      {"Cookie", "old=1"}};
  req.cookies = {{"session", "s"}};
  bhttp::request<bhttp::string_body> ref{bhttp::verb::post, "/run", 11};
  ref.set(bhttp::field::host, "127.0.0.1:8000");
  ref.set(bhttp::field::content_type, "application/json");
  for (const auto& h : req.headers)
    if (h.name != "Content-Length" && h.name != "Transfer-Encoding") ref.set(h.name, h.value);
  ref.set(bhttp::field::cookie, "session=s");
  ref.body() = "{}";
  EXPECT_EQ(request_head(url("127.0.0.1", "8000", "/run"), req, Method::post, 2), beast_head(ref));
}

TEST(RequestHead, AnIpv6HostIsBracketed) {
  const std::string head = request_head(url("::1", "9000", "/"), {}, Method::get, 0);
  EXPECT_EQ(head, "GET / HTTP/1.1\r\nHost: [::1]:9000\r\n\r\n");
}

TEST(RequestHead, ALineBreakInAHeaderOrCookieIsRefusedNotSent) {
  for (const auto& [name, value] :
       {std::pair<std::string, std::string>{"X-Evil", "a\r\nHost: other"},
        {"X-Evil", std::string("a\nb")},
        {"X\r\nY", "v"},
        {"", "v"},
        {"X:Y", "v"}}) {
    ClientRequest req;
    req.headers = {{name, value}};
    EXPECT_THROW(request_head(url(), req, Method::post, 2), RequestError) << name << value;
  }
  ClientRequest req;
  req.cookies = {{"session", "a\r\nX: y"}};
  EXPECT_THROW(request_head(url(), req, Method::post, 2), RequestError);
}

TEST(RequestHead, APropagatedContextReplacesTheCallersTraceHeaders) {
  telemetry::TraceContext trace;
  trace.span =
      *telemetry::parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  trace.span.trace_state = "vendor=1";
  trace.baggage = "user=alice";
  ClientRequest req;
  req.headers = {{"TraceParent", "00-11111111111111111111111111111111-2222222222222222-00"},
                 {"tracestate", "old=1"},
                 {"Baggage", "old=2"},
                 {"X-Keep", "1"}};
  const std::string head = request_head(url(), req, Method::post, 2, &trace);
  EXPECT_EQ(head,
            "POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n"
            "Content-Type: application/json\r\nX-Keep: 1\r\n"
            "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n"
            "tracestate: vendor=1\r\nbaggage: user=alice\r\nContent-Length: 2\r\n\r\n");

  // Without tracestate or baggage of its own, the caller's are sent as they are.
  trace.span.trace_state.clear();
  trace.baggage.clear();
  trace.span.sampled = false;
  const std::string plain = request_head(url(), req, Method::post, 2, &trace);
  EXPECT_NE(plain.find("tracestate: old=1\r\n"), std::string::npos);
  EXPECT_NE(plain.find("Baggage: old=2\r\n"), std::string::npos);
  EXPECT_NE(plain.find("traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00\r\n"),
            std::string::npos);
  EXPECT_EQ(plain.find("TraceParent"), std::string::npos);
}

}  // namespace
}  // namespace gym::http
