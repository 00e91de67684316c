#!/usr/bin/env bash
# Make the stand-in base images on a Docker host that no registry serves (deploy/README.md,
# "Build without a registry"), from Debian's packages alone:
#
#   ocr-standin/debian:bookworm             Debian 12 minbase: mmdebstrap, then docker import
#   ocr-standin/python:3.11-slim-bookworm   for python:3.11-slim-bookworm (Dockerfile.python)
#   ocr-standin/postgres:15-bookworm        for postgres:16-bookworm (Dockerfile.postgres)
#   ocr-standin/nginx:bookworm              for nginx:1.27-bookworm (Dockerfile.nginx)
#   ocr-standin/redis:bookworm              for redis:7-bookworm (Dockerfile.redis)
#
# Needs root (mmdebstrap's root mode), mmdebstrap, docker with BuildKit (DOCKER_BUILDKIT=1 is
# set here for Docker 20.10), and Debian's mirror over HTTP: DEBIAN_MIRROR, default
# deb.debian.org with bookworm-updates and bookworm-security. The Debian base is made once
# (delete ocr-standin/debian:bookworm to make it again); the others build at once, on the
# host's network (--network=host: with or without the daemon's default bridge), each into a
# log that is shown when it fails.
#
# Usage: deploy/standins/build.sh [python] [postgres] [nginx] [redis]     (default: all four)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export DOCKER_BUILDKIT=1

declare -A tags=([python]=ocr-standin/python:3.11-slim-bookworm
                 [postgres]=ocr-standin/postgres:15-bookworm
                 [nginx]=ocr-standin/nginx:bookworm
                 [redis]=ocr-standin/redis:bookworm)
names=("$@")
[ "${#names[@]}" -gt 0 ] || names=(python postgres nginx redis)
for name in "${names[@]}"; do
    [ -n "${tags[$name]:-}" ] || { echo "unknown stand-in '$name': python, postgres, nginx or redis" >&2; exit 2; }
done

logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT

make_debian_base() {
    # minbase: the Essential packages and apt. merged-usr without the usrmerge package (which
    # pulls in perl). Like Debian's own container images: no manual pages, documentation or
    # translations (the copyright files stay), and apt keeps neither the downloaded packages
    # nor its caches (docker-clean.conf), so a Dockerfile's `rm -rf /var/lib/apt/lists/*`
    # leaves nothing behind.
    local mirror=()
    [ -n "${DEBIAN_MIRROR:-}" ] && mirror=("$DEBIAN_MIRROR")
    if ! mmdebstrap --variant=minbase --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
            --dpkgopt='force-unsafe-io' \
            --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
            --dpkgopt='path-exclude=/usr/share/doc/*' \
            --dpkgopt='path-include=/usr/share/doc/*/copyright' \
            --dpkgopt='path-exclude=/usr/share/locale/*' \
            bookworm "$logs/debian.tar" "${mirror[@]}" >"$logs/mmdebstrap.log" 2>&1; then
        cat "$logs/mmdebstrap.log" >&2
        return 1
    fi
    # Appended to the tarball, not written by a mmdebstrap hook: in mmdebstrap's root mode apt
    # runs outside the chroot, so this configuration's clean-up commands would run on the host.
    mkdir -p "$logs/add/etc/apt/apt.conf.d"
    cp "$here/docker-clean.conf" "$logs/add/etc/apt/apt.conf.d/docker-clean"
    tar --append --file="$logs/debian.tar" --owner=0 --group=0 --mode=0644 -C "$logs/add" \
        ./etc/apt/apt.conf.d/docker-clean
    docker import --change 'CMD ["bash"]' "$logs/debian.tar" ocr-standin/debian:bookworm >/dev/null
    rm -f "$logs/debian.tar"
}

started=$SECONDS
if docker image inspect ocr-standin/debian:bookworm >/dev/null 2>&1; then
    echo "ocr-standin/debian:bookworm: present"
else
    make_debian_base
    echo "ocr-standin/debian:bookworm: $((SECONDS - started)) s (mmdebstrap + docker import)"
fi

declare -A builds=()
started=$SECONDS
for name in "${names[@]}"; do
    docker build --quiet --network=host -f "$here/Dockerfile.$name" -t "${tags[$name]}" \
        "$here" >"$logs/$name.log" 2>&1 &
    builds[$name]=$!
done
failed=0
built=()
for name in "${names[@]}"; do
    if wait "${builds[$name]}"; then
        built+=("${tags[$name]}")
    else
        echo "building ${tags[$name]} failed:" >&2
        cat "$logs/$name.log" >&2
        failed=1
    fi
done
[ "$failed" = 0 ] || exit 1
echo "${built[*]}: $((SECONDS - started)) s (built at once)"
