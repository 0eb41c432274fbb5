#!/usr/bin/env bash
# Installs the Debian packages stallscope needs, and only the missing ones. As
# root it runs apt-get; otherwise it prints the exact line to run and exits 1.
#   scripts/setup.sh build   what building needs (`make doctor`)
#   scripts/setup.sh [test]  that, and what the tests run against (`make test`)
#   scripts/setup.sh bench   that, and the peer tools only the benches use
#                            (`make bench`: hyperfine, wrk, node_exporter, ...)
#   scripts/setup.sh deb     what building needs, and dpkg-shlibdeps (`make deb`)
# so CI and a fresh Debian 12 box need nothing else, and `make doctor` on a
# user's host installs no servers. Debian starts some packages' services on
# install (prometheus on :9090, sshd on :22, munge and Slurm's daemons): the tests use only their binaries, so a
# service this script installed is stopped and disabled again.
set -euo pipefail
mode=${1:-test}
case "$mode" in
  build | test | bench | deb) ;;
  *) echo "usage: $0 [build|test|bench|deb]" >&2; exit 2 ;;
esac

packages=(
  # build
  g++ cmake ninja-build pkg-config make
  libcli11-dev nlohmann-json3-dev libfmt-dev libsqlite3-dev libhwloc-dev
  # profiler traces: RapidJSON's SAX reader, zlib for `.json.gz` streamed and
  # libdeflate for those inflated whole
  rapidjson-dev zlib1g-dev libdeflate-dev
  # storage: io_uring for `bench io`, libarchive for WebDataset tar shards
  liburing-dev libarchive-dev
  # the exporter's HTTP server (with GnuTLS for TLS) and bcrypt for basic auth
  libmicrohttpd-dev libcrypt-dev
  # the MPI plugin of `bench allreduce` and `cluster` (mpirun in tests)
  openmpi-bin libopenmpi-dev
  # the unit tests and benchmarks are part of the build
  libgtest-dev libgmock-dev libbenchmark-dev python3
)
test_packages=(
  # the sanitizer build and the fuzzers; clang-format for the format check
  clang libclang-rt-14-dev clang-format
  # a real PyTorch job (CPU) for the run/report end-to-end tests
  python3-torch
  # classic tools the tests compare against
  procps iproute2 sysstat fio tar ethtool
  # a real protobuf decoder for the packed tf.train.Example records
  python3-protobuf
  # the peer tool bench/net_vs_iperf3.sh measures `net probe` against
  iperf3
  # the exporter's tests: promtool and a real Prometheus scraping it; curl
  # against TLS with a certificate openssl makes and a hash `htpasswd -B` makes
  prometheus curl openssl apache2-utils
  # the rules' tests write promtool's unit-test files and read the dashboard
  python3-yaml
  # the HTML report's test renders the page in headless Chromium
  chromium
  # the package's test builds the .deb (dpkg-shlibdeps) and reads it back
  dpkg-dev
  # a real network file system for the dataset/doctor tests: an sshfs mount of
  # an sshd the test starts in a network namespace, with its own config
  sshfs openssh-server
  # a real Slurm for the prolog/epilog tests: the test starts its own munged,
  # slurmctld and slurmd on free ports with a private slurm.conf
  slurmd slurmctld slurm-client munge
)
deb_packages=(
  # `make deb`: CPack's DEB generator asks dpkg-shlibdeps for the Depends
  dpkg-dev
)

bench_packages=(
  # the peer tools the bench/ scripts time stallscope against, and their timers:
  # hyperfine (doctor_quick, dataset_walk, pack_vs_tar, nccl_log_vs_grep),
  # GNU time's peak RSS, curl and node_exporter (exporter_scrape), the sqlite3
  # shell (report_scale), wrk to load the exporter by hand
  # (`wrk -c 64 -d 10s http://127.0.0.1:9400/metrics`)
  hyperfine time wrk curl sqlite3 prometheus-node-exporter
)

case "$mode" in
  test) packages+=("${test_packages[@]}") ;;
  bench) packages+=("${test_packages[@]}" "${bench_packages[@]}") ;;
  deb) packages+=("${deb_packages[@]}") ;;
esac
services=(prometheus prometheus-node-exporter ssh munge slurmd slurmctld)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

line="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "stallscope needs these Debian packages; run as root:" >&2
  echo "  apt-get update && $line" >&2
  exit 1
fi

echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

# Services a package started on install, only those this run installed.
if [ -d /run/systemd/system ]; then
  for svc in "${services[@]}"; do
    if [[ " ${missing[*]} " == *" $svc "* ]]; then
      systemctl disable --now "$svc" >/dev/null 2>&1 || true
    fi
  done
fi
