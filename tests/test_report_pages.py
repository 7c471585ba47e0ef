"""report.html and its example pages: the first page stays small for a study with thousands of attacked examples,
every example stays reachable by links, the overview names its baseline, unrun anchors take one line, and a swap
that splits a word in two is highlighted as one change."""

import re
from pathlib import Path

import pytest

from report_fixtures import attack_results, train_config, write_attack
from robustft.report import build_report
from robustft.report.rendering.examples import highlight, swap_spans

LINK = re.compile(r'href="(examples-\d+\.html)(?:#[^"]*)?"')


def reachable_rows(out: Path) -> tuple[set[tuple[str, str]], set[str]]:
    """Every (run, index) row on the example pages reachable by links from report.html, and those pages."""
    todo, seen, rows = set(LINK.findall((out / "report.html").read_text())), set(), set()
    while todo:
        name = todo.pop()
        seen.add(name)
        text = (out / name).read_text()
        rows |= set(re.findall(r'<tr data-run="([^"]+)" data-index="(\d+)"', text))
        todo |= set(LINK.findall(text)) - seen
        assert 'href="report.html"' in text  # every page leads back to the report
    return rows, seen


@pytest.fixture(scope="module")
def big_study(tmp_path_factory):
    """Two methods x two seeds, 2,500 attacked examples each: 10,000 rows, about 7 MB of examples."""
    runs = tmp_path_factory.mktemp("runs")
    for seed in (0, 1):
        write_attack(runs, f"std-s{seed}", train_config(seed=seed), attack_results(1000 + seed, n=2500))
        write_attack(runs, f"im-s{seed}", train_config(arch="im", seed=seed), attack_results(1500 + seed, n=2500))
    out = tmp_path_factory.mktemp("report")
    summary = build_report([runs], out, examples_per_run=2500)
    return out, summary


def test_the_first_page_stays_under_2_mb_and_every_example_is_reachable_from_it(big_study):
    out, _ = big_study
    assert (out / "report.html").stat().st_size < 2_000_000
    rows, pages = reachable_rows(out)
    assert len(rows) == 4 * 2500  # each run's every example, each once
    assert {run for run, _ in rows} == {"std-s0", "std-s1", "im-s0", "im-s1"}
    assert pages == {p.name for p in out.glob("examples-*.html")} and len(pages) == 4 * 25  # 100 a page
    assert max((out / p).stat().st_size for p in pages) < 2_000_000


def test_the_first_page_counts_each_runs_outcomes_and_links_them_filtered(big_study):
    first = big_study[0] / "report.html"
    page = first.read_text()
    im_s0 = next(r for r in page.split("<tr>") if "<td>im+standard</td><td>s0</td>" in r)
    # 2,500 attacked: 1,500 kept (failed), 4 skipped, 996 succeeded; its first page filtered to each outcome
    succeeded = r'<td>2500</td><td><a class="outcome-link" href="examples-\d+\.html#outcome=succeeded">996<'
    assert re.search(succeeded, im_s0)
    assert "10000 attacked examples in 4 attack runs" in page and first.stat().st_size < 2_000_000


def test_the_paired_difference_plot_draws_the_summarys_comparisons(big_study):
    from robustft.report.rendering.plots import _paired_panels

    out, summary = big_study
    assert (out / "paired_difference.png").stat().st_size > 5_000
    assert 'alt="paired_difference.png"' in (out / "report.html").read_text()
    ((title, pairs),) = _paired_panels(summary)
    assert title.startswith("textfooler") and [(m, b) for m, b, _ in pairs] == [("im+standard", "plain+standard")]
    assert pairs[0][2] is summary["evaluations"][0]["rows"][0]["vs_baseline"]["pooled"]  # not recomputed
    assert pairs[0][2]["difference"] == pytest.approx(0.2)  # 1,500 vs 1,000 kept of 2,500


def test_the_overview_names_its_baseline_and_unrun_anchors_take_one_line(big_study):
    out, _ = big_study
    page = (out / "report.html").read_text()
    assert "<caption>Baseline: plain+standard (same model, task and training size); paired here against " in page
    assert "<th>minus plain+standard, points [95% CI]</th>" in page
    assert "Not run: 21 of 21 anchors (AdvGLUE 8, Low resource 1, RIFT 4, TextDefender 8)." in page
    assert page.count("not run") == 0 and page.count("Not run:") == 1
    assert (out / "report.md").read_text().count("| not run |") == 21  # report.md keeps one row each


def test_a_rebuild_removes_the_example_pages_it_no_longer_writes(tmp_path):
    runs = tmp_path / "runs"
    write_attack(runs, "std", train_config(), attack_results(10))
    build_report([runs], tmp_path / "out", plots=False, examples_per_page=15)
    assert len(list((tmp_path / "out").glob("examples-*.html"))) == 3
    (tmp_path / "out" / "examples-2.html").write_text("not ours: a name the report never writes")
    build_report([runs], tmp_path / "out", plots=False)
    left = sorted(p.name for p in (tmp_path / "out").glob("examples-*.html"))
    assert left == ["examples-001.html", "examples-2.html"]


def test_a_swap_that_splits_a_word_is_highlighted_as_one_change():
    original = "This is good, and the film is fine."
    adversarial = "This is go od, and the film is f1ne."  # TextBugger's space insertion, then a character swap
    swaps = [{"index": 6, "original": "fine", "new": "f1ne"}, {"index": 2, "original": "good", "new": "go od"}]
    assert highlight(adversarial, swaps, "new", "new") == (
        'This is <mark class="new">go od</mark>, and the film is <mark class="new">f1ne</mark>.'
    )
    assert highlight(original, swaps, "original", "old") == (
        'This is <mark class="old">good</mark>, and the film is <mark class="old">fine</mark>.'
    )
    # two split words before a third swap: each shifts the words after it by one
    text = "a go od b ba d c n1ce"
    two = [
        {"index": 1, "original": "good", "new": "go od"},
        {"index": 3, "original": "bad", "new": "ba d"},
        {"index": 5, "original": "nice", "new": "n1ce"},
    ]
    assert [text[s:e] for s, e in swap_spans(text, two, "new")] == ["go od", "ba d", "n1ce"]


def test_a_swap_whose_position_disagrees_with_the_text_is_found_after_the_previous_one():
    swaps = [{"index": 0, "original": "x", "new": "nice"}, {"index": 1, "original": "y", "new": "film"}]
    text = "a nice old film <b>"  # positions off by one (a record from an older splitter): found by its text
    assert highlight(text, swaps, "new", "new") == (
        'a <mark class="new">nice</mark> old <mark class="new">film</mark> &lt;b&gt;'
    )
    assert swap_spans("no such words", swaps, "new") == []  # nothing marked rather than the wrong words
