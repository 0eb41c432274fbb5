#!/usr/bin/env bash
# The Debian package, end to end, as root on a Debian 12 that may be thrown
# away (a fresh chroot: ../shared/tools/fresh-debian tests/deb/check-deb.sh):
# builds it with `make deb` (a lean build: no tests, no benches), removes the
# build tools and their libraries again so that apt must bring the package's
# Depends itself, installs it with apt-get, runs `stallscope doctor --quick`
# and a hooked `run` of a plain Python job from /usr/bin (steps recorded),
# then purges it and checks that no file it installed, nor the byte code its
# postinst wrote, is left. Never on a machine you keep: it installs into /usr.
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "check-deb: needs root (apt-get)"; exit 2; }
[ "${STALLSCOPE_DEB_CHECK_ON_THIS_HOST:-}" = yes ] || [ "${CI:-}" = true ] ||
  { echo "check-deb: installs into /usr; run it in a throw-away Debian (CI=true) or set STALLSCOPE_DEB_CHECK_ON_THIS_HOST=yes"; exit 2; }
cd "$(dirname "$0")/../.."
export DEBIAN_FRONTEND=noninteractive
fail() { echo "check-deb: FAIL: $*"; exit 1; }
step() { echo "== check-deb: $* =="; }

step "make deb"
make deb BUILD=build-deb \
  CMAKE_FLAGS="-DSTALLSCOPE_TESTS=OFF -DSTALLSCOPE_BENCH=OFF -DSTALLSCOPE_LAYER_CHECK=OFF"
deb=$(ls build-deb/stallscope_*_amd64.deb)
dpkg-deb -I "$deb"

step "remove the build tools and the libraries they brought"
apt-get purge -y -qq g++ cmake ninja-build pkg-config libcli11-dev nlohmann-json3-dev libfmt-dev \
  libsqlite3-dev libhwloc-dev rapidjson-dev zlib1g-dev libdeflate-dev liburing-dev libarchive-dev \
  libmicrohttpd-dev openmpi-bin \
  libopenmpi-dev libgtest-dev libgmock-dev libbenchmark-dev python3 dpkg-dev >/dev/null
apt-get autoremove --purge -y -qq >/dev/null
! command -v python3 >/dev/null || fail "python3 is still installed: the Depends check means nothing"

step "apt-get install $deb"
cp "$deb" /tmp/ && apt-get install -y -qq "/tmp/$(basename "$deb")" >/dev/null
[ "$(command -v stallscope)" = /usr/bin/stallscope ] || fail "stallscope is not /usr/bin/stallscope"
command -v python3 >/dev/null || fail "python3 did not come with the package (Depends)"
[ -d /usr/lib/stallscope/python/stallscope/__pycache__ ] || fail "postinst did not byte-compile the hook"
stallscope --version
man_page=/usr/share/man/man1/stallscope.1.gz
[ -s $man_page ] || fail "no man page"
[ -s /usr/share/bash-completion/completions/stallscope ] || fail "no bash completion"
[ -s /usr/share/doc/stallscope/copyright ] || fail "no copyright file"

step "stallscope doctor --quick"
stallscope doctor --quick

step "a hooked run of a plain Python job"
cat > /tmp/deb-check-job.py <<'PY'
import time
import stallscope
assert stallscope.enabled(), "the hook is not active: STALLSCOPE_SOCKET unset"
for epoch in range(2):
    stallscope.epoch(epoch)
    for batch in stallscope.loader(range(25)):
        time.sleep(0.004)
PY
stallscope run --out /tmp/deb-check.db --interval 0.5 -- python3 /tmp/deb-check-job.py
steps=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from steps").fetchone()[0])' /tmp/deb-check.db)
[ "$steps" = 50 ] || fail "the run file holds $steps steps, not the job's 50"
eval "$(stallscope hook-env | sed 's/^/export /')"
[ "$PYTHONPATH" = /usr/lib/stallscope/python ] || fail "hook-env: PYTHONPATH=$PYTHONPATH"
unset PYTHONPATH STALLSCOPE_SOCKET STALLSCOPE_CRC32C

step "apt-get purge stallscope"
dpkg -L stallscope > /tmp/deb-check-files
apt-get purge -y -qq stallscope >/dev/null
left=""
while read -r f; do
  # the directories Debian itself holds (/usr, /usr/share/man, ...) stay
  if [ -e "$f" ] && { [ ! -d "$f" ] || [[ $f == */stallscope* ]]; }; then left+=" $f"; fi
done < /tmp/deb-check-files
[ -z "$left" ] || fail "left behind after purge:$left"
[ ! -e /usr/lib/stallscope ] || fail "/usr/lib/stallscope is left behind: $(find /usr/lib/stallscope)"
echo "check-deb: OK: $(basename "$deb"), $(stat -c %s "$deb") bytes, $steps steps recorded, nothing left after purge"
