"""RIFT at matched clean accuracy in the report, by the rules registered in configs/rift-frontier-sst2.yaml:
frontiers found in the runs (one method, one knob, 3+ strengths), RIFT's seeds read against each best available
frontier example by example, dominance, Holm's correction for the joint refutation, and the registered extension's
chooser of the strengths to train with more seeds."""

import pytest

from robustft.bench.matrix import expand
from robustft.config import BenchConfig, build_config
from robustft.evaluation import verdicts
from robustft.report.claims.rift_frontier import add_frontier, frontiers, judge_components
from robustft.report.claims.rift_plugin import dominance_table, frontier_plot, frontier_table
from robustft.report.rendering.tables import signed_interval
from studies.frontier_seeds import choose, extension_config
from studies.results_page import Preset, bottom_line, study_table

PGD = {"im_adversary_grad": "exact", "init_mag": 0.05, "steps": 5}
FREELB = {"im_adversary_grad": "exact", "init_mag": 0.05, "step_size": 0.03}
# label: (method, method_args, seed-0 clean test accuracy, seed-0 accuracy under PWWS)
BASELINES = {
    "pgd": ("pgd", PGD | {"step_size": 0.03}, 0.86, 0.30),
    "pgd-x2": ("pgd", PGD | {"step_size": 0.06}, 0.82, 0.35),
    "pgd-x4": ("pgd", PGD | {"step_size": 0.12}, 0.78, 0.40),
    "freelbpp": ("freelbpp", FREELB | {"steps": 30}, 0.85, 0.31),  # two values of `steps`: no frontier
    "freelbpp-10": ("freelbpp", FREELB | {"steps": 10}, 0.84, 0.32),
    "ascc": ("ascc", {"beta": 4.0, "warmup": [0.1, 0.55]}, 0.83, 0.33),  # a list-valued setting is no strength
    "ascc-w": ("ascc", {"beta": 4.0, "warmup": [0.2, 0.55]}, 0.82, 0.34),
    "ascc-v": ("ascc", {"beta": 4.0, "warmup": [0.3, 0.55]}, 0.81, 0.35),
}
RIFT = [(0.80, 0.45), (0.81, 0.44), (0.83, 0.43)]
N_CLEAN, N_ATTACK = 400, 200  # every accuracy above is a whole number of examples of these


def right(n: int, accuracy: float, shift: int = 0) -> dict[str, bool]:
    """n examples, round(accuracy * n) of them right, starting at `shift` (wrapping)."""
    k = round(accuracy * n)
    return {f"e{i}": (i - shift) % n < k for i in range(n)}


def method(name: str, args: dict, seeds=("s0",)) -> dict:
    setting = {"model": "minilm", "task": "sst2", "size": "n=1000", "seeds": list(seeds)}
    return {"arch": "plain", "method": name, "method_args": args} | setting


def summary(rift=RIFT, finished=True, drop=(), baselines=BASELINES, dev=None) -> tuple[dict, dict]:
    """A report summary and the per-example outcomes of its runs (by run name): seed 0 of every baseline, three
    RIFT seeds; `drop`: baselines not attacked yet; `dev`: {label: seed-0 dev accuracy} (RIFT: one per seed)."""
    outcomes: dict[str, dict] = {}

    def row(label: str, kind: str, accuracies: list[float], n: int) -> dict:
        seeds = []
        for i, a in enumerate(accuracies):
            name = f"{label}-{kind}-s{i}"
            outcomes[name] = right(n, a, shift=7 * i)
            seeds.append({"seed": f"s{i}", "accuracy": a, "n": n, "run": name})
        return {"method": label, "seeds": seeds}

    methods = {label: method(m, args) for label, (m, args, _, _) in baselines.items()}
    methods["rift"] = method("rift-snli", {"alpha": 0.7, "beta": 5.0}, seeds=("s0", "s1", "s2"))
    kept = {label: b for label, b in baselines.items() if label not in drop}
    clean = [row(label, "clean", [c], N_CLEAN) for label, (_, _, c, _) in baselines.items()]
    attack = [row(label, "pwws", [r], N_ATTACK) for label, (_, _, _, r) in kept.items()]
    evaluations = [
        {"kind": "clean", "task": "sst2", "split": "test", "recipe": None, "title": "sst2 test", "rows": clean},
        {"kind": "attack", "task": "sst2", "split": "test", "recipe": "pwws", "title": "pwws", "rows": attack},
    ]
    clean.append(row("rift", "clean", [c for c, _ in rift], N_CLEAN))
    attack.append(row("rift", "pwws", [r for _, r in rift], N_ATTACK))
    if dev:
        dev_rows = [row(label, "dev", a if isinstance(a, list) else [a], 872) for label, a in dev.items()]
        evaluations.append({"kind": "clean", "task": "sst2", "split": "dev", "recipe": None, "rows": dev_rows})
    s = {
        "methods": methods,
        "evaluations": evaluations,
        "study": {"finished": finished, "runs_committed": True, "why": "" if finished else "still running"},
        "joint_claims": [{"compared": "rift - each of pgd-x2", "task": "sst2", "status": verdicts.NO_VERDICT}],
    }
    return s, outcomes


def added(*args, **kwargs) -> dict:
    s, outcomes = summary(*args, **kwargs)
    add_frontier(s, outcomes.get)
    return s


def test_a_frontier_is_one_method_varied_in_one_knob_at_three_strengths():
    found = frontiers(summary()[0]["methods"])
    assert found == [{"name": "pgd", "knob": "step_size", "labels": ["pgd", "pgd-x2", "pgd-x4"]}]


def test_rift_is_read_against_the_frontier_at_its_own_clean_accuracy():
    s = added()
    [component] = s["frontier"]
    # the frontier at 80, 81 and 83% clean: 37.5, 36.25 and 33.75% robust (a trade-off: every point kept)
    assert component["frontier_at"] == pytest.approx([0.375, 0.3625, 0.3375])
    assert component["per_seed"] == pytest.approx([0.075, 0.0775, 0.0925])
    assert component["difference"] == pytest.approx(0.0817, abs=1e-4)
    assert component["status"] == verdicts.REPRODUCED and component["ci95"][0] > 0
    assert component["n_seeds"] == 3 and component["n"] == N_ATTACK
    assert component["carries"] == "RIFT's seeds and example noise only"  # one seed a strength, said so
    [joint] = [j for j in s["joint_claims"] if j.get("at_matched_clean")]  # the single-strength row is replaced
    assert len(s["joint_claims"]) == 1 and joint["compared"] == "rift - each of pgd (step_size)"
    assert joint["status"] == verdicts.REPRODUCED
    # the baselines on no frontier are named: only dominance covers them
    assert joint["matched_clean"].endswith(
        "on no frontier (dominance only): ascc, ascc-v, ascc-w, freelbpp, freelbpp-10"
    )
    [table_row] = frontier_table(s).rows
    assert table_row[2] == "pgd-x4 (0.12): 78.0 / 40.0; pgd-x2 (0.06): 82.0 / 35.0; pgd (0.03): 86.0 / 30.0"
    assert table_row[5] == signed_interval(component) and table_row[5].startswith("+8.2 [")


def test_a_strength_beaten_on_both_axes_leaves_the_frontier():
    # 2x loses to the default on clean and robust accuracy (as PGD's did in the study): the frontier runs from 4x
    # straight to the default, so at 80% clean it is 40 - (2/8) * 10 = 37.5%, at 83% 40 - (5/8) * 10 = 33.75%
    pgd_x2 = ("pgd", PGD | {"step_size": 0.06}, 0.82, 0.28)
    s = added(baselines=BASELINES | {"pgd-x2": pgd_x2})
    [component] = s["frontier"]
    assert component["frontier_at"] == pytest.approx([0.375, 0.3625, 0.3375])  # 81%: 40 - (3/8) * 10
    # (the old 2x lay on that line, so the values alone would not show it left: the weights do)
    assert component["weights"][0] == pytest.approx({"pgd-x4": 0.75, "pgd": 0.25})
    assert "pgd-x2 (0.06): 82.0 / 28.0 (dropped: beaten on both)" in frontier_table(s).rows[0][2]


def test_below_the_least_accurate_point_kept_the_frontier_is_flat():
    # 2x and 4x both lose to the default: RIFT (80-83% clean) is read against the default's 30% robust, as the
    # issue's PGD (+4.6 / +4.7 against the default rather than +4.9 / +5.9 against the line through all points)
    weaker = {
        "pgd-x2": ("pgd", PGD | {"step_size": 0.06}, 0.82, 0.28),
        "pgd-x4": ("pgd", PGD | {"step_size": 0.12}, 0.78, 0.25),
    }
    [component] = added(baselines=BASELINES | weaker)["frontier"]
    assert component["frontier_at"] == pytest.approx([0.30, 0.30, 0.30])
    assert component["difference"] == pytest.approx((0.45 + 0.44 + 0.43) / 3 - 0.30)


def test_a_baseline_better_clean_and_under_attack_refutes_the_claim_without_a_frontier():
    # freelbpp-10: 84% clean (RIFT 80-83%) and 47% under PWWS (RIFT 43-45%); it traces no frontier
    better = ("freelbpp", FREELB | {"steps": 10}, 0.84, 0.47)
    s = added(baselines=BASELINES | {"freelbpp-10": better})
    assert s["frontier"][0]["status"] == verdicts.REPRODUCED  # the frontier component alone holds
    found = {d["baseline"]: d for d in s["dominance"]}
    assert found["freelbpp-10"]["dominates"] and found["freelbpp-10"]["refutes"]
    assert found["freelbpp-10"]["clean"]["difference"] == pytest.approx(0.8133 - 0.84, abs=1e-4)
    assert found["freelbpp-10"]["attack"]["difference"] == pytest.approx(0.44 - 0.47)
    assert not found["pgd"]["dominates"] and not found["freelbpp"]["dominates"]  # freelbpp: 31% under attack
    [joint] = s["joint_claims"]
    assert joint["status"] == verdicts.NOT_REPRODUCED and "freelbpp-10/pwws" in joint["verdict"]
    assert joint["failing"]["dominated by"] == ["freelbpp-10/pwws"]
    rows = {r[0]: r for r in dominance_table(s).rows}
    assert rows["rift - freelbpp-10"][4] == "yes" and rows["rift - pgd"][4] == "no"


def test_dominance_while_the_study_runs_gives_no_verdict():
    better = ("freelbpp", FREELB | {"steps": 10}, 0.84, 0.47)
    s = added(baselines=BASELINES | {"freelbpp-10": better}, finished=False)
    found = {d["baseline"]: d for d in s["dominance"]}
    assert found["freelbpp-10"]["dominates"] and not found["freelbpp-10"]["refutes"]
    assert s["joint_claims"][0]["status"] == verdicts.NO_VERDICT


def component(name: str, p: float, ci: list[float]) -> dict:
    d = (ci[0] + ci[1]) / 2
    result = {"difference": d, "ci95": ci, "p_below": p, "n_seeds": 3, "basis": "seeds", "n": 1000, "df": 2.0}
    spread = {"seed": 1e-4, "example": 1e-4, "residual": 1e-4}
    return result | {"rift": "rift", "task": "sst2", "baseline": name, "recipe": "pwws", "spread": spread}


def test_a_component_is_refuted_only_after_holm_s_correction_over_all_components():
    finished = {"finished": True, "runs_committed": True, "why": ""}
    # by hand, m = 4: p = .02 alone is below .025 (its interval below 0) but Holm's first level is .05/4 = .0125
    rows = [component("a", 0.02, [-0.05, -0.001]), component("b", 0.4, [-0.02, 0.03])]
    rows += [component("c", 0.9, [0.01, 0.05]), component("d", 0.6, [-0.03, 0.04])]
    judged = {r["baseline"]: r for r in judge_components(rows, finished)}
    assert judged["a"]["status"] == verdicts.INCONCLUSIVE and "not after Holm's correction" in judged["a"]["verdict"]
    assert judged["a"]["holm_level"] == pytest.approx(0.0125)
    assert judged["c"]["status"] == verdicts.REPRODUCED and judged["b"]["status"] == verdicts.INCONCLUSIVE
    # p = .01 <= .0125: rejected, and then b (.4 > .05/3) stops the step-down
    rows[0] = component("a", 0.01, [-0.05, -0.001])
    judged = {r["baseline"]: r for r in judge_components(rows, finished)}
    assert judged["a"]["status"] == verdicts.NOT_REPRODUCED and judged["b"]["status"] == verdicts.INCONCLUSIVE
    # a component without a result still counts in m (as p = 1): .02 against .05/2, not .05/1
    lone = [component("a", 0.03, [-0.05, 0.001]), {**component("z", 0.5, [0, 0]), "ci95": None, "p_below": None,
                                                   "reasons": ["no seed-0 result yet for z"]}]  # fmt: skip
    judged = {r["baseline"]: r for r in judge_components(lone, finished)}
    assert judged["a"]["status"] == verdicts.INCONCLUSIVE and judged["z"]["status"] == verdicts.NO_VERDICT


def test_a_rift_seed_outside_the_frontier_gets_no_verdict_naming_it():
    s = added(rift=[(0.80, 0.45), (0.90, 0.44), (0.83, 0.43)])
    [component] = s["frontier"]
    assert component["status"] == verdicts.NO_VERDICT
    assert (
        "RIFT seed 1 (s1): clean accuracy 90.0%" in component["verdict"] and "not extrapolated" in component["verdict"]
    )
    assert s["joint_claims"][0]["status"] == verdicts.NO_VERDICT


def test_a_strength_or_a_rift_seed_without_its_result_and_an_unfinished_study_get_no_verdict():
    # a fourth strength not attacked yet: three points would give an interval, but not on the frontier registered
    s = added(drop=("pgd-x8",), baselines=BASELINES | {"pgd-x8": ("pgd", PGD | {"step_size": 0.24}, 0.74, 0.45)})
    assert s["frontier"][0]["status"] == verdicts.NO_VERDICT
    assert "no seed-0 result with examples yet for pgd-x8" in s["frontier"][0]["verdict"]
    s, outcomes = summary(rift=RIFT[:2])  # RIFT trained seeds 0-2, seed 2 has no result
    add_frontier(s, outcomes.get)
    assert s["frontier"][0]["status"] == verdicts.NO_VERDICT
    assert "rift has no clean test or pwws result with examples for s2" in s["frontier"][0]["verdict"]
    s = added(finished=False)
    assert s["frontier"][0]["status"] == verdicts.NO_VERDICT and "still running" in s["frontier"][0]["verdict"]
    assert s["frontier"][0]["ci95"][0] > 0  # the numbers are there; the verdict waits for the study


def test_runs_without_a_frontier_leave_the_summary_as_it_was():
    s, outcomes = summary()
    for label in ("pgd-x2", "pgd-x4"):
        del s["methods"][label]
    before = [dict(j) for j in s["joint_claims"]]
    add_frontier(s, outcomes.get)
    assert "frontier" not in s and "dominance" not in s and s["joint_claims"] == before


def test_the_report_plots_each_frontier_with_rift_s_seeds(tmp_path):
    s = added()
    assert frontier_plot(s, tmp_path) == "frontier.png"
    assert (tmp_path / "frontier.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    del s["frontier"]
    assert frontier_plot(s, tmp_path / "none") is None


def test_the_results_page_reads_the_joint_row_from_its_frontier_components(tmp_path):
    s = added()
    report = s | {"claims": [], "methods": s["methods"]}
    preset = Preset("rift-frontier-sst2", tmp_path, {"jobs": 50, "finished": 50}, report, "finished")
    [row] = bottom_line([preset], tmp_path).rows
    assert row[3] == "1 of 1 baseline/attack intervals above 0" and row[4] == f"3 x {N_ATTACK} (pwws)"
    assert row[5] == verdicts.REPRODUCED and row[6] == "settled at this scale"
    table = study_table(preset, {preset.name: preset})
    assert "rift - pgd (step_size) frontier" in table and "carries RIFT's seeds and example noise only" in table


DEV = {"pgd": 0.844, "pgd-x2": 0.794, "pgd-x4": 0.764, "rift": [0.805, 0.792, 0.804]}  # the study's seed-0 dev


def test_the_extension_chooses_the_strengths_bracketing_rift_s_mean_dev_accuracy():
    s, _ = summary(dev=DEV)
    [choice] = choose(s)
    assert choice["rift_dev"] == pytest.approx(0.8003, abs=1e-4)
    assert choice["strengths"] == ["pgd-x2", "pgd"]  # 79.4 <= 80.0 <= 84.4
    s, _ = summary(dev=DEV | {"rift": [0.75, 0.75, 0.76]})
    assert choose(s)[0]["strengths"] is None  # below every strength: none brackets it
    s, _ = summary(dev={k: v for k, v in DEV.items() if k != "pgd-x4"})
    assert choose(s)[0]["missing"] == ["pgd-x4"] and choose(s)[0]["strengths"] is None


def test_the_extension_s_config_adds_seeds_1_and_2_of_the_study_s_chosen_strengths_only():
    study = {
        "name": "rift-frontier-sst2",
        "report_with": ["rift-1000"],
        "model": "minilm",
        "tasks": ["sst2"],
        "sizes": [1000],
        "seeds": [0],
        "baseline": "pgd-x2",
        "methods": {"pgd-x2": {"method": "pgd", "method_args": {"step_size": 0.06}},
                    "pgd-x4": {"method": "pgd", "method_args": {"step_size": 0.12}}},
        "train": {"train_split": "subset-train"},
        "evals": [{"task": "{task}", "split": "dev"}],
    }  # fmt: skip
    s, _ = summary(dev=DEV)
    config, notes = extension_config(study, choose(s))
    assert (
        config["seeds"] == [1, 2]
        and list(config["methods"]) == ["pgd-x2"]
        and config["name"] == study["name"] + "-seeds"
    )
    assert notes == ["pgd (step_size): pgd is not this study's; it has seeds ['s0']"]
    jobs = expand(build_config(BenchConfig, [], [], base=("x", config)))  # the plan only: nothing is trained
    assert [j.id for j in jobs if j.kind == "train"] == ["pgd-x2/sst2/n1000/s1", "pgd-x2/sst2/n1000/s2"]
