// Micro-benchmarks of the two paths fuzz_session_cookie and fuzz_config spend their time in, as
// the servers and `gym` run them: verifying and signing a session cookie (every request of a
// server with sessions), base64url of a 4 KiB value, reading a config file's YAML and typing
// plain scalars. The HMAC cases compare OpenSSL 3's one-shot HMAC(), which SessionCookie used
// before, with the keyed context it duplicates now. Figures: bench/RESULTS.md ("Fuzzing").
#include <benchmark/benchmark.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>
#include <memory>
#include <string>
#include <string_view>

#include "core/yaml_json.h"
#include "http/session_cookie.h"

namespace {

const std::string kKey(64, 'k');
const std::string kCookieName = "MCQAResourcesServer___mcqa";
// What a server signs: the cookie name, '.', the base64url payload of {"session_id": <uuid>}.
const std::string kSignedData =
    kCookieName + ".eyJzZXNzaW9uX2lkIjoiOGQ1ZjQ3ZTItOTZjYi00YjE0LWE1ZWQtM2Y0YjFkYjk3ZjBkIn0";

const gym::http::SessionCookie& cookie() {
  static const gym::http::SessionCookie instance(kCookieName, kKey);
  return instance;
}

void BM_HmacOneShot(benchmark::State& state) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
  unsigned int length = 0;
  for (auto _ : state) {
    HMAC(EVP_sha256(), kKey.data(), static_cast<int>(kKey.size()),
         reinterpret_cast<const unsigned char*>(kSignedData.data()), kSignedData.size(), mac.data(),
         &length);
    benchmark::DoNotOptimize(mac);
  }
}
BENCHMARK(BM_HmacOneShot)->Threads(1)->Threads(2);

void BM_HmacKeyedContextDup(benchmark::State& state) {
  using Ctx = std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)>;
  static const Ctx keyed = [] {
    EVP_MAC* hmac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    Ctx c(EVP_MAC_CTX_new(hmac), &EVP_MAC_CTX_free);
    EVP_MAC_free(hmac);
    char digest[] = "SHA256";
    const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                                 OSSL_PARAM_END};
    EVP_MAC_init(c.get(), reinterpret_cast<const unsigned char*>(kKey.data()), kKey.size(), params);
    return c;
  }();
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
  std::size_t length = 0;
  for (auto _ : state) {
    Ctx ctx(EVP_MAC_CTX_dup(keyed.get()), &EVP_MAC_CTX_free);
    EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(kSignedData.data()),
                   kSignedData.size());
    EVP_MAC_final(ctx.get(), mac.data(), &length, mac.size());
    benchmark::DoNotOptimize(mac);
  }
}
BENCHMARK(BM_HmacKeyedContextDup)->Threads(1)->Threads(2);

void BM_SessionCookieVerify(benchmark::State& state) {
  const std::string value = cookie().sign("8d5f47e2-96cb-4b14-a5ed-3f4b1db97f0d");
  for (auto _ : state) benchmark::DoNotOptimize(cookie().verify(value));
}
BENCHMARK(BM_SessionCookieVerify)->Threads(1)->Threads(2);

void BM_SessionCookieSign(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(cookie().sign("8d5f47e2-96cb-4b14-a5ed"));
}
BENCHMARK(BM_SessionCookieSign);

void BM_Base64UrlDecode4KiB(benchmark::State& state) {
  const std::string encoded = gym::http::base64url_encode(std::string(4096, '\x5a'));
  for (auto _ : state) benchmark::DoNotOptimize(gym::http::base64url_decode(encoded));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(encoded.size()));
}
BENCHMARK(BM_Base64UrlDecode4KiB);

void BM_Base64UrlEncode4KiB(benchmark::State& state) {
  const std::string bytes(4096, '\x5a');
  for (auto _ : state) benchmark::DoNotOptimize(gym::http::base64url_encode(bytes));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes.size()));
}
BENCHMARK(BM_Base64UrlEncode4KiB);

// environments/mcqa/configs/mcqa.yaml plus a policy model block, as `gym` reads it.
constexpr std::string_view kConfig = R"(mcqa:
  resources_servers:
    mcqa:
      entrypoint: app.py
      grading_mode: null
      domain: knowledge
      verified: false
      description: Multi-choice question answering problems
      value: Improve benchmarks like MMLU / GPQA / HLE
mcqa_simple_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server:
        type: resources_servers
        name: mcqa
      model_server:
        type: responses_api_models
        name: policy_model
      datasets:
      - name: example
        type: example
        jsonl_fpath: resources_servers/mcqa/data/example.jsonl
policy_model:
  responses_api_models:
    vllm_model:
      entrypoint: app.py
      base_url: http://127.0.0.1:8000/v1
      api_key: dummy
      model: Qwen/Qwen3-8B
      return_token_id_information: true
      max_retries: 3
      timeout: 1_800.5
)";

void BM_ParseYamlConfig(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(gym::core::parse_yaml(kConfig, "mcqa.yaml"));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(kConfig.size()));
}
BENCHMARK(BM_ParseYamlConfig);

void BM_YamlPlainScalar(benchmark::State& state) {
  constexpr std::array<std::string_view, 8> kScalars = {
      "app.py", "42", "1_800.5", "0x1F", "12:30", "Qwen/Qwen3-8B", "1e-3", "knowledge"};
  for (auto _ : state) {
    for (auto text : kScalars) benchmark::DoNotOptimize(gym::core::yaml_plain_scalar(text));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kScalars.size()));
}
BENCHMARK(BM_YamlPlainScalar);

}  // namespace

BENCHMARK_MAIN();
