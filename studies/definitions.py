"""What RESULTS.md says of each published study beyond its numbers: the question it asks, when its settings were
committed (SPEC section 7: pre-registration; read from `git log -- configs/<name>.yaml` against the first commit of
docs/results/<name>, and written here so that the page regenerates without the history), and what a reader must
know where its numbers are (post hoc decisions, selection sets). Facts of the record, not computed."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Study:
    question: str
    registered: str  # when the settings were committed, against the first result
    disclosures: tuple[str, ...] = field(default_factory=tuple)
    post_hoc: str = ""  # what was decided after its first results, in a few words (beside its numbers)
    # method pairs (A, B) its settings registered beside those with the baseline: the report gives A - B paired
    comparisons: tuple[tuple[str, str], ...] = ()
    # by task, the study that traces its baselines' clean-vs-robust frontiers (the report's matched-clean rows)
    frontier_studies: tuple[tuple[str, str], ...] = ()


BUILT_IN = "a built-in preset (src/robustft/bench/presets.py), not pre-registered as a study"
# The presets' IM leaves `im.grad` out; these pages were trained before its default became the exact gradient.
EXPLICIT_GRADIENT = (
    "Its IM-BERT was trained with the explicit (straight-through) gradient, the default until issue 54; the preset "
    'now trains the exact (unrolled) one, so rerunning it gives other IM numbers (docs/im_bert.md, "Which gradient '
    'trains").',
)

STUDIES = {
    "quick": Study(
        "BERT, IM-BERT and RIFT on 1,000 SST-2 examples, one seed (the smoke preset)",
        BUILT_IN,
        (
            "Its IM-BERT was trained with the exact (unrolled) gradient, the default since issue 54; its config.json "
            "shows `im: {}` because the code of that run (15f9463) recorded the mode only beside other IM settings "
            '(docs/im_bert.md, "Which gradient trains").',
        ),
    ),
    "advglue": Study("IM-BERT against BERT on the five AdvGLUE tasks, one seed", BUILT_IN, EXPLICIT_GRADIENT),
    "im-grad-pilot": Study(
        "IM-BERT's two gradient settings, a pilot (no claim)",
        "configs/im-grad-pilot.yaml committed in 9a4d4f8 (2026-11-30), before its first result (3503dce)",
    ),
    "im-powered": Study(
        "IM-BERT settings against BERT on SST-2 (9k subset), three seeds: TextFooler, PWWS, AdvGLUE SST-2",
        "configs/im-powered.yaml committed in 9a4d4f8 (2026-11-30; a draft in 46cf17a); `eval_precision: fp32` "
        "added in aae49b7 (2026-12-01 05:30), before its first published result (1c3c862, 2026-12-01 10:01)",
    ),
    "im-advglue": Study(
        "IM-BERT (dt 0.5, picked on the selection set by `pick_by_dev`) against BERT on the five AdvGLUE tasks, "
        "three seeds",
        "configs/im-advglue.yaml written by `studies.pick_by_dev` and committed in 5fcbbe4 (2026-12-01) "
        "together with its first jobs' results: not committed before its first numbers existed",
        (
            'Its MNLI and QQP "dev" are the selection sets: offline, both tasks\' dev split is the same '
            'glue_subsets sample as the subset-dev that chose each model\'s epoch (labelled "(selection)" in its '
            "tables). AdvGLUE is scored on its public dev set.",
        ),
    ),
    "im-lowresource-16shot": Study(
        "IM-BERT against BERT after 16 examples per class (five k-shot samples) on SST-2",
        "configs/im-lowresource-16shot.yaml committed in f5b66c5 (2026-12-01), before its first result (d2fc11e)",
    ),
    "im-lowresource-1000": Study(
        "IM-BERT against BERT after 1,000 SST-2 examples, three seeds",
        "configs/im-lowresource-1000.yaml committed in f5b66c5 (2026-12-01; report_with added in df5b510), before "
        "its first result (31e1edc)",
        ("Its report also reads im-lowresource-16shot's runs: those 16/class rows are listed once, there.",),
    ),
    "rift-1000": Study(
        "RIFT against adversarial fine-tuning on 1,000 SST-2 examples, three seeds, PWWS and genetic",
        "configs/rift-1000.yaml committed in 60c8acd (2026-12-02 14:03), before its first result (7bdf081)",
        (
            "Post hoc: FreeLB++ with 10 steps was added in 574cf83 (2026-12-02 22:25) after the study started, "
            "decided on seed 0's training and dev data only (the 30-step cell did not fit); the 30-step FreeLB++ "
            "has one seed.",
        ),
        "FreeLB++ 10 steps added after it started",
        frontier_studies=(("sst2", "configs/rift-frontier-sst2.yaml"),),
    ),
    "rift-frontier-sst2": Study(
        "RIFT at matched clean accuracy: each adversarial baseline of rift-1000 at two more strengths (seed 0), "
        "RIFT's three seeds read against each clean-vs-robust frontier, SST-2, PWWS and genetic",
        "configs/rift-frontier-sst2.yaml committed in 12cad03 (2026-12-05 19:05), before its first result; "
        "`report_with: [rift-1000]` (reporting only, hashed into no job) added in f539a51 (2026-12-06 18:27) while "
        "its first trainings ran, before any of its numbers existed",
        (
            "Its frontiers join the rift-1000 seed-0 cell at each baseline's default strength with the 2x and 4x "
            "cells trained here. FreeLB++ with 30 steps (one seed in rift-1000) has no frontier, so the joint verdict "
            "at matched clean accuracy covers it by dominance only (the joint row names it). The analysis rules "
            "(dominance, the best available frontier, the frontier's seed spread where a strength has more seeds, "
            "Holm's correction for the joint refutation) were registered in the config's header on 2026-12-07, after "
            "18 of its 50 jobs had finished and before any further number existed; they replace the first analysis.",
        ),
    ),
    "rift-1000-snli": Study(
        "RIFT against adversarial fine-tuning on 1,000 SNLI examples at the published epochs, three seeds",
        "configs/rift-1000-snli.yaml committed in b889a00 (2026-12-03 16:08), before its first result (a769a3a)",
    ),
    "rift-1000-snli-fit": Study(
        "RIFT against adversarial fine-tuning on 1,000 SNLI examples, every method trained until its dev accuracy "
        "stops improving, three seeds",
        "configs/rift-1000-snli-fit.yaml committed in 2cd9761 (2026-12-03 22:52)",
        (
            "Post hoc: its protocol was fixed after the baselines' SNLI test-attack results of rift-1000-snli were "
            "committed (PGD seed 0 in 881e58c, 2026-12-03 18:45; TRADES seed 0 in b9b86ef, 22:34). Its config says "
            "the change was decided from dev curves only; its comparisons are still not pre-registered.",
        ),
        "protocol fixed after the baselines' SNLI attack results",
    ),
    "im-exact-minilm": Study(
        "IM-BERT trained with the exact (unrolled) gradient against BERT and EX-BERT on MiniLM SST-2 (1,500 "
        "examples), five seeds: AdvGLUE SST-2 and TextFooler",
        "configs/im-exact-minilm.yaml committed in 51d7e95 (2026-12-05), before its first result",
        (
            "Its header registers two comparisons, im-exact - bert and im-exact - ex-bert; the second is listed as "
            "IM - EX-BERT (no paper's size, so a direction: higher, lower or no detectable difference).",
        ),
        comparisons=(("im-exact", "ex-bert"),),
    ),
    "mpnet-study": Study(
        "IM-BERT (exact gradient) against BERT and EX-BERT at base size (MPNet, 110M parameters) on SST-2 (1,000 "
        "examples), three seeds: AdvGLUE SST-2 and TextFooler",
        "configs/mpnet-study.yaml committed in 8e5c64f (2026-12-05), before its first result",
        (
            "Its settings name EX-BERT (the paper's explicit connection around the same layers) beside BERT and "
            "IM-BERT, as im-exact-minilm's, whose header registers im-exact - ex-bert; that comparison is listed here "
            "too (a direction: higher, lower or no detectable difference).",
        ),
        comparisons=(("im-exact", "ex-bert"),),
    ),
    "textdefender": Study(
        "Ten defenses under the TextDefender protocol on 1,000 SST-2 examples, one seed: clean accuracy, TextFooler, "
        "BERT-Attack, TextBugger and PWWS on one 200-example test sample, SAFER's and RanMASK's certified accuracy",
        "the `textdefender` preset of src/robustft/bench/presets.py (issue 55), committed in 960462a (2026-12-05) "
        "before any of its jobs ran",
        (
            "One seed: its rows are a map of the defenses on one model each and carry no verdict.",
            "TextDefender's own BERT-base rows are not shown beside it: no SST-2 table of theirs was found in a "
            'source this project could read (docs/defenses.md, "The TextDefender table").',
        ),
    ),
}


def study_of(name: str) -> Study:
    return STUDIES.get(name) or Study(f"the `{name}` preset", "no config commit recorded for it")
