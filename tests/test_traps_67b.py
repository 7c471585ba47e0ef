"""Issue 67, what was left: terminal summaries with n and a Wilson interval, a forecast before long verbs and a
certificate bar per example, a Ctrl-C that says what it kept and how to go on, tampered model folders refused in one
line, and user files that --overwrite, a lock or a report never destroy. Each trap's test failed on the code before
the fix (checked by running this file against a copy of src/ with the fixes taken out); these passed there and guard
the fixes' edges: the forecast's agreement with the bench and its verbs (its module is new), a string config.json
(already one line) and --overwrite still clearing robustft's own best/."""

import json
import logging
import math
import os
import re
import shlex
from pathlib import Path

import pytest
import torch
from transformers import BertForMaskedLM
from transformers.utils import logging as transformers_logging

from robustft import runs
from robustft.atomic import swap_folder
from robustft.bench import costs
from robustft.bench.matrix import expand
from robustft.bench.presets import bench_config
from robustft.bench.pricing import RATES_ENV, RATES_FILE
from robustft.bench.run import cores_shared
from robustft.bench.verb_forecast import forecast_line
from robustft.cli import main
from robustft.config import AttackConfig, BenchConfig, EvalConfig, TrainConfig, build_config
from robustft.data.example import Example
from robustft.errors import ConfigError
from robustft.evaluation import certify
from robustft.models.factory import ModelLoadError, load_classifier, load_config, tiny_bert, tiny_bert_config
from robustft.models.predict import NonFiniteOutput, class_probs
from robustft.report.run import build_report
from robustft.runtime import cpu_cores
from robustft.verbs import check
from train_helpers import tiny_train_config

QUIET = ["--progress", "false", "--precision", "fp32", "--max_length", "16"]
Z95 = 1.959963984540054  # the normal quantile of 0.975


def wilson_text(correct: int, n: int) -> str:
    """ "66.7% [30.0, 90.3] (n=6)" by Wilson's formula, written out here."""
    p = correct / n
    center = (p + Z95**2 / (2 * n)) / (1 + Z95**2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / (1 + Z95**2 / n)
    low, high = max(0.0, center - half), min(1.0, center + half)
    return f"{100 * p:.1f}% [{100 * low:.1f}, {100 * high:.1f}] (n={n})"


def run(argv, capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def trained(tiny_model_dir, tmp_path_factory):
    from robustft.training.loop import train

    return Path(str(train(tiny_train_config(tiny_model_dir, tmp_path_factory.mktemp("t") / "run", max_length=16))))


# 1. Terminal summaries: "66.7% [30.0, 90.3] (n=6)"


def test_eval_prints_one_summary_line_with_n_and_wilsons_interval(tiny_model_dir, tmp_path, capsys):
    out_dir = tmp_path / "e"
    code, out, err = run(["eval", "--model", tiny_model_dir, "-n", "6", "--output_dir", str(out_dir), *QUIET], capsys)
    assert code == 0
    records = [json.loads(line) for line in (out_dir / "examples.jsonl").read_text().splitlines()]
    expected = wilson_text(sum(r["correct"] for r in records), 6)
    assert out.splitlines() == [f"sst2/dev: accuracy {expected}; metrics.json in {out_dir}"]  # before: the JSON
    if "majority-class" in err:  # a random tiny model: its interval reaches the commonest label's share
        assert f"accuracy {expected} is not significantly above the majority-class baseline" in err
        assert not re.search(r"\d\.\d{5,}", err)  # before: 0.6667 and a 17-digit interval


def test_attack_summary_gives_each_accuracy_with_n_and_interval(tiny_model_dir, tmp_path, capsys):
    out_dir = tmp_path / "a"
    argv = ["attack", "--model", tiny_model_dir, "--recipe", "deepwordbug", "-n", "5", "--output_dir", str(out_dir)]
    code, out, _ = run([*argv, *QUIET], capsys)
    assert code == 0
    results = [json.loads(line)["result"] for line in (out_dir / "examples.jsonl").read_text().splitlines()]
    n, failed, succeeded = len(results), results.count("failed"), results.count("succeeded")
    lines = {line[:32].strip(): line[32:].strip() for line in out.splitlines()}
    assert lines["Original accuracy (%)"] == wilson_text(failed + succeeded, n)
    assert lines["Accuracy under attack (%)"] == wilson_text(failed, n)  # before: "40.00", no n, no interval
    if failed + succeeded:
        assert lines["Attack success rate (%)"] == wilson_text(succeeded, failed + succeeded)


# 2. A forecast before long verbs; certificates advance per example


@pytest.fixture
def slow_rates(tmp_path, monkeypatch):
    """The shipped rates slowed 1000-fold (a slow machine's file): every job here is priced in minutes."""
    rates = json.loads(RATES_FILE.read_text())
    for group in ("train", "eval"):
        rates[group]["examples_per_s"]["value"] /= 1000
    for recipe in rates["attacks"].values():
        recipe["seconds_per_example"] *= 1000
    (tmp_path / "rates.json").write_text(json.dumps(rates))
    monkeypatch.setenv(RATES_ENV, str(tmp_path / "rates.json"))


def test_train_prints_the_bench_estimate_before_it_starts(tiny_model_dir, tmp_path, capsys, slow_rates):
    argv = ["train", "--model", tiny_model_dir, "--n_train", "8", "--n_dev", "8", "--epochs", "1"]
    code, _, err = run([*argv, "--output_dir", str(tmp_path / "r"), *QUIET], capsys)
    assert code == 0
    first = err.splitlines()[0]  # before: no forecast at all
    assert re.fullmatch(r"robustft: train: expected about [1-9]\d* min \(.*\)", first)


def test_a_job_of_under_a_minute_gets_no_forecast(tiny_model_dir):
    assert forecast_line("train", TrainConfig(model=tiny_model_dir, n_train=8, n_dev=8, epochs=1)) is None


def test_the_forecast_is_the_price_bench_gives_the_same_training():
    overrides = ["n_train=20000", "epochs=3", "method=pgd"]
    minutes = re.search(r"expected about (\d+) min", forecast_line("train", build_config(TrainConfig, [], overrides)))
    bench = BenchConfig(methods={"pgd": {"method": "pgd"}}, baseline="pgd", sizes=[20000], train={"epochs": 3})
    [job] = expand(bench)  # the same training as one bench cell (no evaluations or attacks)
    assert int(minutes.group(1)) == round(costs.expected_seconds([job], [job])[0] / 60)


def test_attack_and_certify_get_a_forecast_and_a_plain_eval_none(tiny_model_dir, slow_rates):
    attack = build_config(AttackConfig, [], [f"model={tiny_model_dir}", "recipe=textfooler", "n=100"])
    assert forecast_line("attack", attack).startswith("attack: expected about ")
    eval_cfg = EvalConfig(model=tiny_model_dir, n=100)
    assert forecast_line("eval", eval_cfg) is None  # an evaluation takes seconds
    eval_cfg.certify = True
    assert forecast_line("eval", eval_cfg).startswith("eval: expected about ")


class VoteShares(torch.nn.Module):
    """An ensemble whose vote shares are set by hand per example length (certify_records' interface)."""

    def __init__(self, shares, seed=3):
        super().__init__()
        self.shares, self.config = shares, type("Config", (), {"num_labels": 2})()
        self.settings = type("Settings", (), {"seed": seed})()
        self.defense = type("Defense", (), {"certificate": lambda _, p, ids: {"p": p}})()

    def with_settings(self, **changes):
        return self

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        rows = [self.shares[int(n)] for n in attention_mask.sum(1)]
        return type("Out", (), {"logits": torch.tensor(rows).log()})()


def test_certificates_are_counted_one_example_at_a_time(monkeypatch):
    _, tok = tiny_bert(2)
    examples = [Example("good", 1), Example("a good film", 1), Example("a very good film indeed", 0)]
    lengths = [len(tok(e.text_a)["input_ids"]) for e in examples]
    shares = dict(zip(lengths, [[0.2, 0.8], [0.5, 0.5], [0.9, 0.1]], strict=True))
    sizes = []

    def counted(model, tokenizer, batch, **kwargs):
        sizes.append(len(batch))
        return class_probs(model, tokenizer, batch, **kwargs)

    monkeypatch.setattr(certify, "class_probs", counted)
    records = certify.certify_records(VoteShares(shares), tok, examples, samples=10, alpha=0.05, progress=False)
    assert sizes == [1, 1, 1]  # before: [3], one step of the bar for the whole split
    assert [r["votes"] for r in records] == [8, 5, 9]  # 0.8, 0.5 and 0.9 of 10 copies vote for the true label


# 3. Ctrl-C


def test_ctrl_c_names_the_checkpoint_its_disk_and_the_command_that_continues(tiny_model_dir, tmp_path, monkeypatch):
    import robustft.training.loop as loop

    real = loop.checkpoint

    def checkpoint_then_ctrl_c(*args, **kwargs):
        real(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(loop, "checkpoint", checkpoint_then_ctrl_c)
    folder = tmp_path / "run"
    argv = ["train", "--model", tiny_model_dir, "--n_train", "16", "--n_dev", "8", "--batch_size", "4"]
    argv += ["--checkpoint_every", "2", "--output_dir", str(folder), *QUIET]
    err_file = tmp_path / "stderr"
    with open(err_file, "w") as err, monkeypatch.context() as m:
        m.setattr("sys.stderr", err)
        assert main(argv) == 130
    err = err_file.read_text()
    [line] = [line for line in err.splitlines() if line.startswith("interrupted: ")]  # on a line of its own
    kept = re.search(r"kept the checkpoint (\S+);", line).group(1)
    assert Path(kept).parent == folder / "checkpoint" and Path(kept).is_dir()
    megabytes = float(re.search(rf"{re.escape(str(folder))} takes (\d+) MB on disk", line).group(1))
    on_disk = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6
    assert abs(megabytes - on_disk) <= 1
    assert line in (folder / "train.log").read_text()  # before: nothing in train.log
    command = shlex.split(line.split("continue with: ", 1)[1])
    assert command[:2] == ["robustft", "train"] and command[-1] == "--resume"
    monkeypatch.setattr(loop, "checkpoint", real)
    assert main(command[1:]) == 0  # the printed command continues the run
    assert "resumed" in (folder / "train.log").read_text()
    assert runs.is_finished(folder)


# 4. Tampered model folders and values with no effect


def model_folder(tmp_path, tiny_model_dir, **changes) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    for f in Path(tiny_model_dir).iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **changes}))
    return folder


@pytest.mark.parametrize(
    "changes, named",
    [
        ({"num_hidden_layers": 1e6}, "num_hidden_layers"),  # before: built a million layers (hung)
        ({"max_position_embeddings": 1e300}, "max_position_embeddings"),
        ({"vocab_size": -3}, "vocab_size"),
        ({"layer_norm_eps": float("nan")}, "layer_norm_eps"),  # before: scored with NaN probabilities
        ({"im": {"K": 1e9}}, "im.K"),  # a saved IM model beyond the user limits (hung)
    ],
)
def test_a_tampered_model_config_is_refused_naming_the_file_and_key(tiny_model_dir, tmp_path, changes, named):
    folder = model_folder(tmp_path, tiny_model_dir, **changes)
    with pytest.raises(ModelLoadError) as caught:
        load_config(str(folder))
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{folder / 'config.json'}: {named}")


def test_a_string_config_json_is_one_line_on_the_command_line(tiny_model_dir, tmp_path, capsys):
    folder = model_folder(tmp_path, tiny_model_dir)
    (folder / "config.json").write_text('"just a string"')
    code, _, err = run(["eval", "--model", str(folder), "-n", "2", *QUIET], capsys)
    assert code == 2 and err.count("\n") == 1 and "config.json is not a JSON object" in err


def test_nan_outputs_are_refused_naming_nan(tiny_model_dir):
    model, tok = load_classifier(tiny_model_dir)
    with torch.no_grad():
        model.classifier.weight.fill_(float("nan"))
    with pytest.raises(NonFiniteOutput, match=r"outputs are NaN for 2 of 2 examples"):
        class_probs(model, tok, [Example("good", 1), Example("bad", 0)])  # before: probabilities of NaN, class 0


def test_an_inherited_value_is_checked_as_a_typed_one(trained, tmp_path, capsys):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for f in trained.rglob("*"):
        target = run_dir / f.relative_to(trained)
        target.mkdir(exist_ok=True) if f.is_dir() else target.write_bytes(f.read_bytes())
    described = json.loads((run_dir / "config.json").read_text())
    described["config"]["max_length"] = -5
    (run_dir / "config.json").write_text(json.dumps(described))
    code, _, err = run(["eval", "--model", str(run_dir), "-n", "2", "--progress", "false"], capsys)
    assert code == 2 and "Traceback" not in err  # before: a traceback
    assert err.splitlines()[-1].startswith(f"robustft: error: {run_dir / 'config.json'}: inherited max_length")


def test_im_layers_none_means_no_layer_and_is_refused_as_k_0_is():
    with pytest.raises(ConfigError, match=r"^im\.layers: no layer with --arch im"):
        check(build_config(TrainConfig, [], ["arch=im", "im.layers=none"]))  # before: null, every layer


def test_weight_decay_beyond_1_is_refused():
    with pytest.raises(ConfigError, match=r"weight_decay"):
        build_config(TrainConfig, [], ["weight_decay=1e6"])  # before: trained, dev loss 13.8, exit 0


def test_an_empty_methods_mapping_on_the_command_line_is_refused():
    with pytest.raises(ConfigError, match=r"'methods' \{\} changes nothing"):
        bench_config("quick", ["methods={}"])  # before: the preset's methods, silently


def test_a_bench_train_output_dir_is_refused():
    cfg = bench_config("quick", ["train.output_dir=elsewhere"])
    with pytest.raises(ConfigError, match=r"^train\.output_dir: a bench sets it per cell"):
        expand(cfg)  # before: every cell went to <bench>/cells/ anyway


def test_workers_beyond_the_range_are_refused_and_beyond_the_cores_capped():
    with pytest.raises(ConfigError, match=r"workers"):
        bench_config("quick", ["workers=1e9"])  # before: --list simulated a billion workers (hung)
    with pytest.warns(UserWarning, match=rf"workers: 1000 on {cpu_cores()} CPU cores: running {cpu_cores()}"):
        assert cores_shared(bench_config("quick", ["workers=1000"])).workers == cpu_cores()


# 5. User files


def train_run_folder(tmp_path) -> Path:
    """A robustft train run folder (only its config.json matters to --overwrite)."""
    folder = tmp_path / "run"
    cfg = TrainConfig(output_dir=str(folder))
    runs.open_run(folder, cfg, {}).close()
    return folder


@pytest.mark.parametrize(
    "user_file, named",
    [("best/notes.txt", "best/notes.txt"), ("trackers/notes.txt", "trackers/notes.txt"), ("best.old", "best.old")]
    + [("best/extra/a.json", "best/extra")],  # a folder in best/: save_pretrained writes none
)
def test_overwrite_refuses_to_delete_a_users_file_in_robustfts_folders(tmp_path, user_file, named):
    folder = train_run_folder(tmp_path)
    (folder / "best").mkdir()
    (folder / "best" / "model.safetensors").write_bytes(b"weights")
    (folder / user_file).parent.mkdir(parents=True, exist_ok=True)
    (folder / user_file).write_text("mine")
    with pytest.raises(ConfigError, match=rf"robustft did not write where --overwrite deletes: {named};"):
        runs.open_run(folder, TrainConfig(output_dir=str(folder), seed=1), {}, overwrite=True)
    assert (folder / user_file).read_text() == "mine"  # before: deleted


def test_overwrite_still_clears_robustfts_own_best_folder(tmp_path):
    folder = train_run_folder(tmp_path)
    (folder / "best").mkdir()
    for name in ("model.safetensors", "config.json", "tokenizer.json", "vocab.txt", "README.md"):
        (folder / "best" / name).write_text("x")
    runs.open_run(folder, TrainConfig(output_dir=str(folder), seed=1), {}, overwrite=True).close()
    assert not (folder / "best").exists()


def test_a_users_lock_file_in_a_refused_folder_is_left_as_it_was(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / ".lock").write_text("my lock notes\n")
    (folder / "data.csv").write_text("text,label\n")
    with pytest.raises(ConfigError):
        runs.open_run(folder, EvalConfig(model="m", output_dir=str(folder)), {})
    assert (folder / ".lock").read_text() == "my lock notes\n"  # before: overwritten with a pid


def test_report_refuses_to_overwrite_a_users_report_md(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.md").write_text("my report")
    with pytest.raises(ConfigError, match=r"holds report\.md, which this report would replace"):
        build_report([tmp_path / "nothing"], out)
    assert (out / "report.md").read_text() == "my report"


def test_report_keeps_a_users_example_page_it_did_not_write(trained, tmp_path):
    out = tmp_path / "out"
    build_report([trained], out, plots=False)  # a build: it records what it wrote
    assert "report.md" in json.loads((out / "report-files.json").read_text())
    (out / "examples-007.html").write_text("my page")
    with pytest.raises(ConfigError, match=r"holds examples-007\.html"):
        build_report([trained], out, plots=False)  # before: deleted as a stale example page
    assert (out / "examples-007.html").read_text() == "my page"
    (out / "examples-007.html").unlink()
    build_report([trained], out, plots=False)  # its own files it replaces


# 6. File modes and the load report


def test_a_swapped_in_folder_gets_the_mode_every_other_file_gets(tmp_path):
    reference = tmp_path / "plain"
    reference.write_text("x")  # what open() gives under this umask
    tmp = tmp_path / "best.tmp"
    tmp.mkdir()
    (tmp / "model.safetensors").write_bytes(b"w")
    os.chmod(tmp / "model.safetensors", 0o600)  # as safetensors writes it
    swap_folder(tmp, tmp_path / "best")
    assert (tmp_path / "best" / "model.safetensors").stat().st_mode & 0o777 == reference.stat().st_mode & 0o777


class Recorded(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def test_loading_a_model_prints_no_transformers_load_report(tmp_path):
    tok = tiny_bert(2)[1]
    BertForMaskedLM(tiny_bert_config(2, len(tok))).save_pretrained(tmp_path / "mlm")  # no classifier head
    tok.save_pretrained(tmp_path / "mlm")
    transformers_logging.set_verbosity_warning()  # a Python user's default
    recorded = Recorded()
    logging.getLogger("transformers").addHandler(recorded)  # what transformers' own stderr handler is given
    try:
        load_classifier(str(tmp_path / "mlm"))
        assert not [m for m in recorded.messages if "LOAD REPORT" in m]  # before: the table of missing keys
        assert transformers_logging.get_verbosity() == transformers_logging.WARNING  # for that call only
    finally:
        logging.getLogger("transformers").removeHandler(recorded)
        transformers_logging.set_verbosity_error()
