"""RIFT at matched clean accuracy in the report: frontiers found in the runs (one method, one knob, 3+ strengths),
RIFT's seeds read against them, one joint verdict replacing the one against single strengths."""

import pytest

from robustft.evaluation import verdicts
from robustft.publish.results_page import Preset, bottom_line, study_table
from robustft.report.claims.rift_frontier import add_frontier, frontiers
from robustft.report.rendering.plots import frontier_plot
from robustft.report.rendering.tables import frontier_table, signed_interval

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


def method(name: str, args: dict, seeds=("s0",)) -> dict:
    setting = {"model": "minilm", "task": "sst2", "size": "n=1000", "seeds": list(seeds)}
    return {"arch": "plain", "method": name, "method_args": args} | setting


def row(label: str, accuracies: list[float], n: int) -> dict:
    return {"method": label, "seeds": [{"seed": f"s{i}", "accuracy": a, "n": n} for i, a in enumerate(accuracies)]}


def summary(rift=RIFT, finished=True, drop=(), baselines=BASELINES) -> dict:
    methods = {label: method(m, args) for label, (m, args, _, _) in baselines.items()}
    methods["rift"] = method("rift-snli", {"alpha": 0.7, "beta": 5.0}, seeds=("s0", "s1", "s2"))
    kept = {label: b for label, b in baselines.items() if label not in drop}
    clean = [row(label, [c], 1821) for label, (_, _, c, _) in baselines.items()] + [
        row("rift", [c for c, _ in rift], 1821)
    ]
    attack = [row(label, [r], 1000) for label, (_, _, _, r) in kept.items()] + [row("rift", [r for _, r in rift], 1000)]
    return {
        "methods": methods,
        "evaluations": [
            {"kind": "clean", "task": "sst2", "split": "test", "recipe": None, "title": "sst2 test", "rows": clean},
            {"kind": "attack", "task": "sst2", "split": "test", "recipe": "pwws", "title": "pwws", "rows": attack},
        ],
        "study": {"finished": finished, "runs_committed": True, "why": "" if finished else "still running"},
        "joint_claims": [{"compared": "rift - each of pgd-x2", "task": "sst2", "status": verdicts.NO_VERDICT}],
    }


def test_a_frontier_is_one_method_varied_in_one_knob_at_three_strengths():
    found = frontiers(summary()["methods"])
    assert found == [{"name": "pgd", "knob": "step_size", "labels": ["pgd", "pgd-x2", "pgd-x4"]}]


def test_rift_is_read_against_the_frontier_at_its_own_clean_accuracy():
    s = summary()
    add_frontier(s)
    [component] = s["frontier"]
    # the frontier at 80, 81 and 83% clean: 37.5, 36.25 and 33.75% robust
    assert component["frontier_at"] == pytest.approx([0.375, 0.3625, 0.3375])
    assert component["per_seed"] == pytest.approx([0.075, 0.0775, 0.0925])
    assert component["difference"] == pytest.approx(0.0817, abs=1e-4)
    assert component["status"] == verdicts.REPRODUCED and component["ci95"][0] > 0
    assert component["n_seeds"] == 3 and component["n"] == 1000
    [joint] = s["joint_claims"]  # the single-strength joint row is replaced
    assert joint["at_matched_clean"] and joint["compared"] == "rift - each of pgd (step_size)"
    assert joint["status"] == verdicts.REPRODUCED
    # the baselines on no frontier are named: the joint verdict does not cover them
    assert joint["matched_clean"].endswith("not covered (no frontier): ascc, ascc-v, ascc-w, freelbpp, freelbpp-10")
    [table_row] = frontier_table(s).rows
    assert table_row[2] == "pgd-x4 (0.12): 78.0 / 40.0; pgd-x2 (0.06): 82.0 / 35.0; pgd (0.03): 86.0 / 30.0"
    assert table_row[5] == signed_interval(component) and table_row[5].startswith("+8.2 [")


def test_a_rift_seed_outside_the_frontier_gets_no_verdict_naming_it():
    s = summary(rift=[(0.80, 0.45), (0.90, 0.44), (0.83, 0.43)])
    add_frontier(s)
    [component] = s["frontier"]
    assert component["status"] == verdicts.NO_VERDICT
    assert "RIFT seed 1's clean accuracy 90.0%" in component["verdict"] and "not extrapolated" in component["verdict"]
    assert s["joint_claims"][0]["status"] == verdicts.NO_VERDICT


def test_a_strength_or_a_rift_seed_without_its_result_and_an_unfinished_study_get_no_verdict():
    # a fourth strength not attacked yet: three points would give an interval, but not on the frontier registered
    s = summary(drop=("pgd-x8",), baselines=BASELINES | {"pgd-x8": ("pgd", PGD | {"step_size": 0.24}, 0.74, 0.45)})
    add_frontier(s)
    assert s["frontier"][0]["status"] == verdicts.NO_VERDICT
    assert "no seed-0 result yet for pgd-x8" in s["frontier"][0]["verdict"]
    s = summary(rift=RIFT[:2])  # RIFT trained seeds 0-2, seed 2 has no result
    add_frontier(s)
    assert s["frontier"][0]["status"] == verdicts.NO_VERDICT
    assert "rift has no clean test or pwws result for s2" in s["frontier"][0]["verdict"]
    s = summary(finished=False)
    add_frontier(s)
    assert s["frontier"][0]["status"] == verdicts.NO_VERDICT and "still running" in s["frontier"][0]["verdict"]


def test_runs_without_a_frontier_leave_the_summary_as_it_was():
    s = summary()
    for label in ("pgd-x2", "pgd-x4"):
        del s["methods"][label]
    before = [dict(j) for j in s["joint_claims"]]
    add_frontier(s)
    assert "frontier" not in s and s["joint_claims"] == before


def test_the_report_plots_each_frontier_with_rift_s_seeds(tmp_path):
    s = summary()
    add_frontier(s)
    assert frontier_plot(s, tmp_path) == "frontier.png"
    assert (tmp_path / "frontier.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    del s["frontier"]
    assert frontier_plot(s, tmp_path / "none") is None


def test_the_results_page_reads_the_joint_row_from_its_frontier_components(tmp_path):
    s = summary()
    add_frontier(s)
    report = s | {"claims": [], "methods": s["methods"]}
    preset = Preset("rift-frontier-sst2", tmp_path, {"jobs": 50, "finished": 50}, report, "finished")
    [row] = bottom_line([preset], tmp_path).rows
    assert row[3] == "1 of 1 baseline/attack intervals above 0" and row[4] == "3 x 1,000 (pwws)"
    assert row[5] == verdicts.REPRODUCED and row[6] == "settled at this scale"
    table = study_table(preset, {preset.name: preset})
    assert "rift - pgd (step_size) frontier" in table and "not the frontier's own seed spread" in table
