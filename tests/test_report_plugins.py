"""The report renders data and finds each paper through one plug-in interface (`report.claims.plugin.Claims`, listed
in `report.registry`), and the report polish of issue 67: panel titles inside the figure, the red mean promised only
where drawn, one x range for panels of one quantity, look-alike swaps shown, `--data` runs' label names."""

import ast
import re
from pathlib import Path

import pytest

from report_fixtures import attack_results, train_config, write_attack, write_fixture_runs
from robustft.report import build_report, registry
from robustft.report.claims.plugin import Claims
from robustft.report.rendering.examples import collect
from robustft.report.rendering.tables import Table
from robustft.runs import Run

REPORT = Path(__file__).resolve().parents[1] / "src" / "robustft" / "report"
PAPERS = re.compile(r"rift|im-bert|imbert|textdefender|infobert", re.IGNORECASE)


def imported(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


def test_rendering_and_the_summary_know_no_paper():
    for path in sorted((REPORT / "rendering").glob("*.py")):
        assert not [m for m in imported(path) if m.startswith("robustft.report.claims")], path.name
        assert not PAPERS.search(path.read_text(encoding="utf-8")), path.name
    assert not [m for m in imported(REPORT / "summary.py") if m.startswith("robustft.report.claims")]


def _toy_plot(summary: dict, out_dir: Path) -> list[str]:
    (out_dir / "toy.png").write_bytes(b"\x89PNG toy")
    return ["toy.png"]


def test_a_paper_is_one_plug_in_in_the_registry(tmp_path, monkeypatch):
    """A toy paper's key, table (after the data's, being `at_end`) and plot reach report.json, report.md and the page
    with no other change."""

    def add(summary, runs, outcomes_of):
        summary["toy"] = {"attack runs": sum(r.verb == "attack" for r in runs)}

    def tables(summary):
        return [Table("Toy claim", ["attack runs"], [[str(summary["toy"]["attack runs"])]], section="toy")]

    toy = Claims("toy", add, tables, plots=_toy_plot, at_end=True)
    monkeypatch.setattr(registry, "PLUGINS", (*registry.PLUGINS, toy))
    runs = write_fixture_runs(tmp_path / "runs")
    attacks = len([p for p in runs.iterdir() if p.name.startswith("attack-")])
    summary = build_report([runs], tmp_path / "out")
    assert summary["toy"] == {"attack runs": attacks} and attacks > 0
    markdown = (tmp_path / "out" / "report.md").read_text()
    sections = re.findall(r"^## (.+)$", markdown, flags=re.MULTILINE)
    assert sections[sections.index("Toy claim") - 1] == "Deviations from the papers' protocols"
    assert f"| attack runs |\n|---|\n| {attacks} |" in markdown and "![toy.png](toy.png)" in markdown
    assert "<h3>Toy claim</h3>" in (tmp_path / "out" / "report.html").read_text()


def test_the_frontier_study_a_joint_row_names_comes_from_the_studys_data():
    from robustft.report.claims.rift import RIFT_ATTACKS
    from robustft.report.claims.rift_joint import joint_rows

    component = {"rift": "rift", "baseline": "pgd", "recipe": "pwws", "task": "sst2", "n_seeds": 3}
    component |= {"status": "reproduced", "verdict": "reproduced"}
    (named,) = joint_rows([component], RIFT_ATTACKS, {"sst2": "configs/frontier.yaml"})
    assert named["frontier"] == "configs/frontier.yaml"
    assert (
        named["matched_clean"] == "a verdict at matched clean accuracy needs the frontier study configs/frontier.yaml"
    )
    (unnamed,) = joint_rows([component], RIFT_ATTACKS, {})
    assert unnamed["frontier"] is None and unnamed["matched_clean"].endswith("on sst2 (none written)")
    assert "configs/" not in (REPORT / "claims" / "rift_joint.py").read_text(encoding="utf-8")


@pytest.fixture
def saved_figures(monkeypatch):
    """Every figure the report writes, kept for inspection after it is saved and closed."""
    from matplotlib.figure import Figure

    saved, original = {}, Figure.savefig

    def keep(fig, path, *args, **kwargs):
        original(fig, path, *args, **kwargs)
        saved[Path(path).name] = fig
        fig.kept_renderer = fig.canvas.get_renderer()  # the Agg canvas's, gone once the figure is closed

    monkeypatch.setattr(Figure, "savefig", keep)
    return saved


def _one_seed_study(root: Path) -> Path:
    """One seed per method on two attacks: one with a long recipe name (a long panel title), far apart accuracies."""
    write_attack(root, "std", train_config(), attack_results(30))
    write_attack(root, "im", train_config(arch="im"), attack_results(36))
    long_recipe = write_attack(root / "b", "std", train_config(), attack_results(2))
    for folder in (long_recipe, write_attack(root / "b", "im", train_config(arch="im"), attack_results(4))):
        config = (folder / "config.json").read_text()
        (folder / "config.json").write_text(config.replace('"textfooler"', '"' + "-".join(["word"] * 20) + '"'))
    return root


def test_panels_keep_their_titles_inside_the_figure_and_share_one_accuracy_range(tmp_path, saved_figures):
    build_report([_one_seed_study(tmp_path / "runs")], tmp_path / "out", html=False)
    fig = saved_figures["accuracy_attack.png"]
    renderer = fig.kept_renderer
    panels = [ax for ax in fig.axes if ax.axison]
    assert len(panels) == 2
    for ax in panels:  # the long recipe's title ran past the figure's edge before it was wrapped
        box = ax.title.get_window_extent(renderer)
        assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1, ax.get_title()
    # 75/90% in one panel, 5/10% in the other: one x range, so the same position reads as the same accuracy
    assert panels[0].get_xlim() == panels[1].get_xlim()
    paired = [ax for ax in saved_figures["paired_difference.png"].axes if ax.axison]
    assert len(paired) == 2 and paired[0].get_xlim() == paired[1].get_xlim()


def test_the_axis_promises_a_red_mean_only_where_one_is_drawn(tmp_path, saved_figures):
    build_report([_one_seed_study(tmp_path / "one")], tmp_path / "out1", html=False)
    assert all("red" not in ax.get_xlabel() for ax in saved_figures["accuracy_attack.png"].axes)
    two = tmp_path / "two"
    for seed in (0, 1):
        write_attack(two, f"std-s{seed}", train_config(seed=seed), attack_results(30 + seed))
    build_report([two], tmp_path / "out2", html=False)
    (panel,) = [ax for ax in saved_figures["accuracy_attack.png"].axes if ax.axison]
    assert "red: mean over seeds" in panel.get_xlabel()
    assert any(line.get_color() == "C3" for line in panel.get_lines())  # and it is drawn


def _attack_run(config: dict, model_config: dict, swap: dict) -> Run:
    record = {"index": 0, "label": 1, "result": "succeeded", "original_pred": 1, "adversarial_pred": 0}
    record |= {"original": "a brilliant film", "adversarial": f"a {swap['new']} film", "swaps": [swap]}
    description = {"verb": "attack", "config": config, "model_run": {"path": "m", "config": model_config}}
    return Run(Path("attack"), "attack", description, name="attack", examples=[record])


def test_a_look_alike_swap_shows_the_characters_it_changed():
    swap = {"index": 1, "original": "brilliant", "new": "br\u0456lliant"}  # a Cyrillic і for the Latin i
    (group,) = collect([_attack_run({"task": "sst2"}, train_config(), swap)], {})
    assert group.rows[0]["swaps"] == "brilliant→br\u0456lliant (\u0456 U+0456)"
    plain = {"index": 1, "original": "brilliant", "new": "superb"}
    assert collect([_attack_run({"task": "sst2"}, train_config(), plain)], {})[0].rows[0]["swaps"] == "brilliant→superb"


def test_a_data_runs_examples_show_its_recorded_label_names():
    """A `--data` run's task is registered from its file while it runs; the names it recorded are in its config."""
    config = {"task": "reviews_csv-0a1b2c3d", "data": "reviews.csv", "data_labels": ["bad", "good"]}
    swap = {"index": 1, "original": "brilliant", "new": "superb"}
    (group,) = collect([_attack_run(config, train_config() | config, swap)], {})
    assert group.rows[0]["label"] == "good" and group.rows[0]["prediction"] == "good → bad"
