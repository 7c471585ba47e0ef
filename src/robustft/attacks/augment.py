"""`robustft augment`: new rows for a data file, each a row's text with words swapped by a transformation under its
constraints; no model (TextAttack's `textattack augment` and its Augmenter).

A variant swaps max(1, int(pct_words x words)) words, one at a time: each step draws uniformly among the texts one
swap away that pass every constraint and were not produced before for the row (TextAttack's loop); a row gets up to
`n_per_example` distinct variants, fewer when the words run out of substitutes. Draws come from a generator seeded by
(seed, row number), so a file is augmented the same way every time.
"""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path

from robustft.atomic import atomic_write_text
from robustft.attacks.words import AttackedText, is_substitute
from robustft.data.user_files import SUFFIXES, TEXT_NAMES, read_rows
from robustft.errors import ConfigError, suggest

# TextAttack's augmentation recipes, each with RepeatModification and NLTK stopwords (its Augmenter's defaults).
# embedding: TextAttack's 50 counter-fitted neighbours with cos >= 0.8; offline the 8-neighbour file of the same
# vectors stands in (as for the attack recipes). charswap: TextAttack's four character edits (DeepWordBug's).
RECIPES = ("wordnet", "embedding", "charswap")


def augmenter(recipe: str):
    """(transformation, constraints) of an augmentation recipe."""
    from robustft.attacks.constraints import RepeatModification, StopwordModification
    from robustft.attacks.transformations import CharacterEdits, CounterfittedNeighbours, WordNetSynonyms

    transformation = {
        "wordnet": WordNetSynonyms,
        "embedding": CounterfittedNeighbours,
        "charswap": lambda: CharacterEdits(("swap", "substitute", "delete", "insert")),
    }[recipe]()
    return transformation, [RepeatModification(), StopwordModification("nltk")]


def one_swap_away(text: AttackedText, original: AttackedText, transformation, constraints) -> list[AttackedText]:
    """Every text one swap from `text` at a position the constraints allow, that every constraint accepts."""
    allowed = set(range(text.num_words))
    for c in constraints:
        mine = c.modifiable(text)
        allowed &= allowed if mine is None else mine
    indices = sorted(allowed)
    words = transformation.candidates(text, indices)
    out = [
        text.replace_word(i, w)
        for i in indices
        for w in words.get(i, [])
        if w.lower() != text.words[i].lower() and is_substitute(w)
    ]
    for c in constraints:
        out = c.filter(out, text, original)
    return out


def variants(text: str, n: int, pct_words: float, rng: random.Random, transformation, constraints) -> list[str]:
    """Up to `n` distinct variants of `text`, each max(1, int(pct_words x words)) swaps away."""
    original = AttackedText(text)
    transformation = transformation.seeded(rng)
    wanted, produced = max(1, int(pct_words * original.num_words)), {text}
    out = []
    for _ in range(n):
        current, steps = original, 0
        while max(len(current.modified), steps) < wanted:
            options = [
                t for t in one_swap_away(current, original, transformation, constraints) if t.text not in produced
            ]
            if not options:
                break
            current, steps = rng.choice(options), steps + 1
        if current.text not in produced:
            produced.add(current.text)
            out.append(current.text)
    return out


def check_arguments(data: Path, out: Path, n_per_example: int, pct_words: float, column: str | None, rows) -> str:
    """The text column; a bad argument stops with one line naming it."""
    if isinstance(n_per_example, bool) or not isinstance(n_per_example, int) or n_per_example < 1:
        raise ConfigError(f"augment: --n_per_example must be a whole number >= 1, got {n_per_example!r}")
    if not 0 < pct_words <= 1:
        raise ConfigError(f"augment: --pct_words must be in (0, 1], got {pct_words!r}")
    if out.resolve() == data.resolve():
        raise ConfigError(f"augment: --out {out} is the input file; write the augmented rows to another file")
    if out.suffix.lower() not in SUFFIXES or out.suffix.lower() == ".json":
        raise ConfigError(f"augment: --out {out} must end in .csv, .tsv or .jsonl")
    text = column or next((c for c in TEXT_NAMES if c in rows.columns), None)
    if text not in rows.columns:
        where = f"column {text!r}" if text else f"text column among {list(TEXT_NAMES)}"
        raise ConfigError(f"augment: {data} has no {where} (it has {list(rows.columns)}); name it with --column")
    return text


def augment_file(recipe, data: Path, out: Path, n_per_example=1, pct_words=0.1, seed=0, column=None, keep=True) -> int:
    """Write `out`: each row of `data` (unless keep=False), then its variants; returns the rows written."""
    if recipe not in RECIPES:
        raise ConfigError(
            f"augment: unknown recipe {recipe!r}{suggest(recipe, RECIPES)}; choose from {', '.join(RECIPES)}"
        )
    rows = read_rows(Path(data))
    text = check_arguments(Path(data), Path(out), n_per_example, pct_words, column, rows)
    transformation, constraints = augmenter(recipe)
    written = []
    for number, (_, record) in enumerate(rows.rows):
        rng = random.Random(seed * 1_000_003 + number)
        found = variants(str(record[text]), n_per_example, pct_words, rng, transformation, constraints)
        written += ([record] if keep else []) + [{**record, text: v} for v in found]
    atomic_write_text(Path(out), serialise(rows.columns, written, Path(out).suffix.lower()))
    return len(written)


def serialise(columns, records: list[dict], suffix: str) -> str:
    if suffix == ".jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    buffer = io.StringIO()
    # TSV as read_rows reads it: no quoting (a tab always separates)
    quoting = {"quoting": csv.QUOTE_NONE, "quotechar": None} if suffix != ".csv" else {}
    writer = csv.DictWriter(buffer, columns, delimiter=SUFFIXES[suffix], lineterminator="\n", **quoting)
    writer.writeheader()
    writer.writerows(records)
    return buffer.getvalue()


def add_parser(sub) -> None:
    """The `augment` verb of the command line."""
    p = sub.add_parser("augment", help="new rows for a data file: its texts with words swapped, no model")
    p.add_argument("--recipe", required=True, help=f"one of {', '.join(RECIPES)} (TextAttack's augmenters)")
    p.add_argument("--data", required=True, type=Path, help="a .csv, .tsv or .jsonl file with a text column")
    p.add_argument("--out", required=True, type=Path, help="where the rows go (.csv, .tsv or .jsonl)")
    p.add_argument("--n_per_example", type=int, default=1, help="variants per row (default 1)")
    p.add_argument("--pct_words", type=float, default=0.1, help="share of words swapped per variant (default 0.1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--column", help="the text column (default: the first of the usual names, as --data)")
    p.add_argument("--exclude_original", action="store_true", help="write the variants only")
    p.set_defaults(func=run_command)


def run_command(args) -> int:
    settings = (args.n_per_example, args.pct_words, args.seed, args.column, not args.exclude_original)
    n = augment_file(args.recipe, args.data, args.out, *settings)
    print(f"augment: {n} rows written to {args.out}")
    return 0
