"""The certificates against independent oracles: SAFER's overlaps hand-computed on a tiny neighbour dict and its
Delta against an exact total-variation enumeration of the noise distributions; RanMASK's masked copies of two texts
compared token for token; and (slow) a fine-tuned MiniLM whose every certified example keeps its vote under every
allowed perturbation, enumerated exhaustively with the exact vote shares."""

import itertools
import math
from fractions import Fraction

import pytest
import torch

from robustft.data.tasks import get_task
from robustft.defenses import ranmask as ranmask_defense
from robustft.defenses.registry import defense_for
from robustft.defenses.settings import EnsembleSettings
from robustft.models.factory import load_tokenizer, tiny_bert

SST2, SNLI = get_task("sst2"), get_task("snli")
# asymmetric and of different sizes: "latter" is final's neighbour but has none itself
NEIGHBORS = {"ultimate": ["final"], "final": ["last", "ultimate", "latter"], "last": ["final"]}


@pytest.fixture(scope="module")
def tok():
    return tiny_bert(2, seed=0)[1]


def safer(tok, neighbors=NEIGHBORS):
    return defense_for(EnsembleSettings("safer"), tok, SST2, neighbors)


def overlap_of(defense, tok, word):
    return float(defense.table.overlap[tok.convert_tokens_to_ids(word)])


def test_safer_overlaps_are_the_overlaps_of_two_uniform_distributions(tok):
    d = safer(tok)
    # sets: ultimate {ultimate, final}, final {final, last, ultimate, latter}, last {last, final}, latter {latter}
    # q_v = min over u in S_v of |S_v & S_u| / max(|S_v|, |S_u|), by hand:
    assert overlap_of(d, tok, "ultimate") == pytest.approx(2 / 4)  # u = final: 2 shared of final's 4 (old: 2/2 = 1)
    assert overlap_of(d, tok, "final") == pytest.approx(1 / 4)  # u = latter: {latter} shares 1 of 4
    assert overlap_of(d, tok, "last") == pytest.approx(2 / 4)  # u = final
    assert overlap_of(d, tok, "latter") == 1.0  # no set of its own: it never moves
    ids = tok("the ultimate last film")["input_ids"]
    words, delta = d.delta(ids)
    assert words == 4 and delta == pytest.approx(1 - (1 / 2) * (1 / 2))  # "the", "film" have no set: q = 1


def noise_distribution(sets: list[list[int]]) -> dict[tuple, Fraction]:
    """The exact distribution of SAFER's noise on a text whose word j draws uniformly from sets[j]."""
    size = math.prod(len(s) for s in sets)
    out: dict[tuple, Fraction] = {}
    for combo in itertools.product(*sets):
        out[combo] = out.get(combo, 0) + Fraction(1, size)
    return out


def total_variation(a: dict, b: dict) -> Fraction:
    return sum(abs(a.get(x, 0) - b.get(x, 0)) for x in set(a) | set(b)) / 2


def test_safer_delta_bounds_the_exact_total_variation_of_every_attack_and_is_tight_for_one_word(tok):
    """Exhaustive: every text of two or three words of the tiny dict, every allowed substitution of each word, the
    exact total variation between the two noise distributions <= the certificate's Delta (= when one word moves)."""
    d = safer(tok)
    table = d.table
    vocab = ["ultimate", "final", "last", "latter"]
    set_of = {w: table.ids[i, : table.first[i]].tolist() for w in vocab for i in [tok.convert_tokens_to_ids(w)]}
    word_of = {tok.convert_tokens_to_ids(w): w for w in vocab}
    for n in (1, 2, 3):
        for text in itertools.product(vocab, repeat=n):
            _, delta = d.delta(tok(" ".join(text))["input_ids"])
            clean = noise_distribution([set_of[w] for w in text])
            worst = max(
                total_variation(clean, noise_distribution([set_of[word_of[u]] for u in attacked]))
                for attacked in itertools.product(*(set_of[w] for w in text))
            )
            assert float(worst) <= delta + 1e-6, (text, float(worst), delta)
            if n == 1:
                assert float(worst) == pytest.approx(delta), text  # one word: 1 - q is the largest variation


def test_the_real_tables_ultimate_keeps_at_most_two_ninths_of_finals_noise():
    """MiniLM's vocabulary and the counter-fitted file: "ultimate" {ultimate, final}, "final" 9 members."""
    tok = load_tokenizer("minilm")
    d = defense_for(EnsembleSettings("safer"), tok, SST2)
    assert overlap_of(d, tok, "ultimate") <= 2 / 9 + 1e-6


def masked_copy(defense, tok, text: str, chosen: set[int], pair: str | None = None) -> tuple[list[int], list[int]]:
    """The real tokens and token types of `text`'s copy with the words `chosen` masked (keys pick exactly them)."""
    enc = tok(pair, text, return_tensors="pt") if pair else tok(text, return_tensors="pt")
    ids, mask = enc["input_ids"], enc["attention_mask"]
    types = enc.get("token_type_ids")
    words = defense.words(ids, mask)
    keys = torch.tensor([[0.0 if w in chosen else 1.0 for w in range(int(words.count[0]))]])
    out = defense.mask(ids, mask, types, words, keys)
    real = out["attention_mask"][0].bool()
    kept_types = out["token_type_ids"][0][real].tolist() if types is not None else []
    return out["input_ids"][0][real].tolist(), kept_types


def test_ranmask_copies_of_two_texts_are_identical_exactly_when_every_changed_word_is_masked(tok):
    """Two texts of 7 words differing in 2: "good" -> "gorgeousness" (two pieces) and "great" -> a snowman
    ([UNK]). Every choice of the 4 masked words (round(0.5 * 7), half to even): identical copies iff both changed
    words are masked."""
    settings = EnsembleSettings("ranmask", rate=0.5, min_keep=2)
    d = defense_for(settings, tok, SST2)
    clean, attacked = "a good film with a great cast", "a gorgeousness film with a \u2603 cast"
    assert len(tok.tokenize(attacked)) == len(tok.tokenize(clean)) + 1 and "[UNK]" in tok.tokenize(attacked)
    identical = 0
    for chosen in itertools.combinations(range(7), 4):
        a, _ = masked_copy(d, tok, clean, set(chosen))
        b, _ = masked_copy(d, tok, attacked, set(chosen))
        covered = {1, 5} <= set(chosen)  # words: a good film with a great cast (7 words, "good" 1, "great" 5)
        assert (a == b) == covered, chosen
        assert a.count(tok.mask_token_id) == 4 and len(a) == 9  # [CLS] + 7 words + [SEP], one token each
        identical += covered
    assert identical == math.comb(5, 2)


def test_ranmask_repacks_a_pairs_hypothesis_with_its_token_types(tok):
    d = defense_for(EnsembleSettings("ranmask", rate=0.5, min_keep=1), tok, SNLI)
    ids, types = masked_copy(d, tok, "gorgeousness here", {0}, pair="a premise")
    # [CLS] a premise [SEP] [MASK] here [SEP]: the two pieces of the first hypothesis word are one mask
    assert tok.convert_ids_to_tokens(ids) == ["[CLS]", "a", "premise", "[SEP]", "[MASK]", "here", "[SEP]"]
    assert types == [0, 0, 0, 0, 1, 1, 1]


def test_ranmask_delta_and_radius_follow_theorem_one():
    assert ranmask_defense.masking_delta(10, 1, 1) == pytest.approx(0.1)  # one kept word of ten: the changed one
    assert ranmask_defense.masking_delta(5, 2, 1) == pytest.approx(1 - 6 / 10)  # C(4,2)/C(5,2) by hand
    assert ranmask_defense.masking_delta(10, 1, 0) == 0.0
    assert ranmask_defense.radius(0.99, 10, 1) == 4  # 1 - d/10 > 0.49 up to d = 4; Delta_5 = 0.5 fails
    assert ranmask_defense.radius(0.5, 10, 1) == -1


# The exhaustive oracle on a real classifier. Texts of few movable words, so that every allowed perturbation and
# every noisy copy of it can be enumerated: the vote shares are then exact (the limit of infinitely many copies).
SAFER_TEXTS = [  # (text, true label); "ultimate" {ultimate, final} sits inside final's 9-member set
    ("the ultimate bore .", 0),
    ("an ultimate delight .", 1),
    ("the ultimate film .", 1),
    ("it is a wonderful film .", 1),
    ("a dreadful mess .", 0),
    # constructed: {barely, hardly, scarcely}; the old q (1) certified it and "hardly" flips the tuned model's vote
    ("barely .", 0),
]
RANMASK_TEXTS = [
    ("a charming and funny film .", 1),
    ("a dull , lifeless and boring mess", 0),
    ("one of the best films of the year", 1),
]


def head_tuned_minilm(n: int = 256):
    """The real MiniLM classifier with its pooler and head fitted on n SST-2 training rows (the encoder frozen:
    a fine-tune that fits the time of a test)."""
    from robustft.data.batching import collate, encode, model_inputs
    from robustft.data.tasks import load_examples
    from robustft.models.factory import load_classifier

    model, tok = load_classifier("minilm", label_names=("negative", "positive"))
    items = encode(tok, load_examples("sst2", "train", n=n, seed=0), 32)
    with torch.no_grad():
        batches = [collate(items[i : i + 64], tok.pad_token_id) for i in range(0, len(items), 64)]
        first = torch.cat([model.bert(**model_inputs(b)).last_hidden_state[:, 0] for b in batches])
        labels = torch.cat([b["labels"] for b in batches])
    torch.manual_seed(0)
    head = [*model.bert.pooler.parameters(), *model.classifier.parameters()]
    optimizer = torch.optim.AdamW(head, lr=1e-3, weight_decay=0.1)
    for _ in range(60):
        logits = model.classifier(model.bert.pooler(first.unsqueeze(1)))
        loss = torch.nn.functional.cross_entropy(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval(), tok


class Votes:
    """The classifier's argmax on token rows, each distinct row computed once."""

    def __init__(self, model, pad_id):
        self.model, self.pad_id, self.known = model, pad_id, {}

    def __call__(self, rows: list[tuple]) -> list[int]:
        todo = sorted({r for r in rows if r not in self.known}, key=len)
        for i in range(0, len(todo), 64):
            chunk = todo[i : i + 64]
            width = max(map(len, chunk))
            ids = torch.tensor([list(r) + [self.pad_id] * (width - len(r)) for r in chunk])
            mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in chunk])
            with torch.no_grad():
                predicted = self.model(input_ids=ids, attention_mask=mask).logits.argmax(-1).tolist()
            self.known.update(zip(chunk, predicted, strict=True))
        return [self.known[r] for r in rows]


def shares(votes: list[int]) -> list[Fraction]:
    return [Fraction(votes.count(c), len(votes)) for c in (0, 1)]


def safer_exact_shares(defense, votes: Votes, ids: list[int]) -> list[Fraction]:
    """Exact vote shares of SAFER's ensemble on `ids`: every combination of its words' draws, each equally likely."""
    row = torch.tensor([ids])
    whole = defense.words(row, torch.ones_like(row)).whole[0].tolist()
    table = defense.table
    options = [table.ids[t, : table.first[t]].tolist() if w else [t] for t, w in zip(ids, whole, strict=True)]
    return shares(votes(list(itertools.product(*options))))


def safer_attacks(defense, ids: list[int]):
    """Every text the certificate covers: each one-token word replaced by any member of its first-order set."""
    row = torch.tensor([ids])
    whole = defense.words(row, torch.ones_like(row)).whole[0].tolist()
    table = defense.table
    options = [table.ids[t, : table.first[t]].tolist() if w else [t] for t, w in zip(ids, whole, strict=True)]
    return itertools.product(*options)


def check_safer(defense, votes: Votes, tok, texts) -> list[str]:
    """Per text: certified from the exact share p; then every attacked text's exact shares move by at most Delta
    (the theorem) and a certified text keeps its vote. Returns the violations."""
    found, certified = [], 0
    for text, label in texts:
        ids = tok(text)["input_ids"]
        clean = safer_exact_shares(defense, votes, ids)
        verdict = defense.certificate(float(clean[label]), ids)
        certified += verdict["certified"]
        for attacked in safer_attacks(defense, ids):
            moved = safer_exact_shares(defense, votes, list(attacked))
            shift = max(abs(float(a - b)) for a, b in zip(moved, clean, strict=True))
            words = tok.decode(list(attacked), skip_special_tokens=True)
            if shift > verdict["delta"] + 1e-9:
                found.append(f"{text!r} -> {words!r}: vote shares moved {shift:.3f} > Delta {verdict['delta']:.3f}")
            if verdict["certified"] and moved[label] <= 0.5:
                found.append(f"{text!r} certified (p={float(clean[label]):.3f}) but {words!r} flips it")
    return found + ([] if certified else ["no SAFER text certified: the oracle checked nothing"])


def ranmask_exact_shares(defense, votes: Votes, tok, text: str) -> tuple[list[Fraction], int]:
    """Exact vote shares of RanMASK's ensemble on `text` (every choice of masked words, through the defense's own
    masking) and its number of words."""
    enc = tok(text, return_tensors="pt")
    words = defense.words(enc["input_ids"], enc["attention_mask"])
    h = int(words.count[0])
    masked = int(defense.masked_count(words.count)[0])
    rows = []
    for chosen in itertools.combinations(range(h), masked):
        keys = torch.tensor([[0.0 if w in chosen else 1.0 for w in range(h)]])
        out = defense.mask(enc["input_ids"], enc["attention_mask"], None, words, keys)
        rows.append(tuple(out["input_ids"][0][out["attention_mask"][0].bool()].tolist()))
    return shares(votes(rows)), h


def check_ranmask(defense, votes: Votes, tok, texts, neighbors) -> list[str]:
    """Per text: its radius from the exact p; every text with up to max(radius, 1) words replaced by
    counter-fitted neighbours of any piece count (the word count kept) moves the exact shares by at most Delta_d,
    and one within the radius keeps the vote."""
    found, certified = [], 0
    for text, label in texts:
        clean, h = ranmask_exact_shares(defense, votes, tok, text)
        verdict = defense.certificate(float(clean[label]), tok(text)["input_ids"])
        certified += verdict["radius"] >= 1
        split = text.split()
        choices = [[w, *neighbors.get(w, [])] for w in split]
        for d in range(1, max(verdict["radius"], 1) + 1):
            delta = ranmask_defense.masking_delta(h, verdict["kept"], d)
            for at in itertools.combinations(range(len(split)), d):
                for subs in itertools.product(*(choices[i][1:] for i in at)):
                    attacked = list(split)
                    for i, s in zip(at, subs, strict=True):
                        attacked[i] = s
                    moved, h2 = ranmask_exact_shares(defense, votes, tok, " ".join(attacked))
                    if h2 != h:
                        continue  # the word count changed: outside the threat model
                    shift = max(abs(float(a - b)) for a, b in zip(moved, clean, strict=True))
                    if shift > delta + 1e-9:
                        found.append(f"{text!r} -> {' '.join(attacked)!r}: shares moved {shift:.3f} > {delta:.3f}")
                    if d <= verdict["radius"] and moved[label] <= 0.5:
                        found.append(f"{text!r} certified at {verdict['radius']} but {' '.join(attacked)!r} flips")
    return found + ([] if certified else ["no RanMASK text certified at d >= 1: the oracle checked nothing"])


@pytest.mark.slow
def test_no_certified_example_flips_under_any_allowed_perturbation_of_a_tuned_minilm():
    from robustft import resources

    model, tok = head_tuned_minilm()
    votes = Votes(model, tok.pad_token_id)
    safer_defense = defense_for(EnsembleSettings("safer"), tok, SST2)
    ranmask = defense_for(EnsembleSettings("ranmask"), tok, SST2)
    problems = check_safer(safer_defense, votes, tok, SAFER_TEXTS)
    problems += check_ranmask(ranmask, votes, tok, RANMASK_TEXTS, resources.counterfitted_neighbors())
    assert not problems, "\n".join(problems)
