#!/usr/bin/env bash
# GPU checks for ParallelDeck's CUDA backend.
#
#   tests/gpu/run-gpu-checks.sh --prepare   # here (dev machine, repo root): build + bundle into ./gpu-bundle
#   tests/gpu/run-gpu-checks.sh             # there (GPU machine, repo root): run the checks (< 8 min)
#
# The GPU machine has CUDA/NCCL/driver and python3+torch but no Qt, so --prepare bundles the
# executables with every non-core, non-CUDA shared library they need. If the bundle is larger than
# the transfer budget, --prepare also writes gpu-bundle.tar.xz; the run mode unpacks it when
# gpu-bundle/bin is missing.
set -euo pipefail

BUNDLE=gpu-bundle
BUNDLE_TAR=gpu-bundle.tar.xz
EXES=(paralleldeck-run paralleldeck-bench test_gpu_backend)
BUNDLE_WARN_MIB=56

die() { echo "run-gpu-checks: $*" >&2; exit 1; }

# ---------------------------------------------------------------------------------------------
# --prepare: build and bundle (dev machine)
# ---------------------------------------------------------------------------------------------
skip_lib() {  # $1 = resolved library path; succeeds when the library must NOT be bundled
    local path=$1 base=${1##*/}
    case $path in /usr/local/cuda*) return 0 ;; esac   # the GPU machine has the same CUDA 13.0
    case $base in
        # glibc and the compiler runtime: system core libraries
        libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux*.so* | \
        libgcc_s.so* | libstdc++.so*) return 0 ;;
        # driver, CUDA runtime/libraries and NCCL: present system-wide on the GPU machine
        libcuda.so* | libcudart.so* | libcublas.so* | libcublasLt.so* | libnccl.so* | \
        libnvidia-*.so* | libnvrtc*.so* | libnvJitLink.so*) return 0 ;;
    esac
    return 1
}

prepare() {
    [[ -f CMakeLists.txt ]] || die "run --prepare from the repository root"
    cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DPD_BUILD_GUI=OFF -DPD_ENABLE_CUDA=ON
    ninja -C build-gpu "${EXES[@]}"

    rm -rf "$BUNDLE" "$BUNDLE_TAR"
    mkdir -p "$BUNDLE/bin" "$BUNDLE/lib"
    local name exe
    for name in "${EXES[@]}"; do
        exe=$(find build-gpu -type f -name "$name" -executable | head -n1)
        [[ -n $exe ]] || die "executable $name not found under build-gpu"
        cp "$exe" "$BUNDLE/bin/$name"
        strip --strip-unneeded "$BUNDLE/bin/$name" 2>/dev/null || true
    done

    # Resolve dependencies with ldd (transitive: ldd lists the whole closure).
    local lddout lib missing=0
    lddout=$(for name in "${EXES[@]}"; do ldd "$BUNDLE/bin/$name"; done)
    if grep -q 'not found' <<<"$lddout"; then
        grep 'not found' <<<"$lddout" | sort -u >&2
        missing=1
    fi
    while read -r lib; do
        skip_lib "$lib" && continue
        cp -L "$lib" "$BUNDLE/lib/"
    done < <(awk '$2 == "=>" && $3 ~ /^\// { print $3 }' <<<"$lddout" | sort -u)
    [[ $missing -eq 0 ]] || die "some libraries were not found by ldd (see above)"

    echo "Bundled libraries:"
    for lib in "$BUNDLE"/lib/*; do echo "  ${lib##*/}"; done
    du -sh "$BUNDLE"
    local kib
    kib=$(du -sk "$BUNDLE" | cut -f1)
    if (( kib > BUNDLE_WARN_MIB * 1024 )); then
        echo "WARNING: $BUNDLE is $((kib / 1024)) MiB, over ${BUNDLE_WARN_MIB} MiB (transfer limit 64 MiB)." >&2
        tar -cf - "$BUNDLE" | xz -T0 -6 >"$BUNDLE_TAR"
        du -sh "$BUNDLE_TAR"
        echo "Wrote $BUNDLE_TAR: send/carry it instead of $BUNDLE/; the run mode unpacks it." >&2
    fi
}

# ---------------------------------------------------------------------------------------------
# run mode (GPU machine)
# ---------------------------------------------------------------------------------------------
OUTDIR=${OUT:-/tmp}
LOG=$OUTDIR/gpu-checks.log
TMP=""
START=$SECONDS
DEADLINE=$((START + 470))   # the whole run must finish within 8 minutes
FAILED=()

log() { echo "$*" | tee -a "$LOG"; }

# run_step NAME TIMEOUT CMD...: output goes to $TMP/NAME.out and the log; sets STEP_RC.
run_step() {
    local name=$1 limit=$2; shift 2
    local left=$((DEADLINE - SECONDS))
    (( limit > left )) && limit=$left
    log ""
    log "=== [$name] $* (timeout ${limit}s)"
    if (( limit < 5 )); then
        log "=== [$name] SKIPPED: out of time"
        STEP_RC=124
        FAILED+=("$name")
        : >"$TMP/$name.out"
        return 0
    fi
    local t0=$SECONDS
    : >"$TMP/$name.out"
    set +e
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$LOG" "$TMP/$name.out"
    STEP_RC=${PIPESTATUS[0]}
    set -e
    log "=== [$name] exit $STEP_RC after $((SECONDS - t0))s"
    (( STEP_RC == 0 )) || FAILED+=("$name")
    return 0
}

# result_line FILE NAME: the last "RESULT NAME ..." line (empty if none).
result_line() { grep -E "^RESULT $2( |$)" "$1" 2>/dev/null | tail -n1 || true; }

# result_keys LINE PATTERN: every key=value token whose key matches the (extended) regex PATTERN.
result_keys() {
    local tok toks out=()
    read -ra toks <<<"$1"
    for tok in "${toks[@]}"; do
        [[ $tok == *=* ]] || continue
        if grep -qiE "$2" <<<"${tok%%=*}"; then out+=("$tok"); fi
    done
    if (( ${#out[@]} )); then echo "${out[*]}"; else echo "-"; fi
}

# result_value LINE KEY: value of the first token whose key is KEY or starts with KEY (e.g. busbw_gbs).
result_value() {
    local tok toks
    read -ra toks <<<"$1"
    for tok in "${toks[@]}"; do
        [[ $tok == "$2="* ]] && { echo "${tok#*=}"; return; }
    done
    for tok in "${toks[@]}"; do
        [[ $tok == "$2"*=* ]] && { echo "${tok#*=}"; return; }
    done
    echo "-"
}

is_number() { [[ $1 =~ ^[0-9]+([.][0-9]*)?([eE][-+]?[0-9]+)?$ ]]; }

# Put libraries the binaries still miss (e.g. NCCL from a pip wheel) on LD_LIBRARY_PATH.
find_missing_libs() {
    local missing lib d dir sp dirs=(/usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu /usr/lib64 /opt)
    for sp in $(py -c 'import site; print(*site.getsitepackages())' 2>/dev/null || true); do
        [[ -d $sp/nvidia ]] && dirs+=("$sp/nvidia")
        [[ -d $sp/torch/lib ]] && dirs+=("$sp/torch/lib")
    done
    missing=$(for b in "$BUNDLE"/bin/*; do ldd "$b" 2>/dev/null; done | awk '/not found/ { print $1 }' | sort -u || true)
    for lib in $missing; do
        dir=""
        for d in "${dirs[@]}"; do
            [[ -d $d ]] || continue
            dir=$(find "$d" -maxdepth 5 -name "$lib" -print -quit 2>/dev/null || true)
            [[ -n $dir ]] && break
        done
        if [[ -n $dir ]]; then
            log "found missing $lib at $dir"
            export LD_LIBRARY_PATH=${dir%/*}:$LD_LIBRARY_PATH
        else
            log "WARNING: $lib not found anywhere (binaries that need it will fail)"
        fi
    done
}

# python3 without the bundled libraries on LD_LIBRARY_PATH (they are meant for our binaries only).
ORIG_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
py() { env LD_LIBRARY_PATH="$ORIG_LD_LIBRARY_PATH" python3 "$@"; }

run_checks() {
    mkdir -p "$OUTDIR"
    : >"$LOG"
    TMP=$(mktemp -d)
    trap 'rm -rf "$TMP"' EXIT
    if [[ ! -d $BUNDLE/bin && -f $BUNDLE_TAR ]]; then
        log "unpacking $BUNDLE_TAR"
        py -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(".")' "$BUNDLE_TAR"
    fi
    [[ -d $BUNDLE/bin ]] || die "$BUNDLE/bin missing: run '$0 --prepare' on the dev machine first"

    if command -v nvidia-smi >/dev/null; then nvidia-smi -L 2>&1 | tee -a "$LOG" || true; fi
    log "host glibc: $(ldd --version 2>/dev/null | head -n1 || true) (bundle built against Debian 12, glibc 2.36)"
    export LD_LIBRARY_PATH=$PWD/$BUNDLE/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
    export QT_QPA_PLATFORM=offscreen
    export PYTHONUNBUFFERED=1
    find_missing_libs

    local B=$BUNDLE/bin
    # 1. Qt Test GPU backend tests
    run_step gpu_test 240 "$B/test_gpu_backend"
    local test_rc=$STEP_RC test_note=""
    # Skipped means no usable GPU was found: on the GPU machine that is a failure too.
    if grep -q "SKIP .*no GPU here" "$TMP/gpu_test.out"; then
        test_note=$(grep -o "no GPU here.*" "$TMP/gpu_test.out" | head -n1)
        test_rc=77
        FAILED+=(gpu_test)
    fi
    # 2. GEMM vs cuBLAS
    run_step gemm 45 "$B/paralleldeck-bench" gemm
    # 3. all-reduce bandwidth
    run_step allreduce 60 "$B/paralleldeck-bench" allreduce --backend cuda --devices 4 --max-bytes 256MiB
    # 4. engine single-device step time
    run_step engine_single 60 "$B/paralleldeck-run" --backend cuda --strategy single --devices 1 \
        --width 1024 --layers 4 --batch 256 --steps 30 --quiet --summary "$TMP/single.json"
    local engine_ms="-"
    if [[ -s $TMP/single.json ]]; then
        engine_ms=$(py -c 'import json,sys; print("%.4f" % (1000 * json.load(open(sys.argv[1]))["step_time_s"]["median"]))' \
            "$TMP/single.json" 2>>"$LOG" || echo "-")
    fi
    # 5. PyTorch eager reference
    run_step torch_ref 60 env LD_LIBRARY_PATH="$ORIG_LD_LIBRARY_PATH" python3 tests/gpu/torch_step_time.py --width 1024 --layers 4 --batch 256 --steps 30
    local torch_line torch_ms
    torch_line=$(result_line "$TMP/torch_ref.out" torch_step)
    torch_ms=$(result_value "$torch_line" median_ms)
    [[ $torch_line == *unavailable* ]] && torch_ms="unavailable ($(result_value "$torch_line" reason))"
    # 6. smoke runs of the other strategies
    local -a smoke_names=(dp pipeline tp zero3 hybrid)
    local -a smoke_args=(
        "--strategy dp --devices 4"
        "--strategy pipeline --devices 4 --schedule 1f1b --microbatches 8"
        "--strategy tp --devices 2"
        "--strategy zero3 --devices 4"
        "--strategy hybrid --devices 8 --dp 2 --pp 2 --tp 2"
    )
    local -A smoke_rc=()
    local i
    for i in "${!smoke_names[@]}"; do
        # shellcheck disable=SC2086  # the argument strings are meant to be split
        run_step "smoke_${smoke_names[i]}" 20 "$B/paralleldeck-run" --backend cuda ${smoke_args[i]} \
            --steps 3 --quiet --summary "$TMP/smoke_${smoke_names[i]}.json"
        smoke_rc[${smoke_names[i]}]=$STEP_RC
    done

    # ---- summary table ----
    local gemm_line ar_line ratio goal ratio_et="-" goal_et
    gemm_line=$(result_line "$TMP/gemm.out" gemm)
    ar_line=$(result_line "$TMP/allreduce.out" allreduce)
    # A step that exited 0 but produced no figure counts as failed too.
    mark_failed() { [[ " ${FAILED[*]} " == *" $1 "* ]] || FAILED+=("$1"); }
    [[ -n $gemm_line ]] || mark_failed gemm
    [[ -n $ar_line ]] || mark_failed allreduce
    is_number "$engine_ms" || mark_failed engine_single
    is_number "$torch_ms" || mark_failed torch_ref
    ratio=$(result_value "$ar_line" ratio)
    if is_number "$ratio"; then
        goal=$(awk -v r="$ratio" 'BEGIN { print (r >= 0.6) ? "met" : "MISSED" }')
    else goal="n/a"; fi
    if is_number "$engine_ms" && is_number "$torch_ms"; then
        ratio_et=$(awk -v e="$engine_ms" -v t="$torch_ms" 'BEGIN { if (t > 0) printf "%.3f", e / t; else print "-" }')
    fi
    if is_number "$ratio_et"; then
        goal_et=$(awk -v r="$ratio_et" 'BEGIN { print (r <= 1.2) ? "met" : "MISSED" }')
    else goal_et="n/a"; fi

    {
        echo ""
        echo "==================== GPU check summary ===================="
        printf '%-22s %s\n' "gpu test" "$(if [[ -n $test_note ]]; then echo "SKIPPED ($test_note)"; elif [[ $test_rc -eq 0 ]]; then echo PASS; else echo "FAIL (exit $test_rc)"; fi)"
        printf '%-22s %s\n' "gemm GFLOP/s" "$(result_keys "$gemm_line" 'gflop')"
        printf '%-22s %s\n' "allreduce busbw" "$(result_value "$ar_line" busbw)"
        printf '%-22s %s\n' "allreduce bound" "$(result_value "$ar_line" bound)"
        printf '%-22s %s\n' "allreduce ratio" "$ratio (goal >= 0.6: $goal)"
        printf '%-22s %s\n' "engine step ms" "$engine_ms"
        printf '%-22s %s\n' "torch step ms" "$torch_ms"
        printf '%-22s %s\n' "engine/torch" "$ratio_et (goal <= 1.2: $goal_et)"
        for i in "${smoke_names[@]}"; do
            printf '%-22s %s\n' "smoke $i" "$([[ ${smoke_rc[$i]} -eq 0 ]] && echo PASS || echo "FAIL (exit ${smoke_rc[$i]})")"
        done
        printf '%-22s %s\n' "elapsed" "$((SECONDS - START))s"
        if (( ${#FAILED[@]} )); then
            printf '%-22s %s\n' "FAILED steps" "${FAILED[*]}"
        else
            printf '%-22s %s\n' "FAILED steps" "none"
        fi
        echo "RESULT raw: ${gemm_line:-no gemm RESULT}"
        echo "RESULT raw: ${ar_line:-no allreduce RESULT}"
    } | tee -a "$LOG"

    if [[ -n ${OUT:-} ]]; then
        cp "$TMP"/*.json "$OUT"/ 2>/dev/null || true
        [[ $LOG -ef $OUT/gpu-checks.log ]] || cp "$LOG" "$OUT"/
    fi
    (( ${#FAILED[@]} == 0 ))
}

case ${1:-} in
    --prepare) prepare ;;
    "") run_checks ;;
    -h | --help) sed -n '2,9p' "$0" ;;
    *) die "unknown argument: $1 (use --prepare or no argument)" ;;
esac
