"""How many tokens a model can read: a `max_length` above it is refused before any work (issue 67), where it used
to index past the position embeddings on the first long text (a traceback mid-run) or pass unnoticed on short ones."""

from __future__ import annotations

from robustft.errors import ConfigError

# tokenizers without a limit report model_max_length as a huge sentinel (int(1e30)); anything above this is one
UNSET_TOKENIZER_LIMIT = 10**6


def max_positions(config, tokenizer) -> int | None:
    """Tokens per input the model reads: its tokenizer's limit where one is set, else the position embeddings' count
    (which for RoBERTa-like models includes two padding offsets, hence the tokenizer first); None if unknown."""
    limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(limit, int) and 0 < limit < UNSET_TOKENIZER_LIMIT:
        return limit
    positions = getattr(config, "max_position_embeddings", None)
    return positions if isinstance(positions, int) and positions > 0 else None


def check_max_length(max_length: int | None, config, tokenizer, name: str) -> None:
    """A ConfigError naming both numbers when `max_length` is more than the model `name` (its config) reads."""
    limit = max_positions(config, tokenizer)
    if max_length is not None and limit is not None and max_length > limit:
        raise ConfigError(f"max_length: {max_length} tokens, but {name} reads at most {limit} (its positions)")
