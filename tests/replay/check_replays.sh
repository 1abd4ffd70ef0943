#!/usr/bin/env bash
# The engine's losses against an independent PyTorch replay of the same dumps
# (tests/replay/replay_dump.py), for the numerics a plain fp32 replay does not cover: fp16 with
# GradScaler's loss scaling (skipped steps, growth, clipping after unscaling, a forward that
# overflows), bf16 and fp16 without master weights, clipping in fp32, DDP's fp16 and bf16
# compression hooks, TF32 products and bf16 ones (float32_matmul_precision 'medium'), powerSGD_hook (its orthogonalisation is torch's own _orthogonalize),
# LAMB and bitsandbytes' AdamW8bit (the replay's own classes), Transformer Engine's FP8 with
# delayed scaling (the replay's own FP8 rounding), per-replica loss means summed over
# replicas (a TF custom loop's reduce_mean), and DeepSpeed-Ulysses' context
# parallelism (all-to-alls between sequence and head shards). Exit 77 (ctest: skipped)
# where python3 has no torch; `scripts/setup.sh test` installs Debian's python3-torch.
# Usage: check_replays.sh PARALLELDECK_RUN SOURCE_DIR
set -euo pipefail
run=$1
src=$2
python=/usr/bin/python3
[[ -x $python ]] || python=python3
if ! "$python" -c "import torch" 2>/dev/null; then
    echo "SKIP: python3 has no torch (Debian's python3-torch; scripts/setup.sh test installs it)"
    exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
check() {  # check NAME ARGS...: run, dump, replay; a failed replay fails the script
    local name=$1
    shift
    mkdir -p "$work/$name"
    local replay_args=()
    local args=()
    while (($#)); do  # --tolerance X goes to the replay, the rest to the run
        if [[ $1 == --tolerance || $1 == --abs-tolerance ]]; then
            replay_args+=("$1" "$2")
            shift 2
        else
            args+=("$1")
            shift
        fi
    done
    "$run" "${args[@]}" --steps 8 --dump-dir "$work/$name" --summary "$work/$name/summary.json" \
        > "$work/$name/run.log" 2>&1
    if "$python" "$src/tests/replay/replay_dump.py" "$work/$name" "$work/$name/summary.json" \
        "${replay_args[@]}" > "$work/$name/replay.log" 2>&1; then
        echo "ok   $name: $(tail -1 "$work/$name/replay.log")"
    else
        echo "FAIL $name:"
        cat "$work/$name/replay.log"
        failed=1
    fi
}
check fp32-clip --strategy dp --devices 2 --clip-grad-norm 0.5
check fp16-dynamic --strategy single --precision fp16-mixed
check fp16-overflow-growth-clip --strategy dp --devices 2 --precision fp16-mixed \
    --loss-scale-init 1048576 --loss-scale-growth-interval 2 --clip-grad-norm 0.5
check fp16-unscaled --strategy single --precision fp16-mixed --loss-scale 1 --input-scale 0.001
check fp16-forward-overflow --strategy single --precision fp16-mixed --input-scale 10000
check fp16-no-master --strategy single --precision fp16-mixed --no-master-weights --lr 1e-4
check ddp-fp16-compress-hook --strategy dp --devices 4 --comm-hook fp16
check ddp-bf16-compress-hook --strategy dp --devices 2 --comm-hook bf16
check powersgd-rank2-warm --strategy dp --devices 2 --powersgd-rank 2 --powersgd-start-iter 2
check powersgd-rank4-4dev --strategy dp --devices 4 --powersgd-rank 4 --powersgd-start-iter 3
check powersgd-cold-no-ef --strategy dp --devices 2 --powersgd-rank 1 --powersgd-start-iter 2 \
    --powersgd-no-warm-start --powersgd-no-error-feedback
check tf32-products --strategy dp --devices 2 --tf32
check matmul-precision-medium --strategy single --float32-matmul-precision medium
check bf16-no-master --strategy dp --devices 2 --precision bf16-mixed --no-master-weights --lr 1e-4
check fsdp2-mixed-precision-policy --strategy zero3 --devices 4 --precision bf16-mixed \
    --reduce-dtype fp32
# qwZ's int8 codes flip at a rounding boundary now and then (as 8-bit Adam's): 1e-4 relative.
check zeropp-qwz --strategy zero3 --devices 4 --quantized-weights --tolerance 1e-4
check zeropp-qgz --strategy zero3 --devices 4 --quantized-gradients --tolerance 1e-4
check lamb-dp --strategy dp --devices 2 --optimizer lamb --lr 0.01
check lamb-bf16 --strategy single --optimizer lamb --precision bf16-mixed --lr 0.01
# A quantised state amplifies the replay's double-precision gradients' last-bit differences
# (a flipped code is a ~1% change of one moment): 1e-4 relative (measured 1.7e-5).
check adamw8bit-dp --strategy dp --devices 2 --optimizer adamw8bit --tolerance 1e-4
check adamw8bit-block256 --strategy single --optimizer adamw8bit --optimizer-blocksize 256 \
    --min-8bit-size 1024 --tolerance 1e-4
# Transformer Engine's FP8 (DelayedScaling): a last-bit difference in a product's fp32 sum
# flips an FP8 code now and then (1/16 of a value under E4M3); a 1e-7 perturbation of every
# cast input moves the replay's own losses by up to 3.8e-4, so 6e-4 absolute or 1e-2
# relative (max instead of most_recent is 1.1e-3 off, the wrong format 0.33).
check fp8-hybrid-history16 --strategy single --fp8 hybrid --fp8-amax-history-len 16 \
    --tolerance 1e-2 --abs-tolerance 6e-4
check fp8-e4m3-most-recent-dp2 --strategy dp --devices 2 --fp8 e4m3 \
    --fp8-amax-compute-algo most_recent --tolerance 1e-2 --abs-tolerance 6e-4
check fp8-hybrid-bf16 --strategy single --fp8 hybrid --precision bf16-mixed \
    --tolerance 1e-2 --abs-tolerance 6e-4
check fp8-hybrid-margin-dp4 --strategy dp --devices 4 --fp8 hybrid --fp8-margin 1 \
    --fp8-amax-history-len 4 --tolerance 1e-2 --abs-tolerance 6e-4
check replica-mean-loss --strategy dp --devices 4 --loss-reduction replica_mean --optimizer sgd \
    --lr 0.003
check ulysses-cp4 --model transformer --strategy cp --devices 4 --cp-algorithm ulysses --heads 4 \
    --seq-len 16 --layers 2 --width 32 --batch 4
# A dataset's examples (sharded by data over 2 hosts' pipelines, 3 steps an epoch, so 8 steps wrap twice) are
# what the dump holds and the model trains on.
check dataset-data-shard --scenario "$src/tests/replay/dataset_data_shard.json"
exit $failed
