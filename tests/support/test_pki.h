#pragma once
// Throwaway certificates for https tests, made once per test binary with the openssl CLI under
// the build dir: a CA; a server certificate it signs for localhost and 127.0.0.1; one it signs
// for another host name only; and a second CA that signed none of them (an untrusting store).
#include <string>

namespace gym::test {

struct TestPki {
  std::string ca, other_ca;
  std::string key, cert;              // CN/SAN localhost, 127.0.0.1
  std::string wrong_key, wrong_cert;  // SAN elsewhere.invalid only
  std::string error;                  // why making them failed
};

// `name`: the folder under <build>/tests/integration that holds them (one per test binary).
const TestPki& test_pki(const std::string& name);

}  // namespace gym::test
