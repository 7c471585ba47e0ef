#!/usr/bin/env bash
# Issue 14's studies on this CPU, one after another, in the order of docs/im_screening.md ("The schedule"). Each
# bench resumes where it stopped and skips its finished jobs in seconds, so after an interruption run this again:
#   setsid nohup nice -n 5 scripts/evidence.sh >> evidence.log 2>&1 &
# With DEADLINE=YYYY-MM-DDTHH:MM (UTC; e.g. 15 minutes before the session ends) no cell starts training unless its
# training and attacks are expected to end by then: its model is lost with the session (an attack cut off keeps
# its examples, but they resume only after the model is trained again).
# Sessions start on a fresh checkout without run folders, so before one ends save every started bench (finished and
# partial jobs, no models) into docs/results/<name>/runs, then commit:
#   scripts/evidence.sh save
# and each bench here first restores what was saved (models of cells with jobs left are retrained from their seeds).
# A bench with a failed job is logged and the next one starts (the CPU is the scarce thing); its report names it.
set -u
cd "$(dirname "$0")/.."
QUEUE=(
    "configs/im-powered.yaml"
    "configs/im-advglue.yaml"
    "configs/im-lowresource-16shot.yaml"
    "configs/im-lowresource-1000.yaml"
    # configs/rift-study.yaml (the 6,227-example subset) needs a GPU here: configs/rift-1000.yaml says why
    "configs/rift-1000.yaml --skip im-rift/* --skip freelbpp/*"
    # the same comparison on SNLI, one of the paper's two tasks (added 2026-12-03; its config says why and how):
    # seed 0 of every method as published, then every method trained until dev stops improving (the -fit study: at
    # its published epochs no method had stopped improving on SNLI), then the published study's seeds 1-2.
    # The fit study's three RIFT cells (up to 60 epochs each) ran by hand beside the queue until 2026-12-04; with
    # them done, two workers take its other cells
    "configs/rift-1000-snli.yaml --only */s0* --workers 1 --threads 1"
    # IM + RIFT (configs/rift-1000.yaml's im-rift cell) is not queued: its memory is bounded now (hull_chunk), but
    # its training alone is about 5 hours of both cores, longer than a session (docs/im_screening.md, item 5)
    "configs/rift-1000-snli-fit.yaml --workers 2 --threads 1"
    "configs/rift-1000-snli.yaml"
    # FreeLB++ with its 30 steps a batch last and alone on both cores: one cell is about 60 minutes of training on two
    # threads, over 140 on a one-thread worker (whose deadline check puts it off above), too long to train and attack
    # in one session on one. Last, because with 30 steps it does not fit MiniLM (docs/rift.md): RIFT's and the other
    # baselines' seeds say more per CPU minute
    "configs/rift-1000.yaml --only freelbpp/* --workers 1 --threads 2"
)
saved() { echo "docs/results/$(basename "$1" .yaml)/runs"; }

if [ "${1:-}" = save ]; then
    declare -A published=()
    for entry in "${QUEUE[@]}"; do
        config=${entry%% *}
        [ -z "${published[$config]:-}" ] || continue  # a bench in the queue twice (rift-1000) is published once
        published[$config]=1
        # a bench whose jobs never started (put off by the deadline) has no cells: nothing to publish
        [ -d "runs/bench/$(basename "$config" .yaml)/cells" ] || continue
        python scripts/publish_results.py "$config" --conditions "scripts/evidence.sh's queue: two one-thread workers, or one two-thread process where its entry says so; over sessions"
    done
    exit
fi

for entry in "${QUEUE[@]}"; do
    read -r -a args <<< "$entry"  # no glob expansion: the patterns go to robustft as written
    if [ "${args[0]}" = configs/im-advglue.yaml ] && [ ! -f "${args[0]}" ]; then
        # the five-task AdvGLUE comparison of the IM setting that the powered study's three seeds pick on subset-dev
        python scripts/pick_by_dev.py configs/im-powered.yaml im-inc-dt1 im-inc-dt05 --write "${args[0]}" || continue
    fi
    extra=()
    [ -d "$(saved "${args[0]}")" ] && extra+=(--restore "$(saved "${args[0]}")")
    [ -n "${DEADLINE:-}" ] && extra+=(--deadline "$DEADLINE")
    echo "=== $(date -u '+%F %T') robustft bench ${args[*]} ${extra[*]}"
    # keep the status before $(date) overwrites $?
    # an entry's own flags come after the defaults, so they win
    robustft bench "${args[0]}" --workers 2 --progress false "${args[@]:1}" "${extra[@]}" ||
        { status=$?; echo "=== $(date -u '+%F %T') exit $status: robustft bench ${args[*]}"; }
done
