"""`robustft bench` on a tiny random BERT: the matrix expands into run folders, finished jobs are reused after an
interruption, jobs can be listed and run one at a time, and model selection never touches an evaluation set."""

import dataclasses
import json

import pytest

from robustft.bench.matrix import expand
from robustft.bench.presets import PRESETS
from robustft.bench.run import bench, list_jobs
from robustft.config import AttackConfig, BenchConfig, EvalConfig, TrainConfig, apply_overrides
from robustft.errors import ConfigError
from robustft.training.method import resolve_method


def tiny_bench(model_dir, out, **kw) -> BenchConfig:
    values = {
        "name": "tiny",
        "model": model_dir,
        "methods": {"bert": {}, "im": {"arch": "im", "im": {"K": 1}}},
        "sizes": [32],
        "seeds": [0],
        "output_dir": str(out),
        "progress": False,
        "threads": 1,
        "precision": "fp32",
        "train": {"epochs": 1, "n_dev": 16, "max_length": 32, "batch_size": 16},
        "evals": [{"task": "{task}", "split": "dev", "n": 16}, {"advglue": True}],
        "attacks": [{"recipe": "pwws", "split": "dev", "n": 2, "query_budget": 20}],
        **kw,
    }
    return apply_overrides(BenchConfig(), values).validate()


def test_every_preset_expands_and_never_selects_on_an_evaluation_set():
    for name, values in PRESETS.items():
        jobs = expand(apply_overrides(BenchConfig(), values).validate())
        trains = [j for j in jobs if j.kind == "train"]
        assert trains and all(not j.config.dev_split.startswith("test") for j in trains), name
        assert all(not j.config.task.startswith(("advglue", "textfooler")) for j in trains), name
        assert len({j.id for j in jobs}) == len(jobs)


def test_the_rift_preset_trains_standard_as_its_adversarial_baselines_but_for_the_objective():
    jobs = expand(apply_overrides(BenchConfig(), PRESETS["rift"]).validate())
    cells = {j.id: j.config for j in jobs if j.kind == "train"}
    keys = ("epochs", "lr", "weight_decay", "max_grad_norm", "batch_size", "warmup_ratio", "lr_schedule")
    for task in ("imdb", "snli"):
        standard, freelbpp = cells[f"bert/{task}/all/s0"], cells[f"freelbpp/{task}/all/s0"]
        resolve_method(standard)
        resolve_method(freelbpp)
        assert {k: getattr(standard, k) for k in keys} == {k: getattr(freelbpp, k) for k in keys}, task
    assert cells["bert/imdb/all/s0"].max_length == cells["freelbpp/imdb/all/s0"].max_length == 256


def test_every_seed_of_the_matrix_is_whole_before_the_next_one_starts(tiny_model_dir, tmp_path):
    cfg = tiny_bench(tiny_model_dir, tmp_path / "b", seeds=[0, 1], tasks=["sst2", "rte"], sizes=[16, 32])
    seeds = [j.config.seed if j.kind == "train" else None for j in expand(cfg)]
    trained = [s for s in seeds if s is not None]
    assert trained == [0] * 8 + [1] * 8  # 2 tasks x 2 sizes x 2 methods per seed


def test_attack_ids_name_the_protocol_and_sample_seed_and_repeats_are_refused(tiny_model_dir, tmp_path):
    pwws = {"recipe": "pwws", "split": "dev", "n": 2}
    attacks = [pwws, {**pwws, "protocol": "rift"}, {**pwws, "seed": 1}]
    ids = [j.id for j in expand(tiny_bench(tiny_model_dir, tmp_path / "b", attacks=attacks)) if j.kind == "attack"]
    assert ids[:3] == [
        "bert/sst2/n32/s0 attack pwws/sst2/dev/n2",  # as before: no protocol, sample seed 0
        "bert/sst2/n32/s0 attack pwws-rift/sst2/dev/n2",
        "bert/sst2/n32/s0 attack pwws/sst2/dev/n2/s1",
    ]
    with pytest.raises(ConfigError, match=r"same id \(bert/sst2/n32/s0 attack pwws/sst2/dev/n2\)"):
        expand(tiny_bench(tiny_model_dir, tmp_path / "c", attacks=[pwws, pwws]))


def test_evaluations_and_attacks_can_measure_at_another_precision_than_training(tiny_model_dir, tmp_path):
    cfg = tiny_bench(tiny_model_dir, tmp_path / "b", precision="bf16", eval_precision="fp32")
    precisions = {(j.kind, j.config.precision) for j in expand(cfg)}
    assert precisions == {("train", "bf16"), ("eval", "fp32"), ("attack", "fp32")}
    same = {j.config.precision for j in expand(tiny_bench(tiny_model_dir, tmp_path / "c", precision="bf16"))}
    assert same == {"bf16"}  # unset: everything at the cells' precision


def test_a_bench_killed_mid_matrix_redoes_no_finished_job(tiny_model_dir, tmp_path):
    cfg = tiny_bench(tiny_model_dir, tmp_path / "b")
    first = bench(cfg, only="bert/*")  # part of the matrix, as if the process had been stopped there
    done = {k for k, v in first["jobs"].items() if v == "done"}
    assert done == {j.id for j in expand(cfg) if j.id.startswith("bert/")}
    partial = json.loads((tmp_path / "b" / "report" / "report.json").read_text())["study"]
    assert partial["finished"] is False and "4 of 8 jobs" in partial["why"]  # no verdicts from a half-run bench
    stamps = {p: p.stat().st_mtime_ns for p in (tmp_path / "b" / "cells").rglob("metrics.json")}
    result = bench(cfg)
    assert all(v == "done" for v in result["jobs"].values()) and len(result["jobs"]) == 8
    assert all(p.stat().st_mtime_ns == t for p, t in stamps.items())  # finished jobs were not redone
    assert json.loads((tmp_path / "b" / "metrics.json").read_text())["complete"] is True
    assert result["report"] == str(tmp_path / "b" / "report")  # the library builds it, as `robustft bench` does
    full = json.loads((tmp_path / "b" / "report" / "report.json").read_text())
    assert "im" in full["methods"] and full["study"]["finished"] is True
    cell = tmp_path / "b" / "cells" / "im-sst2-n32-s0"
    trained = json.loads((cell / "config.json").read_text())["config"]
    assert (trained["arch"], trained["label"], trained["dev_split"]) == ("im", "im", "dev")
    assert {p.name for p in cell.iterdir()} >= {
        "eval-sst2-dev-n16",
        "eval-advglue-sst2-dev",
        "attack-pwws-sst2-dev-n2-s0",
    }


def test_jobs_are_listed_filtered_and_wait_for_their_model(tiny_model_dir, tmp_path, capsys):
    cfg = tiny_bench(tiny_model_dir, tmp_path / "b")
    listed = list_jobs(cfg)
    assert list(listed.values()) == ["todo"] * 8 and "bert/sst2/n32/s0 eval sst2/dev/n16" in listed
    with pytest.raises(ConfigError, match="no job id matches"):
        bench(cfg, only="nothing-like-this")
    kept = list_jobs(cfg, skip="im/*")
    assert len(kept) == 4 and all(k.startswith("bert/") for k in kept)
    kept = list_jobs(cfg, skip=["im/*", "*eval*"])  # --skip given twice
    assert kept and all(k.startswith("bert/") and " eval " not in k for k in kept) and len(kept) < 4
    assert list(list_jobs(cfg, only="*eval*", skip="*advglue*")) == [
        "bert/sst2/n32/s0 eval sst2/dev/n16",
        "im/sst2/n32/s0 eval sst2/dev/n16",
    ]
    with pytest.raises(ConfigError, match="but not"):
        list_jobs(cfg, skip="*")
    # a glob names the id from its start: 'sst2/*' is no method, so it leaves nothing out (on any part of the id it
    # left out every job, as --skip 'rift/*' left out every method's pwws-rift and genetic-rift attacks)
    assert list_jobs(cfg, skip="sst2/*") == listed
    assert len(list_jobs(cfg, only="bert/sst2/n32/s0")) == 4  # a cell's id: its jobs too
    from robustft.bench.run import BenchJobsFailed

    with pytest.raises(BenchJobsFailed, match="not trained yet"):
        bench(cfg, only="*eval advglue*")


def test_listing_jobs_writes_nothing(tiny_model_dir, tmp_path, monkeypatch, capsys):
    """`--list` only reads: no bench folder, lock, claim or log appears, before the bench ran or after part of it."""
    import yaml

    from robustft.cli import main

    monkeypatch.chdir(tmp_path)
    cfg = tiny_bench(tiny_model_dir, tmp_path / "b", attacks=[])
    spec = tmp_path / "tiny.yaml"
    spec.write_text(yaml.safe_dump({k: v for k, v in cfg.__dict__.items() if k != "explicit_keys"}))

    def tree():
        return {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}

    before = tree()
    assert main(["bench", str(spec), "--list"]) == 0
    assert main(["bench", "list", str(spec), "--only", "bert/*"]) == 0  # the command; the flag is the old spelling
    assert tree() == before and not (tmp_path / "b").exists()
    bench(cfg, only="bert/*")
    before = tree()
    assert main(["bench", str(spec), "--list", "--workers", "2", "--deadline", "2099-01-01T00:00"]) == 0
    out = capsys.readouterr().out
    assert "done" in out and "todo" in out and "bert/sst2/n32/s0" in out
    assert tree() == before


def test_cli_runs_a_bench_file_and_ends_with_the_table_and_the_report_page(tiny_model_dir, tmp_path, capsys):
    import yaml

    from robustft.cli import main

    cfg = tiny_bench(tiny_model_dir, tmp_path / "b", attacks=[])
    spec = tmp_path / "tiny.yaml"
    spec.write_text(yaml.safe_dump({k: v for k, v in cfg.__dict__.items() if k != "explicit_keys"}))
    assert main(["bench", str(spec), "--seeds", "[0]"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1] == f"report: {tmp_path / 'b' / 'report' / 'report.html'}"
    assert any("bert" in line and "|" in line for line in out)
    page = (tmp_path / "b" / "report" / "report.html").read_text()
    assert "advglue-sst2" in page and "im" in page


def test_a_job_another_process_holds_is_left_to_it_and_taken_once_released(tiny_model_dir, tmp_path, monkeypatch):
    import threading
    import time

    from robustft.bench import runner
    from robustft.runs import is_finished, try_hold

    monkeypatch.setattr(runner, "WAIT_POLL_S", 0.05)
    cfg = tiny_bench(tiny_model_dir, tmp_path / "b")
    jobs = [j for j in expand(cfg) if j.id.startswith("bert/")]
    held = next(j for j in jobs if j.kind == "eval")
    others = [j for j in jobs if j is not held]
    holding, released = threading.Event(), []

    def other_process():  # holds the job's claim until the bench has run everything else
        with try_hold(runner.claim_path(tmp_path / "b", held.id)) as mine:
            assert mine
            holding.set()
            while not all(is_finished(j.folder) for j in others):
                time.sleep(0.05)
            time.sleep(0.3)
            assert not is_finished(held.folder)  # the bench left it alone and waited
            released.append(time.time())

    thread = threading.Thread(target=other_process)
    thread.start()
    holding.wait()
    result = bench(cfg, only="bert/*")
    thread.join()
    assert released and set(result["jobs"].values()) == {"done"} and len(result["jobs"]) == 4
    assert (held.folder / "metrics.json").stat().st_mtime >= released[0]


def test_workers_run_the_jobs_in_their_own_processes_with_the_cores_shared(tiny_model_dir, tmp_path, capsys):
    import os

    from robustft.bench.run import cores_shared
    from robustft.runs import LOCK
    from robustft.runtime import cpu_cores

    assert cores_shared(tiny_bench(tiny_model_dir, tmp_path / "b", threads=1, workers=4)).threads == 1  # as given
    cfg = tiny_bench(tiny_model_dir, tmp_path / "b", threads=None, workers=2, attacks=[])
    result = bench(cfg)
    share = max(1, cpu_cores() // 2)
    assert (
        f"2 workers of {share} thread(s) each (the cores shared out; set --threads to choose)"
        in capsys.readouterr().out
    )
    assert result["complete"] and set(result["jobs"].values()) == {"done"} and len(result["jobs"]) == 6
    folders = [j.folder for j in expand(cfg)]
    pids = {(f / LOCK).read_text().strip() for f in folders}
    assert str(os.getpid()) not in pids  # every job ran in a worker
    threads = {json.loads((f / "config.json").read_text())["config"]["threads"] for f in folders}
    assert threads == {share}


WORKER_OF_A_KILLED_BENCH = """
import os, sys, threading, time, multiprocessing
from robustft.bench.runner import exit_with_parent

def worker(path):
    threading.Thread(target=exit_with_parent, args=(os.getppid(),), daemon=True).start()
    with open(path, "w") as f:
        f.write(str(os.getpid()))
    time.sleep(120)

if __name__ == "__main__":
    multiprocessing.get_context("spawn").Process(target=worker, args=(sys.argv[1],), daemon=True).start()
    time.sleep(120)
"""


def test_a_worker_stops_soon_after_its_bench_process_is_killed(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    script, pid_file = tmp_path / "bench.py", tmp_path / "worker.pid"
    script.write_text(WORKER_OF_A_KILLED_BENCH)
    parent = subprocess.Popen([sys.executable, str(script), str(pid_file)])
    try:
        deadline = time.time() + 60
        while not (pid_file.exists() and pid_file.read_text()) and time.time() < deadline:
            time.sleep(0.1)
        worker = int(pid_file.read_text())
        parent.send_signal(signal.SIGKILL)  # no chance to end its children
        parent.wait()

        def alive() -> bool:
            status = Path(f"/proc/{worker}/status")
            return status.exists() and "\nState:\tZ" not in status.read_text()

        deadline = time.time() + 10
        while alive() and time.time() < deadline:
            time.sleep(0.2)
        assert not alive()
    finally:
        parent.kill()
        if pid_file.exists() and pid_file.read_text():
            try:
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
            except ProcessLookupError:
                pass


def price(kind, cfg, trained=None):
    """A job's expected seconds from the shipped rates."""
    from robustft.bench.costs import work_of
    from robustft.bench.pricing import seconds

    return seconds(work_of(kind, cfg, trained))


def test_the_estimate_prices_fp32_attacks_and_im_models_higher():
    from robustft.bench.pricing import im_forward_factor, load_rates

    def attacks(**kw):
        cfg = apply_overrides(BenchConfig(), {**tiny_bench("minilm", "/tmp/unused").__dict__, **kw}).validate()
        jobs = expand(cfg)
        trained = {j.id: j.config for j in jobs if j.kind == "train"}
        return {j.id: (price("attack", j.config, trained[j.cell]), trained[j.cell]) for j in jobs if j.kind == "attack"}

    auto, fp32 = attacks(precision="auto"), attacks(precision="auto", eval_precision="fp32")
    plain, im = (auto[k] for k in sorted(auto))  # bert, then im
    assert fp32[sorted(auto)[0]][0] == pytest.approx(load_rates().attack_fp32_factor * plain[0])
    assert im[0] == pytest.approx(im_forward_factor(im[1]) * plain[0]) and im_forward_factor(im[1]) > 1


def test_the_estimate_prices_an_adversary_by_its_ascent_steps():
    """TextDefender's FreeLB++ takes 30 steps on SST-2 and 10 on IMDB: the SST-2 preset costs 3x a step of the
    10-step one the rates were measured at, not the same (a bench's deadline check starts trainings by it)."""

    def seconds(method, **method_args):
        cfg = TrainConfig(model="minilm", task="sst2", method=method, n_train=1000, n_dev=10)
        cfg.method_args = method_args
        return price("train", cfg)

    assert seconds("freelbpp") == pytest.approx(3 * seconds("freelbpp", steps=10), rel=0.02)
    assert seconds("pgd", steps=10) == pytest.approx(2 * seconds("pgd"), rel=0.02)
    assert seconds("rift", steps=10) == seconds("rift")  # RIFT's hull steps are in its measured cost


def test_the_estimate_prices_a_base_size_backbone_by_its_measured_factor():
    """MPNet costs 5.75x MiniLM a step and a forward (measured): priced as MiniLM, a 5.6-hour study looked like 1."""
    from robustft.bench.pricing import load_rates

    def trained(model):
        return TrainConfig(model=model, task="sst2", n_train=1000, n_dev=10)

    factor = load_rates().backbone("mpnet")
    assert factor > 4
    assert price("train", trained("mpnet")) == pytest.approx(factor * price("train", trained("minilm")))
    attack = AttackConfig(model="unused", task="sst2", split="dev", recipe="textfooler", n=100)
    assert price("attack", attack, trained("mpnet")) == pytest.approx(
        factor * price("attack", attack, trained("minilm"))
    )
    assert price("train", trained("/some/folder")) == pytest.approx(price("train", trained("minilm")))  # unmeasured


def test_the_estimate_prices_an_ensemble_defense_by_its_copies_and_a_certificate_by_its_samples():
    """A SAFER model answers each query with 100 noisy copies (DNE 12): priced as one model, the textdefender table
    looked like 6 hours instead of 55. SAFER's and RanMASK's copies are forwarded once per distinct copy: each
    priced at its measured share of a copy (the rates file's `ensemble_copy.distinct`); DNE's at a whole copy."""
    from robustft.bench.pricing import load_rates

    def seconds(kind, cfg, trained):
        return price(kind, cfg, trained)

    def trained(method, **method_args):
        cfg = TrainConfig(model="minilm", task="sst2", method=method, n_train=1000, n_dev=10)
        cfg.method_args = method_args
        return cfg

    rates = load_rates()
    copy, distinct = rates.ensemble_copy, rates.ensemble_distinct
    assert set(distinct) == {"safer", "ranmask"} and all(0 < d < copy for d in distinct.values())
    attack = AttackConfig(model="unused", task="sst2", split="test", recipe="pwws", n=100)
    plain = seconds("attack", attack, trained("standard"))
    assert seconds("attack", attack, trained("safer")) == pytest.approx(100 * distinct["safer"] * plain)
    assert seconds("attack", attack, trained("dne")) == pytest.approx(12 * copy * plain)
    assert seconds("attack", attack, trained("ranmask", copies=10)) == pytest.approx(10 * distinct["ranmask"] * plain)
    evaluation = EvalConfig(model="unused", task="sst2", split="test", n=100)
    certified = EvalConfig(model="unused", task="sst2", split="test", n=100, certify=True, certify_samples=1000)
    plain_eval = seconds("eval", evaluation, trained("standard"))
    assert seconds("eval", certified, trained("safer")) == pytest.approx((100 + 1000) * distinct["safer"] * plain_eval)


def test_prices_come_from_a_rates_file_that_says_where_each_rate_came_from(tmp_path, monkeypatch):
    from robustft.bench import pricing
    from robustft.errors import DataFormatError

    rates = json.loads(pricing.RATES_FILE.read_text())

    def entries(node):
        if isinstance(node, dict) and ({"value", "cost", "seconds_per_example"} & set(node)):
            yield node
        elif isinstance(node, dict):
            for child in node.values():
                yield from entries(child)

    found = list(entries(rates))
    assert len(found) > 20 and all({"measured", "source"} <= set(e) for e in found)
    assert {"cpu", "cores", "native_bf16"} <= set(rates["machine"])
    cfg = TrainConfig(model="minilm", task="sst2", n_train=1000, n_dev=10)
    shipped = price("train", cfg)
    rates["train"]["examples_per_s"]["value"] *= 2
    rates["eval"]["examples_per_s"]["value"] *= 2
    (tmp_path / "faster.json").write_text(json.dumps(rates))
    monkeypatch.setenv(pricing.RATES_ENV, str(tmp_path / "faster.json"))
    assert price("train", cfg) == pytest.approx(shipped / 2)
    del rates["attacks"]
    (tmp_path / "broken.json").write_text(json.dumps(rates))
    monkeypatch.setenv(pricing.RATES_ENV, str(tmp_path / "broken.json"))
    with pytest.raises(DataFormatError, match=r"broken.json: a rates file needs the entry 'attacks'"):
        price("train", cfg)


def test_without_waiting_a_bench_leaves_what_another_process_holds_and_ends(tiny_model_dir, tmp_path, monkeypatch):
    """`wait: false` (two lanes of studies/cpu_queue.sh): a training another process holds is left to it with its
    evaluations and attacks, and the bench ends once everything else is done instead of idling."""
    from robustft.bench import runner
    from robustft.runs import is_finished, try_hold

    monkeypatch.setattr(runner, "WAIT_POLL_S", 0.05)
    cfg = tiny_bench(tiny_model_dir, tmp_path / "b", wait=False, attacks=[])
    jobs = expand(cfg)
    held = next(j for j in jobs if j.kind == "train" and j.id.startswith("im/"))
    with try_hold(runner.claim_path(tmp_path / "b", held.id)) as mine:  # another process trains the IM cell
        assert mine
        result = bench(cfg)
    theirs = [j for j in jobs if j.cell == held.id]
    assert len(theirs) == 3 and not any(is_finished(j.folder) for j in theirs)  # left, not failed
    assert all(is_finished(j.folder) for j in jobs if j.cell != held.id)
    assert not result["complete"] and all(result["jobs"][j.id] == "todo" for j in theirs)
    again = bench(dataclasses.replace(cfg, wait=True))  # released: the next call does them
    assert again["complete"]


def test_a_shard_starting_beside_another_never_mistakes_its_bench_folder_for_a_foreign_one(
    tiny_model_dir, tmp_path, monkeypatch
):
    """Shards of one bench start together: one may look while the other is writing config.json (its temporary
    file is there, or the file appeared just after the first look). Only a folder with other content is refused."""
    from robustft import runs
    from robustft.bench.run import record_bench

    cfg = tiny_bench(tiny_model_dir, tmp_path / "b")
    folder = tmp_path / "b"
    folder.mkdir()
    (folder / "config.json.4242.tmp").write_text("{")  # the other shard's write, not yet renamed
    record_bench(cfg, folder)
    assert runs.read_description(folder)["verb"] == "bench"

    later = tmp_path / "c"
    record_bench(cfg, later)  # config.json there, but the first look misses it: written just after
    real, looks = runs.read_description, []

    def first_look_misses(path):
        looks.append(path)
        return None if len(looks) == 1 else real(path)

    monkeypatch.setattr(runs, "read_description", first_look_misses)
    record_bench(cfg, later)
    assert len(looks) == 2  # it looked again before refusing

    foreign = tmp_path / "d"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    monkeypatch.setattr(runs, "read_description", real)
    with pytest.raises(ConfigError, match="is not empty and is not a robustft bench folder"):
        record_bench(cfg, foreign)
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]  # nothing written into it


@pytest.mark.parametrize(
    "words,command",
    [
        (["quick"], ["run", "quick"]),
        (["quick", "--list", "--only", "rift/*"], ["list", "quick", "--only", "rift/*"]),
        (["--only", "rift/*", "quick", "--list"], ["list", "quick", "--only", "rift/*"]),  # an option's value first
        (["quick", "--name", "quick", "--overwrite"], ["run", "quick", "--name", "quick", "--overwrite"]),
        (["restore", "quick", "d"], ["restore", "quick", "d"]),  # already a command
    ],
)
def test_the_old_bench_spellings_are_its_commands(words, command):
    from robustft.cli import bench_argv

    assert bench_argv(words) == command
