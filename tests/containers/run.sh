#!/usr/bin/env bash
# make test-containers: build the images and run the compose stack for real, the way
# deploy/README.md ("Build without a registry") tells an operator, then check what it serves
# (tests/containers/stack_checks.py). Debian 12 x86_64 as root (it installs Debian packages and
# starts a Docker daemon); about 6 minutes on 2 cores after `make setup` (measured 5 min).
#
# Isolation: a private dockerd (its own socket, data root and exec root in one temporary
# folder) without a default bridge, iptables rules or IP forwarding, so a Docker daemon already
# on the machine and the machine's network settings are left alone; image builds therefore use
# the host's network (--network=host), and the stack its own compose network. Published ports
# are free ones, and the tree is built from a copy, so the checkout's deploy/.env is never
# touched. On exit, also on failure or Ctrl-C, everything started is stopped and removed: make
# serve, the stack, the daemon (its containers, networks, volumes, images and layer cache), the
# bridges it made, the temporary folder. Nothing is cached between runs but pip's and
# fetch_models' caches: every run is a cold build on an empty daemon, then a warm one.
# DEBIAN_MIRROR is passed on to deploy/standins/build.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$PWD"
PYTHON="$ROOT/.venv/bin/python"
# Debian's docker (20.10) and docker-compose, ahead of any other client on PATH (a newer static
# docker without its buildx plugin cannot build with BuildKit).
export PATH="/usr/sbin:/usr/bin:/sbin:/bin:$PATH"
export DOCKER_BUILDKIT=1

TEST_STARTED=$SECONDS
WORK="$(mktemp -d /tmp/ocr-containers.XXXXXX)"
FIGURES="$WORK/figures.txt"
: >"$FIGURES"
DOCKERD_PID=""
SERVE_PID=""
STANDINS_PID=""
COMPOSE=(docker-compose -f deploy/docker-compose.yml -f deploy/docker-compose.cpu.yml)
BRIDGES_BEFORE="$(ip -o link show type bridge 2>/dev/null | awk -F': ' '{print $2}' | sort)"

say() { printf '\n=== %s\n' "$*"; }
figure() { printf '%-44s %s\n' "$1" "$2" | tee -a "$FIGURES"; }
die() { echo "error: $*" >&2; exit 1; }

# --- clean-up, on every exit -------------------------------------------------------------
alive() {  # PID: the process runs (a child that exited stays a zombie until waited for)
    [ -r "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status"
}
stop_group() {  # PID (a child started with setsid): SIGTERM its group, SIGKILL after 60 s
    local pid="$1" watchdog
    kill -TERM -- "-$pid" 2>/dev/null
    (sleep 60; kill -KILL -- "-$pid" 2>/dev/null) &
    watchdog=$!
    wait "$pid" 2>/dev/null || true         # its exit status is the signal's
    kill "$watchdog" 2>/dev/null || true
    wait "$watchdog" 2>/dev/null || true
}
cleanup() {
    local status=$?
    trap - EXIT INT TERM HUP
    set +e
    say "clean-up"
    [ -n "$SERVE_PID" ] && stop_group "$SERVE_PID"
    [ -n "$STANDINS_PID" ] && stop_group "$STANDINS_PID"
    if [ -n "$DOCKERD_PID" ] && alive "$DOCKERD_PID"; then
        if [ -d "$WORK/src" ] && [ -n "$(docker ps -aq 2>/dev/null)" ]; then
            (cd "$WORK/src" && "${COMPOSE[@]}" down -v --timeout 20 >/dev/null 2>&1)
        fi
        kill -TERM "$DOCKERD_PID"
        for _ in $(seq 60); do alive "$DOCKERD_PID" || break; sleep 1; done
        kill -KILL "$DOCKERD_PID" 2>/dev/null
        wait "$DOCKERD_PID" 2>/dev/null
    fi
    # What a daemon that did not stop cleanly can leave: mounts under its roots, its bridges.
    grep -o " $WORK[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null
    comm -13 <(echo "$BRIDGES_BEFORE") \
        <(ip -o link show type bridge 2>/dev/null | awk -F': ' '{print $2}' | sort) \
        | xargs -r -n1 ip link delete 2>/dev/null
    local figures
    figures="$(cat "$FIGURES" 2>/dev/null)"
    rm -rf "$WORK"
    echo "removed $WORK; the private Docker daemon is stopped"
    if [ -n "$figures" ]; then say "figures (2 shared cores: timings are noisy)"; echo "$figures"; fi
    if [ "$status" = 0 ]; then echo "make test-containers: passed"; else
        echo "make test-containers: FAILED (exit $status)" >&2; fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

free_ports() {  # N free TCP ports of this machine
    "$PYTHON" - "$1" <<'EOF'
import socket, sys
sockets = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in sockets:
    s.bind(("0.0.0.0", 0))
print(" ".join(str(s.getsockname()[1]) for s in sockets))
EOF
}
wait_for() {  # SECONDS PID DESCRIPTION COMMAND...: until COMMAND succeeds, while PID runs
    local deadline=$((SECONDS + $1)) pid="$2" what="$3"
    shift 3
    until "$@" >/dev/null 2>&1; do
        alive "$pid" || { echo "$what: the process exited" >&2; return 1; }
        [ "$SECONDS" -lt "$deadline" ] || { echo "$what: not within the time allowed" >&2; return 1; }
        sleep 1
    done
}
set_env() {  # KEY VALUE: set KEY in deploy/.env (the line .env.example has, else a new one)
    if grep -q "^$1=" deploy/.env; then
        sed -i "s|^$1=.*|$1=$2|" deploy/.env
    else
        echo "$1=$2" >>deploy/.env
    fi
}

# --- 1. what the host needs ---------------------------------------------------------------
say "Debian packages: docker.io, docker-compose, mmdebstrap"
missing=()
for package in docker.io docker-compose mmdebstrap; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
    [ "$(id -u)" = 0 ] || die "installing ${missing[*]} needs root: apt-get install ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
fi
[ "$(id -u)" = 0 ] || die "the container test starts a Docker daemon: run it as root"
docker --version
docker-compose --version

# --- 2. the private Docker daemon ---------------------------------------------------------
say "private dockerd in $WORK/docker"
mkdir -p "$WORK/docker"
export DOCKER_HOST="unix://$WORK/docker/docker.sock"
setsid dockerd --data-root "$WORK/docker/data" --exec-root "$WORK/docker/exec" \
    -H "$DOCKER_HOST" --pidfile "$WORK/docker/dockerd.pid" \
    --bridge=none --iptables=false --ip-forward=false >"$WORK/docker/dockerd.log" 2>&1 &
DOCKERD_PID=$!
started=$SECONDS
until docker info >/dev/null 2>&1; do
    alive "$DOCKERD_PID" || { tail -20 "$WORK/docker/dockerd.log" >&2; die "dockerd exited"; }
    [ $((SECONDS - started)) -lt 60 ] || die "dockerd did not answer within 60 s"
    sleep 0.5
done
figure "dockerd ready" "$((SECONDS - started)) s"

# --- 3. the reference: what make serve answers to the curl it prints ----------------------
# Started now, it gets ready while the images build; its answer is read before the stack
# starts, and it is stopped then.
say "make serve (the reference answer), in the background"
# The virtualenv is up to date before make serve and make wheelhouse run at once (each would
# reinstall it otherwise, into the same folder).
make --no-print-directory .venv/.installed
read -r SERVE_HTTP SERVE_GRPC SERVE_TRITON_HTTP SERVE_TRITON_METRICS SERVE_METRICS \
    <<<"$(free_ports 5)"
# make serve reuses the engines' compiled models and precision decisions that make test left
# in the same folder (ocr_embedded.stack.engine_cache_dir, when it ran first, as in .ci/run):
# timing them again would take minutes of the same 2 cores the image builds use.
HTTP_PORT=$SERVE_HTTP TRITON_GRPC_PORT=$SERVE_GRPC TRITON_HTTP_PORT=$SERVE_TRITON_HTTP \
    TRITON_METRICS_PORT=$SERVE_TRITON_METRICS METRICS_PORT=$SERVE_METRICS \
    setsid make serve >"$WORK/make-serve.log" 2>&1 </dev/null &
SERVE_PID=$!
SERVE_STARTED=$SECONDS

# --- 4. the runbook, "Build without a registry" -------------------------------------------
# Step 1: the wheelhouse (the venv's versions: what make test tested).
say "make wheelhouse"
started=$SECONDS
make --no-print-directory wheelhouse
figure "make wheelhouse" "$((SECONDS - started)) s"

# The checkout as a fresh clone after `make setup` has it: the files git tracks or would add,
# and what make setup and make wheelhouse made (hard links: the weights, the INT8 CRAFT, the
# wheels).
mkdir -p "$WORK/src"
git ls-files -z --cached --others --exclude-standard \
    | tar --null --files-from=- --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C "$WORK/src"
git ls-files -z --others --ignored --exclude-standard triton_models/repository deploy/wheelhouse \
    | grep -zv __pycache__ | xargs -0 cp --link --parents --target-directory="$WORK/src"
cd "$WORK/src"

# Step 2: the stand-in bases. The Python one first (both images need it); PostgreSQL's,
# nginx's and Redis's build meanwhile, in the background (the stack needs them only to start).
say "stand-in bases (deploy/standins/build.sh)"
started=$SECONDS
deploy/standins/build.sh python
figure "stand-ins: debian + python" "$((SECONDS - started)) s"
setsid deploy/standins/build.sh postgres nginx redis >"$WORK/standins.log" 2>&1 &
STANDINS_PID=$!
STANDINS_STARTED=$SECONDS

# Step 3: the two images (cold: an empty layer cache), then again (warm: nothing changed).
build_gateway() {
    docker build --network=host -f deploy/Dockerfile.gateway \
        --build-arg PYTHON_IMAGE=ocr-standin/python:3.11-slim-bookworm \
        --build-arg PIP_NO_INDEX=1 -t ocr-gateway:latest .
}
build_triton() {
    docker build --network=host -f deploy/Dockerfile.triton --build-arg FLAVOUR=cpu \
        --build-arg PYTHON_IMAGE=ocr-standin/python:3.11-slim-bookworm \
        --build-arg PIP_NO_INDEX=1 -t ocr-triton:latest-cpu .
}
for image in gateway triton; do
    say "build ocr-$image (cold)"
    started=$SECONDS
    "build_$image" >"$WORK/build-$image.log" 2>&1 || { tail -40 "$WORK/build-$image.log" >&2; die "building ocr-$image failed"; }
    figure "build ocr-$image, cold" "$((SECONDS - started)) s"
done
grep -h "model_int8.xml" "$WORK/build-triton.log" | sed 's/^#[0-9]* [0-9.]* //' || true
for image in gateway triton; do
    started=$SECONDS
    "build_$image" >"$WORK/build-$image-warm.log" 2>&1 || die "rebuilding ocr-$image failed"
    figure "build ocr-$image, warm (nothing changed)" "$((SECONDS - started)) s"
done
reused=$(grep -cE '^#[0-9]+ CACHED' "$WORK/build-triton.log" || true)
megabytes() { docker image inspect -f '{{.Size}}' "$1" | awk '{printf "%.0f MB", $1 / 1e6}'; }
figure "image ocr-gateway:latest" "$(megabytes ocr-gateway:latest)"
weights=$(docker run --rm --network=none --entrypoint du ocr-triton:latest-cpu -sb /models | awk '{printf "%.0f", $1 / 1e6}')
figure "image ocr-triton:latest-cpu" "$(megabytes ocr-triton:latest-cpu), of which ${weights} MB weights (/models)"
figure "cold ocr-triton build: steps reused" "$reused (from the gateway's build: its first steps)"

say "stand-ins for postgres, nginx and redis"
wait "$STANDINS_PID" || { cat "$WORK/standins.log" >&2; die "building the stand-ins failed"; }
STANDINS_PID=""
figure "stand-ins: postgres + nginx + redis (in the background)" "$((SECONDS - STANDINS_STARTED)) s from their start"

# --- the reference answer ------------------------------------------------------------------
say "make serve's answer to the curl it prints"
wait_for 1900 "$SERVE_PID" "make serve ready" grep -q "Gateway ready on" "$WORK/make-serve.log" \
    || { grep -v '^[IWE][0-9]' "$WORK/make-serve.log" | tail -40 >&2; tail -20 "$WORK/make-serve.log" >&2
         die "make serve did not get ready"; }
figure "make serve ready" "$((SECONDS - SERVE_STARTED)) s from its start"
serve_curl="$(grep -m1 "^ *curl -s -H 'Authorization: Api-Key " "$WORK/make-serve.log")"
[ -n "$serve_curl" ] || die "make serve printed no curl line"
(cd "$ROOT" && bash -c "$serve_curl") >"$WORK/make-serve-answer.json"
SERVE_KEY="$(sed -n "s/.*Api-Key \([^']*\)'.*/\1/p" <<<"$serve_curl")"
curl -fsS -H "Authorization: Api-Key $SERVE_KEY" "http://localhost:$SERVE_HTTP/api/models" \
    >"$WORK/make-serve-models.json"
stop_group "$SERVE_PID"
SERVE_PID=""

# Step 4: settings (runbook "First deploy" step 4, with this section's images), on free ports.
say "deploy/.env"
cp deploy/.env.example deploy/.env
set_env DJANGO_SECRET_KEY "$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')"
set_env POSTGRES_PASSWORD "$(openssl rand -hex 24)"
set_env OCR_POSTGRES_IMAGE ocr-standin/postgres:15-bookworm
set_env OCR_PROXY_IMAGE ocr-standin/nginx:bookworm
set_env OCR_REDIS_IMAGE ocr-standin/redis:bookworm
read -r API_PORT METRICS_PORT TRITON_HTTP TRITON_METRICS <<<"$(free_ports 4)"
set_env GATEWAY_PUBLISH "$API_PORT"
set_env GATEWAY_METRICS_PUBLISH "127.0.0.1:$METRICS_PORT"
set_env TRITON_HTTP_PORT "$TRITON_HTTP"
set_env TRITON_METRICS_PORT "$TRITON_METRICS"

# The cpu Triton's engine cache, seeded with this machine's (what make test and make serve
# compiled and measured: ocr_embedded.stack.engine_cache_dir), as the runbook tells an operator
# of identical machines: the stack's first start loads the networks' precision decisions
# instead of timing and checking every precision again (minutes on a slow CPU, the longest
# part of this test). An empty cache seeds nothing: the stack measures for itself.
SEED="$(cd "$ROOT" && "$PYTHON" -c \
    'from ocr_embedded.stack import engine_cache_dir; print(engine_cache_dir())')"
project="$(sed -n 's/^COMPOSE_PROJECT_NAME=//p' deploy/.env)"
docker volume create --label "com.docker.compose.project=$project" \
    --label com.docker.compose.volume=engine-cache "${project}_engine-cache" >/dev/null
if compgen -G "$SEED/*" >/dev/null; then
    say "engine-cache volume, seeded from $SEED"
    # OpenVINO writes its blobs readable by their owner only (0440): copied as root, then given
    # to the image's user, as an operator copying a folder in would.
    docker run --rm --network=none --user 0 --entrypoint sh \
        -v "${project}_engine-cache:/tmp/ocr-engine-cache" -v "$SEED:/seed:ro" \
        ocr-triton:latest-cpu \
        -c 'cp -r /seed/. /tmp/ocr-engine-cache/ && chown -R 10001:10001 /tmp/ocr-engine-cache'
else
    say "engine-cache volume, empty ($SEED has nothing to seed it with)"
fi

# Step 5: start, and wait until every service is healthy (up -d waits for each gate).
say "docker-compose up -d"
started=$SECONDS
"${COMPOSE[@]}" up -d
"${COMPOSE[@]}" ps
figure "stack up, every service healthy" "$((SECONDS - started)) s"

# Step 6: the first API key, with the documented command.
API_KEY="$("${COMPOSE[@]}" exec -T gateway python manage.py create_api_key containers-test \
    --owner "make test-containers" --rate-per-minute 600 | sed -n 's/^API key: //p')"
[ -n "$API_KEY" ] || die "create_api_key printed no key"

# Step 7: the first request, the runbook's curl (make serve's: the same fields, so that the
# answers compare; korean.png's text depends on language=ko where DB detects).
say "the runbook's curl"
curl -s "http://localhost:$API_PORT/api/health"; echo
curl -s "http://localhost:$API_PORT/api/ready"; echo
curl -s -H "Authorization: Api-Key $API_KEY" -F image=@tests/data/images/korean.png \
     -F language=ko "http://localhost:$API_PORT/api/ocr" \
     >"$WORK/stack-answer.json"
curl -fsS -H "Authorization: Api-Key $API_KEY" "http://localhost:$API_PORT/api/models" \
    >"$WORK/stack-models.json"

# --- 5. the checks, ending with docker-compose down -v -------------------------------------
say "checks (tests/containers/stack_checks.py)"
PUBLIC_ADDRESS="$(ip -4 -o route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')"
[ -n "$PUBLIC_ADDRESS" ] || PUBLIC_ADDRESS="$(hostname -I | awk '{print $1}')"
started=$SECONDS
STACK_DIR="$WORK/src" STACK_COMPOSE="${COMPOSE[*]}" STACK_API_PORT="$API_PORT" \
STACK_METRICS_PORT="$METRICS_PORT" STACK_TRITON_HTTP_PORT="$TRITON_HTTP" \
STACK_TRITON_METRICS_PORT="$TRITON_METRICS" STACK_API_KEY="$API_KEY" \
STACK_PUBLIC_ADDRESS="$PUBLIC_ADDRESS" STACK_ANSWERS="$WORK" STACK_FIGURES="$FIGURES" \
    bash -c 'cd "$0" && exec "$1" -m pytest -p no:cacheprovider -q tests/containers/stack_checks.py' \
    "$ROOT" "$PYTHON"
figure "checks" "$((SECONDS - started)) s"
figure "make test-containers, whole" "$((SECONDS - TEST_STARTED)) s"
