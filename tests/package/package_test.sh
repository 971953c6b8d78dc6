#!/usr/bin/env bash
# The Debian package end to end: build it (`--target package`), install it with dpkg, use what it
# installed (the binary, the example /etc/gather/gather.json, gather(1), gather.service), then
# purge it and check that nothing of it is left.
#
#   package_test.sh <cmake> <build dir> <.deb it writes> <version>
#
# It changes the machine (dpkg -i), so it runs only as root, and refuses to touch a machine where
# gather is already installed. Anything that stops it from running exits 77 (ctest: skipped);
# under CI=true every such reason is a failure instead, so CI cannot pass without running it.
set -euo pipefail
cmake=$1 build=$2 deb=$3 version=$4

fail() { echo "FAIL: $*" >&2; exit 1; }
trap 'fail "line $LINENO: $BASH_COMMAND exited $?"' ERR
cannot_run() {
  if [[ ${CI:-} == true ]]; then fail "$* (CI=true: the package test must run)"; fi
  echo "SKIP: $*" >&2
  exit 77
}

[[ $(id -u) == 0 ]] || cannot_run "not root: dpkg -i needs root"
missing=()
for tool in dpkg dpkg-deb dpkg-shlibdeps file help2man systemd-analyze gzip; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
((${#missing[@]} == 0)) || cannot_run "missing ${missing[*]} (apt-get install dpkg-dev file help2man systemd)"
# dpkg's state of the package: empty or not-installed when it is absent.
state() { dpkg-query -W -f='${db:Status-Status}' gather 2>/dev/null || true; }
if [[ ! $(state) =~ ^(not-installed)?$ ]]; then
  cannot_run "a gather package is on this machine ($(state)); this test would replace and purge it"
fi
for path in /usr/bin/gather /etc/gather /lib/systemd/system/gather.service; do
  [[ ! -e $path ]] || cannot_run "$path exists outside the package; this test would remove it"
done

work=$(mktemp -d)
pids=()
installed=0
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
  if ((installed)); then dpkg --purge gather >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "== build the package"
rm -f "$deb"
"$cmake" --build "$build" --target package >"$work/package.log" 2>&1 || {
  cat "$work/package.log" >&2
  fail "cmake --build $build --target package failed"
}
[[ -f $deb ]] || fail "the package target wrote no $deb"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for lib in libc6 libstdc++6 libcaf-core0.17 libcaf-io0.17 libssl3; do
  [[ $depends == *"$lib "* || $depends == *"$lib," || $depends == *"$lib" ]] ||
    fail "Depends lacks $lib (dpkg-shlibdeps did not run?): $depends"
done

echo "== dpkg -i"
installed=1
# A slim image excludes /usr/share/man from every package (dpkg.cfg.d); this package's page is
# included explicitly, so that the test can check it whatever the image.
dpkg --path-include=/usr/share/man/man1/gather.1.gz -i "$deb" || fail "dpkg -i $deb failed"
dpkg-query -W -f='${Conffiles}\n' gather | grep -q '^ /etc/gather/gather.json ' ||
  fail "/etc/gather/gather.json is not a conffile: $(dpkg-query -W -f='${Conffiles}' gather)"

echo "== the installed binary and its example configuration"
[[ $(/usr/bin/gather --version) == "gather $version" ]] ||
  fail "/usr/bin/gather --version: $(/usr/bin/gather --version)"
/usr/bin/gather check --config /etc/gather/gather.json || fail "the example configuration does not pass gather check"
# The unit's own ExecStartPre, as systemd would run it.
pre=$(sed -n 's/^ExecStartPre=//p' /lib/systemd/system/gather.service)
[[ $pre == "/usr/bin/gather check --config /etc/gather/gather.json" ]] || fail "ExecStartPre is: $pre"
$pre >/dev/null || fail "ExecStartPre fails: $pre"

echo "== the example route answers"
# The example's "gateway" section reads the gateway's own /healthz on 127.0.0.1:8080. Here the
# port is free-chosen: gateway A serves the installed file as it is, gateway B a copy whose
# section points at A, so B's /status exercises the example route unchanged but for the port.
start_gateway() { # start_gateway <config> <name>: starts it on 127.0.0.1:0, sets $port
  /usr/bin/gather serve --config "$1" --listen 127.0.0.1:0 >"$work/$2.out" 2>"$work/$2.err" &
  pids+=($!)
  port=""
  for ((i = 0; i < 200; i++)); do # polls its first line for up to 20 s
    port=$(sed -n 's|^listening on http://127.0.0.1:\([0-9]*\)$|\1|p' "$work/$2.out" 2>/dev/null || true)
    [[ -n $port ]] && return
    kill -0 "${pids[-1]}" 2>/dev/null || fail "gateway $2 exited: $(cat "$work/$2.err")"
    sleep 0.1
  done
  fail "gateway $2 printed no 'listening on' line in 20 s"
}
# The example's admin listener (/metrics, /debug/actors, /dashboard) is on 127.0.0.1:9901: each
# gateway here gets a free port for it instead, printed as "admin listening on http://H:P".
grep -q '"admin": {"listen": "127.0.0.1:9901"}' /etc/gather/gather.json || fail "the example has no admin listener"
sed 's|"127.0.0.1:9901"|"127.0.0.1:0"|' /etc/gather/gather.json >"$work/a.json"
start_gateway "$work/a.json" a
port_a=$port
admin_a=""
for ((i = 0; i < 100; i++)); do # its second line follows the first at once
  admin_a=$(sed -n 's|^admin listening on http://127.0.0.1:\([0-9]*\)$|\1|p' "$work/a.out")
  [[ -n $admin_a ]] && break
  sleep 0.1
done
[[ -n $admin_a ]] || fail "gateway a printed no 'admin listening on' line"
get_status() { # get_status <port> <path>: the status line's code
  timeout 10 bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$1"'
    printf "GET '"$2"' HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" >&3
    head -n 1 <&3' | cut -d' ' -f2
}
[[ $(get_status "$admin_a" /metrics) == 200 ]] || fail "/metrics does not answer on the admin port"
[[ $(get_status "$port_a" /metrics) == 404 ]] || fail "/metrics answers on the public port"
sed "s|http://127.0.0.1:8080/healthz|http://127.0.0.1:$port_a/healthz|" "$work/a.json" >"$work/b.json"
grep -q "127.0.0.1:$port_a/healthz" "$work/b.json" || fail "the example has no section on /healthz any more"
start_gateway "$work/b.json" b
response=$(timeout 10 bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$port"'
  printf "GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" >&3
  cat <&3') || fail "GET /status on gateway b: no answer"
echo "$response" | tail -n 1
[[ $response == "HTTP/1.1 200 OK"* ]] || fail "GET /status: $response"
[[ $response == *'"gateway":{"status":"ok","source":"live"'* ]] || fail "the gateway section is not ok: $response"

echo "== gather(1)"
man=/usr/share/man/man1/gather.1.gz
[[ -f $man ]] || fail "$man is not installed"
[[ $(dpkg -S "$man") == "gather: $man" ]] || fail "$man does not belong to the package"
page=$(gzip -dc "$man")
[[ $page == *'.TH GATHER "1"'*"gather $version"* ]] || fail "$man has no .TH line for gather $version"
[[ $page == *'gather serve'*'\-\-config'* ]] || fail "$man does not describe gather serve --config"

echo "== gather.service"
unit=/lib/systemd/system/gather.service
for line in "ExecStart=/usr/bin/gather serve --config /etc/gather/gather.json" \
  'ExecReload=/bin/kill -HUP $MAINPID' DynamicUser=yes NoNewPrivileges=yes \
  ProtectSystem=strict Restart=on-failure; do
  grep -qxF "$line" "$unit" || fail "$unit lacks the line $line"
done
# systemd is not PID 1 in a container; verify works there offline. --man=no: it would run
# man(1) for Documentation= (man-db is not installed everywhere; the page is checked above).
# verify exits 0 on a key it cannot parse (it only warns), so any output is a failure.
verify() { systemd-analyze verify --man=no "$1" 2>&1; }
out=$(verify "$unit") || fail "systemd-analyze verify $unit: $out"
[[ -z $out ]] || fail "systemd-analyze verify $unit reports: $out"
# The check can fail: the same unit with a misspelt value must be reported.
mkdir "$work/broken"
sed 's/^Restart=on-failure$/Restart=on-falure/' "$unit" >"$work/broken/gather.service"
out=$(verify "$work/broken/gather.service") || true
[[ $out == *on-falure* ]] || fail "systemd-analyze verify does not report a bad Restart= (got: $out)"

echo "== dpkg --purge"
for pid in "${pids[@]}"; do kill "$pid" && wait "$pid" || true; done
pids=()
dpkg --purge gather || fail "dpkg --purge gather failed"
installed=0
[[ $(state) =~ ^(not-installed)?$ ]] || fail "gather is still known to dpkg: $(state)"
for path in /usr/bin/gather /etc/gather "$unit" "$man"; do
  [[ ! -e $path ]] || fail "$path is left after dpkg --purge"
done
echo "ok: $deb installs, serves its example, verifies, and purges cleanly"
