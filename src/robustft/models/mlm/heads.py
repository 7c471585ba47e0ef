"""The heads a masked LM predicts word pieces with, and MiniLM's encoder under one.

all-MiniLM-L6-v2 ships without a trained masked-LM head: `minilm_mlm` puts a fresh one (BERT's, or
`NeighbourMLMHead`) on its encoder, and `apply_head` fills it with trained tensors.
"""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import load_file
from torch import nn
from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerBase
from transformers.models.bert.modeling_bert import BertLMPredictionHead

from robustft import resources
from robustft.errors import RobustftError

BACKBONE_WEIGHTS = "model.safetensors"  # MiniLM's weights file in its model folder


class NeighbourMLMHead(nn.Module):
    """BERT's MLM head whose transform also reads the hidden states on either side of the position.

    all-MiniLM-L6-v2's final states say what a text is about but little about which word fits a slot
    (docs/mlm_head.md); the neighbours' states add the local syntax. As in BERT: dense + gelu +
    LayerNorm, a decoder tied to the word embeddings, a vocab bias. Used as `BertForMaskedLM.cls`.
    """

    def __init__(self, config):
        super().__init__()
        self.predictions = BertLMPredictionHead(config)
        self.predictions.transform.dense = nn.Linear(3 * config.hidden_size, config.hidden_size)
        nn.init.normal_(self.predictions.transform.dense.weight, std=config.initializer_range)
        nn.init.zeros_(self.predictions.transform.dense.bias)

    def forward(self, sequence_output: torch.Tensor) -> torch.Tensor:
        padded = nn.functional.pad(sequence_output, (0, 0, 1, 1))
        return self.predictions(torch.cat([padded[:, :-2], sequence_output, padded[:, 2:]], dim=-1))

    def predict_at(self, hidden: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
        return self.predictions(window_features(hidden, where))


def window_features(hidden: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
    """[left neighbour, position, right neighbour] hidden states at the positions `where` (bool [B, T])."""
    padded = nn.functional.pad(hidden, (0, 0, 1, 1))
    rows, cols = where.nonzero(as_tuple=True)
    return torch.cat([padded[rows, cols], padded[rows, cols + 1], padded[rows, cols + 2]], dim=-1)


def head_at(head: nn.Module, hidden: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
    """Vocabulary logits of an MLM head at the positions `where` only."""
    if hasattr(head, "predict_at"):
        return head.predict_at(hidden, where)
    return head(hidden[where])


HEAD_KINDS = {"bert": None, "window": NeighbourMLMHead}


def minilm_mlm(seed: int = 0, head: str = "bert") -> tuple[BertForMaskedLM, PreTrainedTokenizerBase]:
    """MiniLM's encoder under a freshly initialised (untrained) head, decoder tied to the embeddings.

    head "bert" is BERT's own MLM head; "window" is `NeighbourMLMHead`.
    """
    from robustft.models.factory import load_tokenizer

    if head not in HEAD_KINDS:
        raise RobustftError(f"unknown masked-LM head kind '{head}'; known: {', '.join(HEAD_KINDS)}")
    folder = Path(resources.resolve_model("minilm"))
    config = BertConfig.from_pretrained(folder, trust_remote_code=False)
    torch.manual_seed(seed)
    model = BertForMaskedLM(config)
    if HEAD_KINDS[head] is not None:
        model.cls = HEAD_KINDS[head](config)
    weights = {
        k: v
        for k, v in load_file(folder / BACKBONE_WEIGHTS).items()
        if not k.startswith("pooler.") and not k.endswith("position_ids")
    }  # no pooler in an MLM
    missing, unexpected = model.bert.load_state_dict(weights, strict=False)
    if missing or unexpected:
        raise RobustftError(f"MiniLM weights do not fit BertForMaskedLM: missing {missing}, unexpected {unexpected}")
    model.tie_weights()
    return model.eval(), load_tokenizer("minilm")


def apply_head(model: BertForMaskedLM, state: dict[str, torch.Tensor]) -> None:
    """Load head (and adapted layer) tensors into `model`; every tensor must find its place."""
    own = model.state_dict()
    wrong = [k for k in state if k not in own or own[k].shape != state[k].shape]
    if wrong:
        raise RobustftError(f"masked-LM head tensors do not fit the model: {wrong}")
    model.load_state_dict({k: v.float() for k, v in state.items()}, strict=False)
    model.tie_weights()
