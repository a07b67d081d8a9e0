#!/usr/bin/env bash
# Installs the Debian packages gym-cpp needs, for one purpose:
#   scripts/setup.sh demo    what building `gym` needs (`make demo`, `make install`)
#   scripts/setup.sh test    + the test suite's libraries and peers (`make test`; the default)
#   scripts/setup.sh bench   + the load-test peers (`make bench`, `make bench-e2e`)
# `--print` lists the profile's packages, one a line, and installs nothing.
# Idempotent: packages already present are skipped, so a second run does no network I/O.
set -euo pipefail

print_only=false
if [[ ${1:-} == --print ]]; then
  print_only=true
  shift
fi
profile=${1:-test}
case "$profile" in
  demo | test | bench) ;;
  *)
    echo "usage: $0 [--print] [demo|test|bench]" >&2
    exit 1
    ;;
esac

packages=(
  # toolchain
  g++ cmake make pkg-config ninja-build
  # libraries; Boost 1.81, never libboost-all-dev (1.74, which conflicts with 1.81)
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev
  libprotobuf-dev protobuf-compiler zlib1g-dev libssl-dev libicu-dev libpcre2-dev
  # the OTLP/gRPC exporter (gRPC is the default protocol): grpc++ through pkg-config; no gRPC code generator is needed
  libgrpc++-dev
  # allocator of the gym binary: glibc malloc spends ~10% of an agent's CPU at 1,000 rollouts in
  # flight (bench/RESULTS.md, end-to-end section)
  libjemalloc-dev
)

if [[ $profile != demo ]]; then
  packages+=(
    # clang-format is Debian 12's version 14, which scripts/format.sh is pinned to (the
    # format_check test of `make test`, and `make format`)
    clang-format
    # tests and micro-benchmarks (`make test` builds bench/ too); the openssl CLI makes the
    # throwaway certificates of the https tests
    libgtest-dev libgmock-dev libbenchmark-dev openssl
    # the short fuzz run of `make test` and `make fuzz`: clang 14 and its runtime libraries, which
    # carry libFuzzer and the sanitizers
    clang libclang-rt-14-dev
    # Prometheus judges of tests/integration/prometheus_test.cpp: the package provides both
    # /usr/bin/prometheus and /usr/bin/promtool; the test starts the binary itself
    prometheus
    # peer of bench/telemetry_bench.cpp (the bench skips those cases without it)
    prometheus-cpp-dev
    curl procps
    # the Python template environment (environments/python_example) that the external-server
    # tests run beside the built-in ones, and the venv they make for it
    python3 python3-fastapi python3-uvicorn python3-yaml python3-itsdangerous python3-venv
    # the `nemo_gym` Python package (python/) and its tests, in a venv made with
    # --system-site-packages: its dependencies come from Debian (aiohttp, PyYAML; omegaconf for
    # callers that pass a DictConfig)
    python3-aiohttp python3-omegaconf
    # the throw-away multi-node Slurm cluster of tests/support/slurm_cluster.sh (the `gym eval
    # submit` tests, label `root`): controller, node daemon, sbatch/srun/scontrol, the munge
    # authentication daemon, and `ip` for the network namespace per node (unshare, nsenter and
    # flock come with util-linux); postinst-started daemons are stopped below
    slurmctld slurmd slurm-client munge iproute2 util-linux
  )
  # Node.js + npm run the OpenTelemetry project's OTLP decoder in tests; the machine image may
  # already carry a newer Node.js than Debian's, which is then kept.
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    packages+=(nodejs npm)
  fi
fi

if [[ $profile == bench ]]; then
  packages+=(
    # load-test peers (bench/): wrk, nginx ceiling, the FastAPI/uvicorn peer (FastAPI and
    # uvicorn come with the test profile) at its fastest
    wrk nginx-light python3-uvloop python3-httptools
    # (the end-to-end peer bench/e2e_peer.py also uses python3-aiohttp, from the test profile)
  )
fi

if $print_only; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup ($profile): all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "setup ($profile): installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

# Some test peers ship a system service that their postinst starts where an init system runs
# (prometheus; munge, and slurmctld/slurmd once /etc/slurm/slurm.conf exists). gym-cpp never needs
# them: tests start their own prometheus on a free port, and tests/support/slurm_cluster.sh its own
# munged, slurmctld and slurmd with private sockets and ports. Stop and disable whichever started.
if [[ $profile != demo ]]; then
  for service in prometheus munge slurmctld slurmd; do
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$service" 2>/dev/null; then
      $sudo systemctl disable --now "$service" >/dev/null 2>&1 || true
    elif [[ -x /etc/init.d/$service ]] && /etc/init.d/"$service" status >/dev/null 2>&1; then
      $sudo /etc/init.d/"$service" stop >/dev/null 2>&1 || true
    fi
  done
fi
echo "setup ($profile): done"
