#include "http/message.h"
#include "http/session_cookie.h"

#include <gtest/gtest.h>
#include <openssl/hmac.h>

#include <regex>
#include <thread>
#include <vector>

using namespace gym::http;

TEST(RoutingPath, StripsRolloutPrefixAndQuery) {
  EXPECT_EQ(routing_path("/verify"), "/verify");
  EXPECT_EQ(routing_path("/verify?x=1"), "/verify");
  EXPECT_EQ(routing_path("/ng-rollout/r1/verify"), "/verify");
  EXPECT_EQ(routing_path("/ng-rollout/r1/training-token-capture/v1/responses"), "/v1/responses");
  EXPECT_EQ(routing_path("/ng-rollout/r1/"), "/");
  EXPECT_EQ(routing_path("/ng-rollout/"), "/ng-rollout/");  // no id: nothing to strip
}

// Header names compare case-insensitively in ASCII only: every pair of byte values, against the
// definition (equal after mapping 'A'-'Z' onto 'a'-'z'), and at every position of a longer name.
TEST(TraceHeaders, FirstTraceparentAndRepeatedListsJoined) {
  const std::vector<Header> headers{
      {"Content-Type", "application/json"},
      {"TraceParent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
      {"tracestate", "a=1"},
      {"Connection", "keep-alive"},  // as long as tracestate, not it
      {"traceparent", "00-11111111111111111111111111111111-2222222222222222-01"},
      {"TRACESTATE", "b=2,c=3"},
      {"baggage", "user=7"},
      {"tracestatex", "d=4"}};
  TraceHeaders in;
  find_trace_headers(headers, in);
  EXPECT_EQ(in.traceparent, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  EXPECT_EQ(in.tracestate, "a=1,b=2,c=3");
  EXPECT_EQ(in.baggage, "user=7");  // one header: a view of it, nothing joined
  EXPECT_TRUE(in.joined_baggage.empty());

  TraceHeaders none;
  find_trace_headers({{"Host", "x"}, {"User-Agent", "y"}}, none);
  EXPECT_TRUE(none.traceparent.empty() && none.tracestate.empty() && none.baggage.empty());
}

TEST(Iequals, FoldsAsciiLettersAndNothingElse) {
  const auto fold = [](int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; };
  for (int x = 0; x < 256; ++x) {
    for (int y = 0; y < 256; ++y) {
      const char a = static_cast<char>(x), b = static_cast<char>(y);
      const bool expected = fold(x) == fold(y);
      ASSERT_EQ(iequals(std::string_view(&a, 1), std::string_view(&b, 1)), expected)
          << x << " " << y;
      std::string left = "Trace-Parent", right = "trace-parent";
      left[5] = a;
      right[5] = b;
      ASSERT_EQ(iequals(left, right), expected) << x << " " << y;
    }
  }
  EXPECT_FALSE(iequals("traceparent", "traceparen"));
  EXPECT_TRUE(iequals("", ""));
}

TEST(Cookies, ParsesCookieHeader) {
  auto c = parse_cookie_header("a=1; b=\"two\";  c = 3;junk");
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0], (std::pair<std::string, std::string>{"a", "1"}));
  EXPECT_EQ(c[1].second, "two");
  EXPECT_EQ(c[2].first, "c");
}

TEST(SessionCookie, SignsAndVerifies) {
  const std::string key = new_session_key();
  EXPECT_EQ(key.size(), 64u);
  EXPECT_NE(key, new_session_key());
  SessionCookie s("MCQAResourcesServer___mcqa", key);
  auto id = new_uuid4();
  EXPECT_TRUE(std::regex_match(
      id, std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")));
  auto value = s.sign(id);
  EXPECT_EQ(s.verify(value), id);
  // The deployment's key: another worker of the same deployment accepts it.
  EXPECT_EQ(SessionCookie("MCQAResourcesServer___mcqa", key).verify(value), id);
  // A cookie signed with the public cookie name as the key (upstream's scheme: anyone can make
  // one) or with another deployment's key is refused.
  EXPECT_FALSE(SessionCookie("MCQAResourcesServer___mcqa", new_session_key()).verify(value));
  EXPECT_FALSE(
      s.verify(SessionCookie("MCQAResourcesServer___mcqa", "MCQAResourcesServer___mcqa").sign(id)));
  // One key per deployment, but another server's cookie is no session here.
  EXPECT_FALSE(SessionCookie("MCQAResourcesServer___other", key).verify(value));
  auto tampered = value;
  tampered.back() = tampered.back() == 'A' ? 'B' : 'A';
  EXPECT_FALSE(s.verify(tampered));
  EXPECT_FALSE(s.verify("garbage"));
  EXPECT_FALSE(s.verify(""));
  EXPECT_EQ(s.set_cookie_header(id), "MCQAResourcesServer___mcqa=" + value +
                                         "; Path=/; Max-Age=1209600; HttpOnly; SameSite=lax");
}

TEST(SessionCookie, SignedButInvalidSessionIdsAreRefused) {
  SessionCookie s("X___x", new_session_key());
  for (const char* bad : {"", ".", "..", "../etc/passwd", "a/b", "a\nb", "tab\there", "\x01"})
    EXPECT_FALSE(s.verify(s.sign(bad))) << bad;
  EXPECT_FALSE(s.verify(s.sign(std::string(129, 'a'))));
  EXPECT_TRUE(s.verify(s.sign(std::string(128, 'a'))));
  EXPECT_TRUE(s.verify(s.sign("session-1.2_a:b")));
  EXPECT_TRUE(is_valid_session_id(new_uuid4()));
}

// The signature is HMAC-SHA256 of "<name>.<payload>" under the key, byte for byte what OpenSSL's
// one-shot HMAC() gives, whatever the key length (empty, short, longer than a SHA-256 block).
TEST(SessionCookie, SignatureIsHmacSha256OfNameAndPayload) {
  const std::string name = "MCQAResourcesServer___mcqa";
  for (const std::string& key :
       {std::string(), std::string("k"), new_session_key(), std::string(200, 'x')}) {
    const std::string value = SessionCookie(name, key).sign("abc");
    const std::string payload = value.substr(0, value.find('.'));
    EXPECT_EQ(base64url_decode(payload), R"({"session_id":"abc"})");
    const std::string data = name + "." + payload;
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &length);
    EXPECT_EQ(value.substr(value.find('.') + 1),
              base64url_encode(std::string_view(reinterpret_cast<const char*>(mac), length)))
        << key.size();
  }
}

// Servers verify from several threads with one SessionCookie (and its copies).
TEST(SessionCookie, VerifiesFromManyThreadsAtOnce) {
  const SessionCookie s("X___x", new_session_key());
  const SessionCookie copy = s;
  std::vector<std::string> ids;
  for (int i = 0; i < 8; ++i) ids.push_back(new_uuid4());
  std::vector<int> verified(ids.size(), 0);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < ids.size(); ++t) {
    threads.emplace_back([&, t] {
      const SessionCookie& mine = t % 2 ? s : copy;
      for (int i = 0; i < 200; ++i) {
        verified[t] += mine.verify(mine.sign(ids[t])) == ids[t];
        verified[t] -= static_cast<bool>(mine.verify(mine.sign(ids[t]) + "x"));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int count : verified) EXPECT_EQ(count, 200);
}

TEST(Base64Url, DecodesTheUrlAlphabetOnlyAndStopsAtPadding) {
  EXPECT_EQ(base64url_decode("Zm9vYg"), "foob");
  EXPECT_EQ(base64url_decode("Zm9vYg==ignored!"), "foob");
  EXPECT_EQ(base64url_decode("Z"), "");  // 6 bits: no whole byte
  EXPECT_EQ(base64url_decode("-_8"), "\xfb\xff");
  EXPECT_FALSE(base64url_decode("+/8"));  // the standard alphabet's characters
  EXPECT_FALSE(base64url_decode("Zm9v Yg"));
  EXPECT_FALSE(base64url_decode(std::string("Zm\0v", 4)));
}

TEST(Base64Url, RoundTrips) {
  for (std::string s : {"", "f", "fo", "foo", "foob", "fooba", "foobar", "\xff\xfe\x00"}) {
    EXPECT_EQ(base64url_decode(base64url_encode(s)), s);
  }
  EXPECT_EQ(base64url_encode("\xfb\xff"), "-_8");
}
