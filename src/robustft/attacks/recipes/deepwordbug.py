"""DeepWordBug (Gao et al., IEEE S&P Workshops 2018); as TextAttack's `deepwordbug` recipe (deepwordbug_gao_2018).

- Importance: drop of the true-class score when the word becomes the unknown token (TextAttack's greedy WIR
  default; Gao et al. score tokens by their temporal head/tail/combined scores of the output, which no offline
  victim-agnostic code reproduces: importance="delete" or "mask" switch it).
- Edits, the best-scoring one per word: swap two neighbouring characters, substitute a random letter, delete a
  random character, insert a random letter (one random position each, any character, TextAttack's
  use_all_transformations=True; letters: TextAttack's a-z and A-Z). TextDefender's protocol draws 50 random edits
  per word instead (its RandomCompositeTransformation, total_count=50): draws=50.
- Constraints: no repeated modification, stopwords (TextAttack's default list: "nltk"), Levenshtein distance of the
  whole text to the original <= 30 characters (Gao et al.'s epsilon = 30; TextAttack LevenshteinEditDistance(30)).
"""

from robustft.attacks.attack import Attack
from robustft.attacks.constraints import LevenshteinEditDistance, RepeatModification
from robustft.attacks.recipes.common import shared_constraints, stopwords
from robustft.attacks.search import GreedyWordImportance
from robustft.attacks.transformations import CharacterEdits
from robustft.attacks.transformations.characters import LETTERS
from robustft.errors import ConfigError

EDITS = ("swap", "substitute", "delete", "insert")

CONFIG = {
    "edits": list(EDITS),  # Gao et al.'s four, in TextAttack's order
    "letters": "ascii_letters",  # TextAttack: string.ascii_letters; "ascii_lowercase": a-z only
    "draws": None,  # one random edit of each kind per word (TextAttack); TextDefender: 50 random draws
    "importance": "unk",  # TextAttack's GreedyWordSwapWIR default
    "max_edit_distance": 30,  # Gao et al.: epsilon = 30; TextAttack: LevenshteinEditDistance(30)
    "stopwords": "nltk",  # TextAttack's default StopwordModification
    "max_percent": None,  # none in the paper
    "similarity": None,  # none in the paper
    "antonym_filter": False,
}


def check(config: dict) -> None:
    """The recipe's own settings, checked when the attack's config is validated; one ConfigError naming the key."""
    edits = config["edits"]
    if not isinstance(edits, list | tuple) or not edits or any(e not in EDITS for e in edits):
        raise ConfigError(f"recipe_args.edits: expected a non-empty list of {', '.join(EDITS)}, got {edits!r}")
    if config["letters"] not in LETTERS:
        raise ConfigError(f"recipe_args.letters: expected one of {', '.join(LETTERS)}, got {config['letters']!r}")


def build(victim, config: dict, mlm=None) -> Attack:
    check(config)
    transformation = CharacterEdits(config["edits"], keep_ends=False, letters=config["letters"], draws=config["draws"])
    constraints = [
        RepeatModification(),
        *stopwords(config),
        LevenshteinEditDistance(config["max_edit_distance"]),
        *shared_constraints(config),
    ]
    search = GreedyWordImportance(config["importance"])
    return Attack("deepwordbug", victim, transformation, constraints, search, config)
