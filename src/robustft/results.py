"""Results as data: committed run summaries, and the re-check that they are what the code computes.

Layout of a published preset's folder (one per preset, side by side under one results root):

    <preset>/runs/<run>/config.json, metrics.json   the run's own, unchanged
    <preset>/runs/<run>/examples.jsonl.gz           eval and attack runs: per-example lines (gzip), so intervals,
                                                    paired tests and AdvGLUE F1 are re-derived
    <preset>/runs/<run>/probe.json                  probe runs
    <preset>/report.json, report.md                 `robustft report <preset>/runs --output_dir <preset>` (plus the
                                                    runs of the presets it reports with)
    <preset>/published.json                         how it ran: command, times, machine, code, report_with, baseline
                                                    and the comparisons its settings registered

`robustft.runs.export_run` copies a run folder into that layout (no checkpoints or models). `recheck` checks,
like RobustBench re-checks its model cards: every metrics.json equals what the code computes from the
run's examples, and report.json / report.md equal a report regenerated from the runs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from robustft.attacks.results import AttackRecord, summarize
from robustft.report.folders import Run, load_runs
from robustft.report.registry import render_markdown
from robustft.report.summary import build_summary, standing


def same(a, b, where: str = "", rel: float = 1e-9) -> list[str]:
    """Where two JSON values differ (floats to a relative tolerance)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{where}/{k}: only in one" for k in sorted(set(a) ^ set(b), key=str)]
        for k in sorted(set(a) & set(b), key=str):
            out += same(a[k], b[k], f"{where}/{k}", rel)
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} items vs {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in same(x, y, f"{where}[{i}]", rel)]
    if (
        isinstance(a, float | int)
        and isinstance(b, float | int)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
    ):
        return [] if math.isclose(a, b, rel_tol=rel, abs_tol=1e-12) else [f"{where}: {a} vs {b}"]
    return [] if a == b else [f"{where}: {a!r} vs {b!r}"]


def check_run_metrics(run: Run) -> list[str]:
    """metrics.json against the run's own examples (nothing to check without them)."""
    if run.examples is None:
        return []
    problems = []
    if run.verb == "attack":
        computed = summarize([AttackRecord.from_dict(r) for r in run.examples])
        problems += same(run.metrics, {**run.metrics, **computed}, run.name)
    elif run.verb == "eval":
        wrong = [e["index"] for e in run.examples if bool(e["correct"]) != (e["prediction"] == e["label"])]
        if wrong:
            problems.append(f"{run.name}: 'correct' disagrees with prediction == label at indices {wrong[:5]}")
        n = len(run.examples)
        accuracy = sum(bool(e["correct"]) for e in run.examples) / n if n else None
        problems += same(
            {"n": run.metrics.get("n"), "accuracy": run.metrics.get("accuracy")},
            {"n": n, "accuracy": accuracy},
            run.name,
        )
    return problems


def without_plots(markdown: str) -> str:
    """The Markdown minus its "## Plots" section (plot files are not re-checked)."""
    head, sep, rest = markdown.partition("\n## Plots\n")
    if not sep:
        return markdown
    _, sep2, tail = rest.partition("\n## ")
    return head + ("\n## " + tail if sep2 else "")


def _published(results_dir: Path) -> dict:
    about = results_dir / "published.json"
    return json.loads(about.read_text(encoding="utf-8")) if about.is_file() else {}


def report_inputs(results_dir: Path, report_with: list[str] | None = None) -> list[Path]:
    """The runs a published report is built from: its own, and those of the benches it reports with, published
    beside it (`report_with`; by default as its published.json records)."""
    if report_with is None:
        report_with = _published(results_dir).get("report_with", [])
    return [results_dir / "runs", *(results_dir.parent / name / "runs" for name in report_with)]


def status_of(about: dict, has_runs: bool) -> str:
    """finished, partial or lost (its runs were never committed), from published.json."""
    if not has_runs:
        return "lost"
    return "partial" if about.get("finished", about.get("jobs")) != about.get("jobs") else "finished"


def study_standing(about: dict, has_runs: bool) -> dict:
    """The standing a published preset's claims are judged with (no verdict while it runs or without its runs), with
    the method pairs its settings registered beside those with the baseline (published.json `comparisons`)."""
    finished = status_of(about, has_runs) != "partial"
    why = [] if finished else [f"still running, {about.get('finished')} of {about.get('jobs')} jobs"]
    why += [] if has_runs else ["runs lost, not re-checkable"]
    comparisons, frontiers = about.get("comparisons", ()), about.get("frontier_studies")  # as published.json names
    return standing(finished, has_runs, "; ".join(why), comparisons=comparisons, frontier_studies=frontiers)


def summary_of(results_dir: Path, runs: list[Run] | None = None) -> dict:
    """The report a published preset's committed runs give, compared with the baseline its bench named (None: the
    report's default, plain architecture + standard) and judged with its standing."""
    about = _published(results_dir)
    runs = runs if runs is not None else load_runs(report_inputs(results_dir, about.get("report_with", [])))
    study = study_standing(about, (results_dir / "runs").is_dir())
    return build_summary(runs, baseline=about.get("baseline"), bench_baseline=True, study=study)


def recheck(results_dir: Path) -> list[str]:
    """Every problem found in a committed results folder (empty when the summaries check out)."""
    results_dir = Path(results_dir)
    about = _published(results_dir)
    runs = load_runs(report_inputs(results_dir, about.get("report_with", [])))
    problems = [p for run in runs for p in check_run_metrics(run)]
    summary = json.loads(json.dumps(summary_of(results_dir, runs)))
    committed_json = results_dir / "report.json"
    if not committed_json.is_file():
        return problems + [f"{committed_json} is missing"]
    problems += [f"report.json{p}" for p in same(json.loads(committed_json.read_text(encoding="utf-8")), summary)]
    committed_md = results_dir / "report.md"
    if committed_md.is_file():
        text = committed_md.read_text(encoding="utf-8")
        title = text.splitlines()[0].removeprefix("# ").strip() if text else ""
        if without_plots(text) != without_plots(render_markdown(summary, title=title)):
            problems.append("report.md differs from the Markdown regenerated from the runs")
    return problems
