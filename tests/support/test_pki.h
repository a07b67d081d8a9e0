#pragma once
// Throwaway certificates for https tests, made once per test binary with the openssl CLI under
// the build dir: a CA; a server certificate it signs for localhost and 127.0.0.1; one it signs
// for another host name only; and a second CA that signed none of those (an untrusting store).
// For mutual TLS: a client certificate the CA signs, and one the second CA signs (a receiver that
// trusts only the CA for clients refuses it).
#include <string>

namespace gym::test {

struct TestPki {
  std::string ca, other_ca;
  std::string key, cert;                            // CN/SAN localhost, 127.0.0.1
  std::string wrong_key, wrong_cert;                // SAN elsewhere.invalid only
  std::string client_key, client_cert;              // clientAuth, CN gym-test-client, by `ca`
  std::string other_client_key, other_client_cert;  // the same by `other_ca`
  std::string error;                                // why making them failed
};

// `name`: the folder under <build>/tests/integration that holds them (one per test binary).
const TestPki& test_pki(const std::string& name);

}  // namespace gym::test
