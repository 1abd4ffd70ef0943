#!/usr/bin/env bash
# ParallelDeck set-up on Debian 12: installs what is missing, builds, then either launches the
# app (`app`) or runs every test (`test`). Extra arguments after `app` go to the app.
# (`install` only installs: CI uses it for the host's sanitizer builds.)
set -euo pipefail
cd "$(dirname "$0")/.."

# Everything the build and the tests need, installed without recommends, so this list is the
# whole truth: packaging/check_fresh_install.sh proves it in a pristine Debian 12 root.
PACKAGES=(build-essential cmake ninja-build pkg-config git file ca-certificates
          qt6-base-dev qt6-charts-dev libqt6opengl6-dev qt6-svg-dev libqt6sql6-sqlite libgl-dev
          libopenblas-dev nlohmann-json3-dev libcli11-dev libminizip-dev zlib1g-dev
          fonts-dejavu-core fontconfig tzdata
          dpkg-dev appstream)
# The tests alone also need PyTorch (Debian's, CPU): the replay of the engine's numerics
# (tests/replay/check_replays.sh). The app never does.
TEST_PACKAGES=(python3-torch)

install_missing() {  # install_missing [EXTRA PACKAGES...]
    local missing=()
    for p in "${PACKAGES[@]}" "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            missing+=("$p")
    done
    if ((${#missing[@]})); then
        echo "Installing: ${missing[*]}"
        local sudo=""
        [[ $(id -u) -ne 0 ]] && sudo="sudo"
        $sudo apt-get update
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
    fi
}

build() {  # build DIR [cmake options...]
    local dir=$1
    shift
    # A unity build (each library's files compiled a batch at a time) parses Qt's and the JSON
    # library's headers once per batch instead of once per file: a third less build time.
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_UNITY_BUILD=ON "$@"
    cmake --build "$dir" --parallel "$(nproc)"
}

case "${1:-}" in
    install)
        install_missing
        ;;
    app)
        shift
        install_missing
        build build
        exec ./build/app/paralleldeck "$@"
        ;;
    test)
        install_missing "${TEST_PACKAGES[@]}"
        build build
        # As many tests at once as there are cores (those that time claims run alone).
        QT_QPA_PLATFORM=offscreen ctest --test-dir build --output-on-failure --timeout 900 \
            --parallel "$(nproc)"
        ;;
    *)
        echo "usage: scripts/setup.sh app [APP ARGUMENTS...] | test | install" >&2
        exit 2
        ;;
esac
