// http(s) URLs parsed and redirects resolved by Boost.URL.
#include "http/url.h"

#include <gtest/gtest.h>

using gym::http::origin_of;
using gym::http::parse_url;
using gym::http::resolve_location;
using gym::http::same_origin;
using gym::http::span_url;

TEST(Url, ParsesHostPortAndTarget) {
  std::string error;
  auto u = parse_url("http://127.0.0.1:8000/v1/responses?x=1", error);
  ASSERT_TRUE(u) << error;
  EXPECT_FALSE(u->tls);
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, "8000");
  EXPECT_EQ(u->target, "/v1/responses?x=1");

  u = parse_url("https://api.example.com", error);
  ASSERT_TRUE(u) << error;
  EXPECT_TRUE(u->tls);
  EXPECT_EQ(u->port, "443");
  EXPECT_EQ(u->target, "/");

  u = parse_url("http://[::1]:9000/x#fragment", error);
  ASSERT_TRUE(u) << error;
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, "9000");
  EXPECT_EQ(u->target, "/x");

  u = parse_url("http://localhost/", error);
  ASSERT_TRUE(u) << error;
  EXPECT_EQ(u->port, "80");
  u = parse_url("https://localhost:/", error);  // an empty port is the default one
  ASSERT_TRUE(u) << error;
  EXPECT_EQ(u->port, "443");
}

TEST(Url, SaysWhyAUrlIsRefused) {
  std::string error;
  EXPECT_FALSE(parse_url("ftp://host/file", error));
  EXPECT_EQ(error,
            "unsupported URL scheme in 'ftp://host/file': only http:// and https:// are "
            "supported");
  EXPECT_FALSE(parse_url("http:///path", error));
  EXPECT_EQ(error, "URL 'http:///path' has no host");
  EXPECT_FALSE(parse_url("localhost:8000 /x", error));
  EXPECT_TRUE(error.starts_with("invalid URL 'localhost:8000 /x': ")) << error;
  EXPECT_FALSE(parse_url("/relative", error));
  EXPECT_TRUE(error.starts_with("invalid URL '/relative': ")) << error;
}

TEST(Url, ResolvesLocationsAgainstTheRequestUrl) {
  const std::string base = "http://127.0.0.1:8000/a/b/redirect?x=1";
  EXPECT_EQ(resolve_location(base, "/echo"), "http://127.0.0.1:8000/echo");
  EXPECT_EQ(resolve_location(base, "echo"), "http://127.0.0.1:8000/a/b/echo");
  EXPECT_EQ(resolve_location(base, "../echo?y=2"), "http://127.0.0.1:8000/a/echo?y=2");
  EXPECT_EQ(resolve_location(base, "https://other:9/z"), "https://other:9/z");
  EXPECT_EQ(resolve_location(base, "//other:9/z"), "http://other:9/z");
  EXPECT_EQ(resolve_location("http://[::1]:9000/a", "/b"), "http://[::1]:9000/b");
  // Not a URI reference: left as it is, so parsing it says why.
  EXPECT_EQ(resolve_location(base, "bad location"), "bad location");
}

TEST(Url, OriginsCompareSchemeHostAndPort) {
  EXPECT_TRUE(same_origin("http://127.0.0.1:8000/a?x=1", "http://127.0.0.1:8000/b"));
  EXPECT_TRUE(same_origin("http://Example.COM/a", "http://example.com:80/b"));  // default port
  EXPECT_TRUE(same_origin("https://h/a", "https://u:p@h:443/b"));
  EXPECT_FALSE(same_origin("http://127.0.0.1:8000/a", "http://127.0.0.1:8001/a"));  // port
  EXPECT_FALSE(same_origin("http://127.0.0.1:8000/a", "http://localhost:8000/a"));  // host
  EXPECT_FALSE(same_origin("http://h/a", "https://h/a"));                           // scheme
  EXPECT_FALSE(same_origin("http://h:443/a", "https://h/a"));
  EXPECT_FALSE(same_origin("http://h/a", "not a url"));
  EXPECT_EQ(origin_of("https://u:p@Api.example.com/v1?key=x"), "https://Api.example.com:443");
  EXPECT_EQ(origin_of("http://[::1]:9/x"), "http://[::1]:9");
}

TEST(Url, SpanUrlsCarryNoCredentials) {
  EXPECT_EQ(span_url("http://user:pass@host:1/v1/chat?api-key=K#f"),
            "http://REDACTED:REDACTED@host:1/v1/chat");
  EXPECT_EQ(span_url("https://tok@host/v1"), "https://REDACTED:REDACTED@host/v1");
  EXPECT_EQ(span_url("http://127.0.0.1:8000/run"), "http://127.0.0.1:8000/run");
}

TEST(Url, RefusalsDoNotRepeatAPassword) {
  std::string error;
  EXPECT_FALSE(parse_url("ftp://u:pw@host/file?token=t", error));
  EXPECT_EQ(error.find("pw@"), std::string::npos) << error;
  EXPECT_EQ(error.find("token=t"), std::string::npos) << error;
}
