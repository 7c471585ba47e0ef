"""Results as data: committed run summaries, and the re-check that they are what the code computes.

Layout (one folder per preset, e.g. docs/results/quick/):

    docs/results/<preset>/runs/<run>/config.json      the run's config.json, unchanged
    docs/results/<preset>/runs/<run>/metrics.json     the run's metrics.json, unchanged
    docs/results/<preset>/runs/<run>/examples.jsonl.gz  eval and attack runs: per-example lines (gzip), so
                                                        intervals, paired tests and AdvGLUE F1 are re-derived
    docs/results/<preset>/runs/<run>/probe.json       probe runs
    docs/results/<preset>/report.json, report.md      written by `robustft report docs/results/<preset>/runs
                                                        --output_dir docs/results/<preset>` (plus the runs of
                                                        the presets it reports with)
    docs/results/<preset>/published.json              how it ran: command, times, machine, code, report_with

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


def recheck(results_dir: Path) -> list[str]:
    """Every problem found in a committed results folder (empty when the summaries check out)."""
    from robustft.report.markdown import render_markdown
    from robustft.report.summary import build_summary

    results_dir = Path(results_dir)
    about = _published(results_dir)
    runs = load_runs(report_inputs(results_dir, about.get("report_with", [])))
    problems = [p for run in runs for p in check_run_metrics(run)]
    # compared with the baseline its bench named (None: the report's default, plain architecture + standard)
    summary = json.loads(json.dumps(build_summary(runs, baseline=about.get("baseline"), bench_baseline=True)))
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


RESULTS_PAGE_HEAD = """# Results

Generated by `python scripts/publish_results.py` from the committed run summaries in `docs/results/<preset>/`
(each checked against the code by `tests/test_results.py`); do not edit by hand. Every accuracy carries its example
count and 95% interval, every comparison is paired on the same examples, and a difference the test cannot tell from
noise is reported as no detectable difference. Absolute numbers are MiniLM's (the offline backbone), not the papers'
BERT-base or RoBERTa: what should reproduce is the direction and size of each method's effect.
"""


def how_it_ran(name: str, about: dict, has_runs: bool) -> str:
    """The paragraph above a preset's tables: its command, progress, times, machine and code, and where its runs
    are (or that they are not: those tables can no longer be re-checked)."""
    jobs, finished = about["jobs"], about.get("finished", about["jobs"])
    parts = [f"Command: `{about['command']}`."]
    if finished < jobs:
        parts.append(
            f"**Still running: {finished} of {jobs} jobs finished**, and the tables hold only those (`robustft bench "
            f"... --restore docs/results/{name}/runs` goes on from the saved jobs)."
        )
    if about["wall_minutes"]:
        parts.append(f"Wall time {about['wall_minutes']} min (its last `robustft bench` call).")
    if "compute_minutes" in about:
        parts.append(f"Its jobs' own time, summed over every session: {about['compute_minutes']} min.")
    conditions = f" ({about['conditions']})" if about.get("conditions") else ""
    commits = (
        f" (its last call; its finished jobs ran on {about['job_commits']} commits, each named in its config.json)"
        if about.get("job_commits", 1) > 1
        else ""
    )
    parts.append(
        f"Ran on {about['machine']}{conditions}; the bench's estimate beforehand: {about['expected_minutes']} min "
        f"for {jobs} jobs; code {about['git_commit']}{commits}."
    )
    inputs = " ".join(f"docs/results/{n}/runs" for n in [name, *about.get("report_with", [])])
    parts.append(
        f"Full report with plots and the adversarial examples: `robustft report {inputs}`."
        if has_runs
        else "Its run summaries were never committed (a `.gitignore` rule for `runs/` also caught "
        "`docs/results/*/runs` until 2026-12-01) and were lost with the machine that ran it, so these tables can no "
        "longer be re-checked against their examples: rerun the command to regenerate them."
    )
    return " ".join(parts)


def claims_across_presets(presets: list[Path]) -> str:
    """One table of every preset's answers to the papers' claims (each report's claims table, the preset named,
    and whether it is still running or can no longer be re-checked); empty when no preset answers one."""
    from robustft.report.markdown import render_table
    from robustft.report.tables import Table, claims_table

    tables = {}
    for preset in presets:
        report = preset / "report.json"
        table = claims_table(json.loads(report.read_text(encoding="utf-8"))) if report.is_file() else None
        if table is not None:
            tables[preset.name] = table
    columns, rows, notes = [], [], []
    for preset in presets:
        if preset.name not in tables:
            continue
        about = json.loads((preset / "published.json").read_text(encoding="utf-8"))
        status = []
        if about.get("finished", about["jobs"]) < about["jobs"]:
            status.append(f"still running, {about['finished']} of {about['jobs']} jobs")
        if not (preset / "runs").is_dir():
            status.append("runs lost, not re-checkable")
        name = f"`{preset.name}`" + (f" ({'; '.join(status)})" if status else "")
        table = tables[preset.name]
        # a preset whose report also reads another's runs (report_with) repeats that one's rows: listed once, there
        borrowed = [row for other in about.get("report_with", []) if other in tables for row in tables[other].rows]
        columns, notes = table.columns, table.notes
        rows += [[name, *row] for row in table.rows if row not in borrowed]
    if not rows:
        return ""
    notes = ["Every preset's rows, as in its own section below (with the tables they come from).", *notes]
    return render_table(Table("The papers' claims, every preset", ["preset", *columns], rows, notes))


def render_results_page(results_root: Path) -> str:
    """docs/RESULTS.md: every preset's answers to the papers' claims, then for every published preset how it was
    run (published.json) and its report.md."""
    presets = sorted(p for p in Path(results_root).iterdir() if (p / "report.md").is_file())
    parts = [RESULTS_PAGE_HEAD]
    claims = claims_across_presets(presets)
    if claims:
        parts.append("\n" + claims)
    for preset in presets:
        about = json.loads((preset / "published.json").read_text(encoding="utf-8"))
        report = (preset / "report.md").read_text(encoding="utf-8").split("\n", 1)[1]  # its own title goes
        parts.append(
            f"\n## Preset `{preset.name}`\n\n{how_it_ran(preset.name, about, (preset / 'runs').is_dir())}\n"
            + report.replace("\n## ", "\n### ").replace("\n# ", "\n### ")
        )
    return "\n".join(parts).rstrip() + "\n"
