"""Victims for attack tests: a keyword classifier whose answer a single swap can flip, and small inputs."""

from types import SimpleNamespace

import torch

from robustft.data.example import Example


class KeywordModel(torch.nn.Module):
    """Positive iff the text has more positive than negative cue words (by token id); the margin shrinks
    as cue words are swapped away, so greedy and genetic searches have a signal to follow."""

    def __init__(self, tokenizer, positive=("good", "great", "fine", "nice"), negative=("bad", "awful", "poor")):
        super().__init__()
        vocab = tokenizer.get_vocab()
        weights = torch.zeros(len(tokenizer))
        for w in positive:
            weights[vocab[w]] = 1.0
        for w in negative:
            weights[vocab[w]] = -1.0
        self.weights = torch.nn.Parameter(weights, requires_grad=False)
        self.config = SimpleNamespace(max_position_embeddings=512, num_labels=2, name_or_path="keyword")
        self.calls = 0

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        self.calls += 1
        mask = attention_mask if attention_mask is not None else torch.ones_like(input_ids)
        s = (self.weights[input_ids] * mask).sum(-1) - 0.5  # ties lean negative
        return SimpleNamespace(logits=torch.stack([-s, s], dim=-1))


GOOD = [
    Example("the film is good and the acting is great .", 1, id="g1"),
    Example("a good , nice story .", 1, id="g2"),
    Example("bad plot , awful ending .", 0, id="b1"),
    Example("a fine movie", 1, id="g3"),
]

BAD_INPUTS = [
    Example("", 1, id="empty"),
    Example("the and of it is", 0, id="stopwords"),
    Example("good", 1, id="one-word"),
    Example(" ".join(["a good film ,"] * 15), 1, id="long"),  # over the 32 tokens the tests allow
    Example("un film très good , très drôle — ça marche ! 😀", 1, id="non-ascii"),
]
