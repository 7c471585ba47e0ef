"""TextBugger (Li et al., NDSS 2019), black-box; as TextAttack's `textbugger` recipe (textbugger_li_2018).

- Importance: drop of the true-class score when the word is deleted (paper, eq. 3; TextAttack: delete).
- Bugs, the best-scoring one per word (the greedy search takes the best candidate of all five): insert a space
  inside the word, delete a character, swap two neighbouring characters (first and last character kept in all
  three, one random position each, as TextAttack), replace characters by look-alikes (Sub-C: one candidate per
  character that has one, TextAttack 0.3.11's one-to-one table of a-z, 0-9, "-" and "'": `characters.HOMOGLYPHS`;
  Li et al.: o -> 0, l -> 1, a -> @), and the word's 5 nearest embedding neighbours (Sub-W; paper: GloVe,
  TextAttack: counter-fitted vectors, ours offline: the counter-fitted 8-neighbour file's first 5, or
  neighbours=glove / model).
- An inserted space: inserted_space="one-word" (default) keeps the two halves one word position, so the search's
  positions, caps and windows count the original words; "split" is TextAttack's: the halves are two words (both
  modified) and every later position moves on by one, so the search's later positions (ranked on the original)
  land one word further back, as in TextAttack.
- Constraints: no repeated modification, stopwords (TextAttack's default list: "nltk"), USE similarity >= 0.8
  against the original, whole texts (paper: cosine; TextAttack: angular, which we keep; offline USE =
  multilingual v3).
- TextDefender's protocol swaps the five bugs for 50 embedding neighbours (its textattack_utils.py), so under
  --protocol textdefender this recipe makes word swaps only (bugs=[embedding]).
"""

from robustft.attacks.attack import Attack
from robustft.attacks.constraints import RepeatModification
from robustft.attacks.recipes.common import neighbour_source, shared_constraints, stopwords
from robustft.attacks.search import GreedyWordImportance
from robustft.attacks.transformations import CharacterEdits, CompositeTransformation
from robustft.errors import ConfigError

BUGS = ("insert-space", "delete", "swap", "homoglyph", "embedding")

CONFIG = {
    "bugs": list(BUGS),  # Li et al.'s five, in TextAttack's order
    "neighbours": "counterfitted",  # Sub-W: offline stand-in for the paper's GloVe / TextAttack's counter-fitted
    "max_candidates": 5,  # Li et al.: top 5 neighbours
    "min_cos": None,  # none in the paper or TextAttack
    "stopwords": "nltk",  # TextAttack's default StopwordModification
    "similarity": {
        "encoder": "use",
        "threshold": 0.8,  # Li et al.: epsilon = 0.8
        "metric": "angular",  # TextAttack's UniversalSentenceEncoder default; paper: cosine
        "window_size": None,
        "compare_against_original": True,
        "skip_text_shorter_than_window": False,
    },
    "max_percent": None,  # none in the paper
    "antonym_filter": False,
    "inserted_space": "one-word",  # the halves stay one word position; "split": two words (TextAttack)
}
INSERTED_SPACE = ("one-word", "split")


def check(config: dict) -> None:
    """The recipe's own settings, checked when the attack's config is validated; one ConfigError naming the key."""
    bugs = config["bugs"]
    if not isinstance(bugs, list | tuple) or not bugs or any(b not in BUGS for b in bugs):
        raise ConfigError(f"recipe_args.bugs: expected a non-empty list of {', '.join(BUGS)}, got {bugs!r}")
    if config["inserted_space"] not in INSERTED_SPACE:
        raise ConfigError(
            f"recipe_args.inserted_space: expected one of {', '.join(INSERTED_SPACE)}, got {config['inserted_space']!r}"
        )


def build(victim, config: dict, mlm=None) -> Attack:
    check(config)
    bugs = config["bugs"]
    parts = []
    characters = [b for b in bugs if b != "embedding"]
    if characters:
        parts.append(CharacterEdits(characters, keep_ends=True))
    if "embedding" in bugs:
        parts.append(neighbour_source(config, victim))
    transformation = parts[0] if len(parts) == 1 else CompositeTransformation(parts)
    constraints = [RepeatModification(), *stopwords(config), *shared_constraints(config)]
    return Attack("textbugger", victim, transformation, constraints, GreedyWordImportance("delete"), config)
