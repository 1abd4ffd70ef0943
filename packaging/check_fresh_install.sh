#!/usr/bin/env bash
# Proves the README's set-up on a pristine Debian 12: a minbase root made by debootstrap gets a
# copy of the committed tree and runs, with chroot,
#   1. the README's test command   (bash scripts/setup.sh test: installs, builds, every test),
#   2. the README's app command    (bash scripts/setup.sh app ...: --version and a headless
#                                   screenshot of one card),
#   3. builds the .deb there, then installs it with apt-get into a second pristine root and runs
#      the installed app.
# A developer machine's hand-installed packages cannot leak in: only debootstrap's own output is
# cached (a tarball of the minbase root, never a root with the project's packages in it).
#
# Usage: packaging/check_fresh_install.sh [OUT_DIR]
#   OUT_DIR (default build-fresh) receives the logs, the .deb and the screenshots.
# Environment: PD_FRESH_CACHE  where the minbase tarball is kept (default
#                              /var/cache/paralleldeck/bookworm-minbase.tar)
#              PD_FRESH_WORK   where the roots are made (default /var/tmp/paralleldeck-fresh)
# Needs root (debootstrap, mount, chroot) and the network to the machine's Debian mirror.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$repo/build-fresh}" && cd "${1:-$repo/build-fresh}" && pwd)
cache=${PD_FRESH_CACHE:-/var/cache/paralleldeck/bookworm-minbase.tar}
work=${PD_FRESH_WORK:-/var/tmp/paralleldeck-fresh}
card=pp-gpipe-bubble

[[ $(id -u) -eq 0 ]] || { echo "check_fresh_install.sh: needs root (debootstrap, chroot)" >&2; exit 2; }

# The machine's configured Debian source for bookworm (deb822 or one-line format).
debian_mirror() {
    local uri
    uri=$(awk '/^URIs:/ {u=$2} /^Suites:/ && / bookworm( |$)/ {print u; exit}' \
        /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
    [[ -n $uri ]] || uri=$(awk '$1=="deb" && $3=="bookworm" {print $2; exit}' \
        /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true)
    echo "${uri:-http://deb.debian.org/debian}"
}

mounted=()
cleanup() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" 2>/dev/null || true
    done
    mounted=()
    # Remove the roots only when nothing is mounted inside them any more.
    if ! grep -q " $work/" /proc/mounts; then rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

phase_start=$(date +%s)
phase() {  # prints the time the previous phase took, then the new phase's name
    local now
    now=$(date +%s)
    echo "    ($((now - phase_start)) s)"
    phase_start=$now
    echo "=== fresh install: $* ==="
}

# A new pristine root at $1 from the cached minbase tarball (made once by debootstrap).
make_root() {
    local root=$1
    if [[ ! -s $cache ]]; then
        command -v debootstrap >/dev/null || {
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap
        }
        local mirror fresh="$work/debootstrap"
        mirror=$(debian_mirror)
        echo "debootstrap --variant=minbase bookworm from $mirror"
        rm -rf "$fresh"
        debootstrap --variant=minbase bookworm "$fresh" "$mirror" >"$out/debootstrap.log" 2>&1 || {
            tail -n 30 "$out/debootstrap.log"
            return 1
        }
        mkdir -p "$(dirname "$cache")"
        tar -C "$fresh" -cf "$cache.part" . && mv "$cache.part" "$cache"
        rm -rf "$fresh"
    fi
    mkdir -p "$root"
    tar -C "$root" -xf "$cache"
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    mount -t proc proc "$root/proc"
    mounted+=("$root/proc")
    mount --bind /dev "$root/dev"
    mounted+=("$root/dev")
    mount --bind /dev/pts "$root/dev/pts"
    mounted+=("$root/dev/pts")
}

# Runs a command inside a root with a clean environment, logging to $out/$2.log; on failure
# prints the log's last lines.
in_root() {  # in_root ROOT LOGNAME COMMAND
    local root=$1 log="$out/$2.log"
    shift 2
    if ! chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 CI="${CI:-}" \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        /bin/bash -c "$*" >"$log" 2>&1; then
        echo "FAILED in the pristine root: $*" >&2
        echo "--- last lines of $log ---" >&2
        tail -n 60 "$log" >&2
        return 1
    fi
}

echo "=== fresh install: pristine Debian 12 root ==="
rm -rf "$work"
build_root="$work/build-root"
make_root "$build_root"
mkdir -p "$build_root/src/paralleldeck"
git -C "$repo" archive HEAD | tar -x -C "$build_root/src/paralleldeck"

phase "the README's test command (bash scripts/setup.sh test)"
in_root "$build_root" readme-test 'cd /src/paralleldeck && bash scripts/setup.sh test'
grep -E '^[0-9]+% tests passed|tests passed' "$out/readme-test.log" | tail -n 1

phase "the README's app command (bash scripts/setup.sh app)"
in_root "$build_root" readme-app-version 'cd /src/paralleldeck && bash scripts/setup.sh app --version'
tail -n 1 "$out/readme-app-version.log"
in_root "$build_root" readme-app-screenshot "cd /src/paralleldeck && QT_QPA_PLATFORM=offscreen \
    bash scripts/setup.sh app --card $card --export-screenshot /tmp/$card.png && file /tmp/$card.png"
grep -q 'PNG image data' "$out/readme-app-screenshot.log" ||
    { echo "the app command wrote no PNG" >&2; tail -n 20 "$out/readme-app-screenshot.log" >&2; exit 1; }
cp "$build_root/tmp/$card.png" "$out/app-$card.png"

phase "the Debian package (cpack in the pristine root)"
in_root "$build_root" cpack 'cd /src/paralleldeck/build && cpack -G DEB'
rm -f "$out"/paralleldeck*.deb
cp "$build_root"/src/paralleldeck/build/paralleldeck*.deb "$out/"
ls -l "$out"/paralleldeck*.deb

phase "apt-get install of the .deb into a second pristine root"
deb_root="$work/deb-root"
make_root "$deb_root"
deb=$(basename "$(ls "$out"/paralleldeck_*.deb)")
cp "$out/$deb" "$deb_root/tmp/"
in_root "$deb_root" deb-install "apt-get update -qq && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends /tmp/$deb"
in_root "$deb_root" deb-run "set -e; paralleldeck --version; \
    paralleldeck-run --strategy dp --devices 2 --steps 2 >/tmp/run.txt && tail -n 3 /tmp/run.txt; \
    QT_QPA_PLATFORM=offscreen paralleldeck --card $card --export-screenshot /tmp/$card.png; \
    test -s /tmp/$card.png; \
    for m in paralleldeck paralleldeck-run paralleldeck-bench; do \
        test -s /usr/share/man/man1/\$m.1.gz || { echo no man page for \$m; exit 1; }; done"
cat "$out/deb-run.log"
cp "$deb_root/tmp/$card.png" "$out/installed-$card.png"

phase "done"
echo "fresh install OK: README test and app commands, and the installed .deb, in pristine Debian 12 roots"
