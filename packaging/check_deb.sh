#!/usr/bin/env bash
# Checks a built ParallelDeck .deb: it lists the binaries, the desktop file, the AppStream
# metainfo and the icons, and its metadata is well formed. Usage: check_deb.sh PACKAGE.deb
set -euo pipefail
deb=$1
contents=$(dpkg-deb -c "$deb")
expected=(
    ./usr/bin/paralleldeck
    ./usr/bin/paralleldeck-run
    ./usr/bin/paralleldeck-bench
    ./usr/share/applications/io.github.paralleldeck.ParallelDeck.desktop
    ./usr/share/metainfo/io.github.paralleldeck.ParallelDeck.metainfo.xml
    ./usr/share/icons/hicolor/scalable/apps/io.github.paralleldeck.ParallelDeck.svg
    ./usr/share/icons/hicolor/256x256/apps/io.github.paralleldeck.ParallelDeck.png
    ./usr/share/icons/hicolor/48x48/apps/io.github.paralleldeck.ParallelDeck.png
)
missing=0
for path in "${expected[@]}"; do
    if ! grep -qE " ${path//./\\.}\$" <<<"$contents"; then
        echo "missing from $deb: $path" >&2
        missing=1
    fi
done
depends=$(dpkg-deb -f "$deb" Depends)
for dep in libqt6widgets6 libqt6sql6-sqlite; do
    grep -q "$dep" <<<"$depends" || { echo "Depends lacks $dep: $depends" >&2; missing=1; }
done
tmp=$(mktemp -d)
dpkg-deb -x "$deb" "$tmp"
# The binaries must start without CUDA: the runtime is static and cuBLAS opened at run time.
for bin in paralleldeck paralleldeck-run paralleldeck-bench; do
    if readelf -d "$tmp/usr/bin/$bin" | grep -E 'NEEDED.*(cuda|cublas|nccl)'; then
        echo "$bin links a CUDA library dynamically" >&2
        missing=1
    fi
done
if command -v appstreamcli >/dev/null; then
    appstreamcli validate --no-net --pedantic \
        "$tmp/usr/share/metainfo/io.github.paralleldeck.ParallelDeck.metainfo.xml" || missing=1
fi
rm -rf "$tmp"
((missing == 0)) && echo "package OK: $deb ($(wc -l <<<"$contents") entries)"
exit $missing
