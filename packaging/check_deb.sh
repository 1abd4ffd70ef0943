#!/usr/bin/env bash
# Checks a built ParallelDeck .deb: it lists the binaries, man pages, the desktop file, the
# AppStream metainfo and the icons; its binaries are stripped and start without CUDA; its
# description renders as Debian expects; lintian reports no error, desktop-file-validate and
# appstreamcli validate pass. Usage: check_deb.sh PACKAGE.deb
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
    ./usr/share/man/man1/paralleldeck.1.gz
    ./usr/share/man/man1/paralleldeck-run.1.gz
    ./usr/share/man/man1/paralleldeck-bench.1.gz
    ./usr/share/doc/paralleldeck/copyright
    ./usr/share/doc/paralleldeck/changelog.gz
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
# The extended description: indented lines, paragraphs separated by " .", no CMake list
# separators left in it.
description=$(dpkg-deb -f "$deb" Description)
if grep -q ';' <<<"$description" || ! grep -q '^ \.$' <<<"$description"; then
    echo "Description is not in Debian's control format:" >&2
    echo "$description" >&2
    missing=1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dpkg-deb -x "$deb" "$tmp"
for bin in paralleldeck paralleldeck-run paralleldeck-bench; do
    if file "$tmp/usr/bin/$bin" | grep -q 'not stripped'; then
        echo "$bin is not stripped" >&2
        missing=1
    fi
done
# The binaries must start without CUDA: the runtime is static and cuBLAS opened at run time.
for bin in paralleldeck paralleldeck-run paralleldeck-bench; do
    if readelf -d "$tmp/usr/bin/$bin" | grep -E 'NEEDED.*(cuda|cublas|nccl)'; then
        echo "$bin links a CUDA library dynamically" >&2
        missing=1
    fi
done
appstreamcli validate --no-net --pedantic \
    "$tmp/usr/share/metainfo/io.github.paralleldeck.ParallelDeck.metainfo.xml" || missing=1
desktop-file-validate "$tmp/usr/share/applications/io.github.paralleldeck.ParallelDeck.desktop" ||
    missing=1
# Errors fail the check; warnings are printed for the record.
lintian --fail-on error --tag-display-limit 0 "$deb" || missing=1
((missing == 0)) &&
    echo "package OK: $deb ($(wc -l <<<"$contents") entries, $(du -h "$deb" | cut -f1))"
exit $missing
