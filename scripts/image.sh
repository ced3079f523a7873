#!/usr/bin/env bash
# Builds the container image of the Containerfile with buildah, without a Docker
# daemon, and runs it: `hookinbox version` must name this checkout, and the README's
# quick start must work from the image on SQLite (the example config, a signed
# invoice.paid answered `processed`, the same again `duplicate`, /healthz and
# /readyz, a graceful stop on SIGTERM), served as the image's non-root user.
#
#   ./scripts/image.sh                                  # localhost/hookinbox:<git describe>
#   IMAGE=registry.example.com/hookinbox:v1 ./scripts/image.sh
#
# The binary is built by the host's Go (CGO_ENABLED=0: the SQLite driver is pure Go)
# and copied in; see the Containerfile for why. buildah runs as root here, with the
# vfs storage driver (no overlay module or fuse needed) and chroot isolation (no
# user namespaces, and the host's network: serve listens on a free port of
# 127.0.0.1). The image stays in buildah's storage for `buildah push`.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS

if ! command -v buildah >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing buildah" >&2
    apt-get install -y buildah >/dev/null 2>&1 \
      || { apt-get update >/dev/null 2>&1 && apt-get install -y buildah >/dev/null 2>&1; } || true
  fi
  if ! command -v buildah >/dev/null; then
    echo "buildah is not installed and could not be installed here. On Debian or Ubuntu, as root:" >&2
    echo "  apt-get install -y buildah" >&2
    exit 1
  fi
fi
certs=/etc/ssl/certs/ca-certificates.crt
if [ ! -s "$certs" ]; then
  echo "no CA bundle at $certs for the image. On Debian or Ubuntu, as root:" >&2
  echo "  apt-get install -y ca-certificates" >&2
  exit 1
fi

bh=(buildah --storage-driver vfs)
version=$(git describe --always --dirty 2>/dev/null || echo devel)
image=${IMAGE:-localhost/hookinbox:$version}
ctx=$(mktemp -d /tmp/hookinbox-image.XXXXXX)
ctr="" serve_pid=""
cleanup() {
  if [ -n "$serve_pid" ] && kill -0 "$serve_pid" 2>/dev/null; then
    kill "$serve_pid" 2>/dev/null || true
    wait "$serve_pid" 2>/dev/null || true
  fi
  if [ -n "$ctr" ]; then "${bh[@]}" rm "$ctr" >/dev/null 2>&1 || true; fi
  rm -rf "$ctx"
}
trap cleanup EXIT
fail() {
  echo "image.sh: $*" >&2
  if [ -s "$ctx/serve.log" ]; then echo "serve's log:" >&2 && cat "$ctx/serve.log" >&2; fi
  exit 1
}

# The build context (see the Containerfile).
t=$SECONDS
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.buildVersion=$version" -o "$ctx/hookinbox" ./cmd/hookinbox
build_s=$((SECONDS - t))
cp "$certs" "$ctx/ca-certificates.crt"
echo 'hookinbox:x:65532:65532:hookinbox:/var/lib/hookinbox:/sbin/nologin' >"$ctx/passwd"
echo 'hookinbox:x:65532:' >"$ctx/group"
mkdir "$ctx/data"

t=$SECONDS
old=$("${bh[@]}" images --quiet --no-trunc "$image" 2>/dev/null || true)
"${bh[@]}" bud --quiet --file Containerfile --tag "$image" "$ctx" >/dev/null
new=$("${bh[@]}" images --quiet --no-trunc "$image")
# The image this tag named before, unless something else still uses it.
if [ -n "$old" ] && [ "$old" != "$new" ]; then "${bh[@]}" rmi "$old" >/dev/null 2>&1 || true; fi
bud_s=$((SECONDS - t))
config=$("${bh[@]}" inspect --type image --format '{{.OCIv1.Config.User}} {{.OCIv1.Config.Entrypoint}}' "$image")
[ "$config" = '65532:65532 [/hookinbox]' ] || fail "image config is \"$config\", want user 65532:65532 and entrypoint [\"/hookinbox\"]"
echo "built $image ($("${bh[@]}" images --format '{{.Size}}' "$image" | head -1), binary in ${build_s}s, image in ${bud_s}s)"

ctr=$("${bh[@]}" from --name "hookinbox-image-$$" "$image")
run() { "${bh[@]}" run --isolation chroot "$@"; }

out=$(run "$ctr" -- /hookinbox version)
echo "$out" | sed 's/^/  /'
[ "$(echo "$out" | head -1)" = "hookinbox $version" ] || fail "version says \"$(echo "$out" | head -1)\", want \"hookinbox $version\""

# The quick start, from the image: the example config mounted where a Kubernetes
# ConfigMap would be; the SQLite file in the image's working directory.
run -v "$PWD/examples/hookinbox.yaml:/etc/hookinbox/hookinbox.yaml:ro" -e STRIPE_WEBHOOK_SECRET=whsec_dev "$ctr" -- \
  /hookinbox serve --config /etc/hookinbox/hookinbox.yaml --listen 127.0.0.1:0 >"$ctx/serve.log" 2>&1 &
serve_pid=$!
addr=""
for _ in $(seq 600); do
  addr=$(grep -o '"msg":"hookinbox: listening","addr":"[^"]*"' "$ctx/serve.log" | cut -d'"' -f8 || true)
  [ -n "$addr" ] && break
  kill -0 "$serve_pid" 2>/dev/null || fail "serve exited before listening"
  sleep 0.1
done
[ -n "$addr" ] || fail "serve did not listen within 60 s"
grep -q '"file":"/var/lib/hookinbox/hookinbox.db"' "$ctx/serve.log" || fail "serve did not open /var/lib/hookinbox/hookinbox.db"

# buildah runs serve under a runtime process of its own; the hookinbox process among
# its descendants is the one to check and to stop (buildah would kill it, not pass
# SIGTERM on).
descendants() { local p; for p in $(ps -o pid= --ppid "$1"); do echo "$p"; descendants "$p"; done; }
hookinbox_pid=""
for p in $(descendants "$serve_pid"); do
  if [ "$(ps -o comm= -p "$p")" = hookinbox ]; then hookinbox_pid=$p; fi
done
[ -n "$hookinbox_pid" ] || fail "no hookinbox process under buildah run"
uid=$(ps -o uid= -p "$hookinbox_pid" | tr -d ' ')
[ "$uid" = 65532 ] || fail "serve runs as uid $uid, want 65532"

send() {
  run -e STRIPE_WEBHOOK_SECRET=whsec_dev "$ctr" -- /hookinbox send --url "http://$addr/webhooks/stripe" \
    --secret-env STRIPE_WEBHOOK_SECRET --id evt_image_1 --invoice in_image_1
}
first=$(send) || fail "send: $first"
second=$(send) || fail "send: $second"
echo "  $first" && echo "  $second"
[ "$first" = 'evt_image_1 invoice.paid -> 200 {"outcome":"processed"}' ] || fail "first send: $first"
[ "$second" = 'evt_image_1 invoice.paid -> 200 {"outcome":"duplicate"}' ] || fail "second send: $second"
if command -v curl >/dev/null; then
  healthz=$(curl -fsS "http://$addr/healthz") || fail "/healthz: $healthz"
  readyz=$(curl -fsS "http://$addr/readyz") || fail "/readyz: $readyz"
  echo "  /healthz $healthz" && echo "  /readyz $readyz"
  [[ "$readyz" == *'"status":"ready"'* ]] || fail "/readyz: $readyz"
else
  echo "  (no curl: /healthz and /readyz not checked)"
fi
run "$ctr" -- /hookinbox events list | sed 's/^/  /'

kill -TERM "$hookinbox_pid"
code=0
wait "$serve_pid" || code=$?
serve_pid=""
[ "$code" = 0 ] || fail "serve exited $code after SIGTERM, want 0"
grep -q '"msg":"hookinbox: stopped"' "$ctx/serve.log" || fail "serve did not log that it stopped"
echo "image.sh: $image served the quick start as uid 65532 and stopped on SIGTERM; $((SECONDS - started))s in all"
