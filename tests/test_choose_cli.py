"""`aihw choose`: JSON equal to the API's answer, text tables, and one-line errors with status 2."""

import json

import pytest

from aihw.choosing import ServingObjective, TrainingObjective, choose
from aihw.cli import command_names, live, main


def run(capsys, *argv):
    code = main(["choose", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_registered_like_the_other_commands():
    assert "choose" in command_names()


def test_training_json_is_the_api_answer(capsys):
    code, out, err = run(capsys, "--model", "llama-2-7b", "--deadline-days", "30", "--chip", "h100,v6e,b200", "--json")
    assert code == 0, err
    data = json.loads(out)
    api = choose(TrainingObjective(model="llama-2-7b", deadline_days=30, chip_names=("h100", "v6e", "b200")))
    assert data == json.loads(json.dumps(api.to_dict()))
    assert data["sorted_by"] == "cost" and data["objective"]["kind"] == "training"
    first = data["options"][0]
    for key in ("chip", "chips", "layout", "feasible", "reason", "why", "figures", "details"):
        assert key in first
    for figure in ("time", "cost", "energy"):
        assert set(first["figures"][figure]) == {"value", "unit", "low", "high", "note"}
    h100 = next(o for o in data["options"] if o["chip"] == "NVIDIA H100 SXM")
    assert h100["details"]["price"]["kind"] == "capacity-block" and h100["figures"]["time"]["low"] is not None
    b200 = next(o for o in data["options"] if o["chip"] == "NVIDIA B200")
    assert b200["figures"]["cost"]["value"] is None and b200["details"]["price"] is None


def test_serving_json_and_suffixes(capsys):
    code, out, err = run(capsys, "--objective", "serve", "--model", "llama-2-70b", "--rate", "10", "--prompt", "1K",
                         "--output", "256", "--ttft-ms", "1000", "--tpot-ms", "50", "--sort", "time", "--json")
    assert code == 0, err
    data = json.loads(out)
    api = choose(ServingObjective(model="llama-2-70b", rate=10, prompt=1000, output=256, criterion="time"))
    assert data == json.loads(json.dumps(api.to_dict()))
    tpots = [o["figures"]["tpot"]["value"] for o in data["options"] if o["feasible"]]
    assert tpots == sorted(tpots) and data["sorted_by"] == "tpot"


def test_text_tables(capsys):
    code, out, _ = run(capsys, "--model", "llama-2-70b", "--chips", "8", "--tokens", "1B", "--chip", "h100,mi300x")
    assert code == 0
    assert "Train llama-2-70b" in out and "Cannot meet the objective" in out and "(memory)" in out
    assert "Assumptions:" in out
    code, out, _ = run(capsys, "--objective", "serve", "--model", "llama-3-8b", "--rate", "5", "--chip", "h100")
    assert code == 0 and "TPOT ms" in out and "capacity-block price" in out


@pytest.mark.parametrize("argv, message", [
    (["--deadline-days", "0.00001"], "no catalogue chip can meet this objective"),
    (["--model", "llama-2-7b"], "give a deadline"),
    (["--model", "llama-2-7b", "--params", "7B", "--chips", "8"], "not both"),
    (["--rate", "3", "--chips", "8"], "--rate belongs to a serve objective"),
    (["--objective", "serve", "--model", "llama-2-7b", "--rate", "1", "--deadline-days", "3"], "--deadline-days"),
    (["--objective", "serve", "--model", "llama-2-7b"], "needs --rate"),
    (["--objective", "serve", "--rate", "0"], "argument --rate"),
    (["--objective", "serve", "--rate", "-1"], "argument --rate"),
    (["--chips", "8", "--chip", "H1000"], "unknown chip"),
    (["--chips", "8", "--chip", ","], "at least one"),
    (["--chips", "8", "--sort", "speed"], "argument --sort"),
    (["--chips", "8", "--optimizer", "lion"], "optimizer"),
    (["--deadline-days", "nan"], "argument --deadline-days"),
    (["--objective", "serve", "--model", "llama-2-70b", "--rate", "1", "--tpot-ms", "0.01"],
     "no catalogue chip can meet this objective"),
])
def test_bad_objectives_one_line_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and not out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aihw: error:") and message in lines[0]


@pytest.mark.parametrize("argv", [
    ["--model", "llama-2-7b", "--deadline-days", "30", "--chip", "H100 SXM,H200,TPU v5e,TPU v5p,TPU v6e"],
    ["--objective", "serve", "--model", "llama-2-70b", "--rate", "10", "--ttft-ms", "1000", "--tpot-ms", "50"],
])
def test_live_calculator_is_the_cli_json(capsys, argv):
    got = live.run("choose", argv)
    assert got["ok"], got
    code, out, _ = run(capsys, *argv, "--json")
    assert code == 0 and got["result"] == json.loads(out)
    best = got["result"]["best"]
    assert best["chip"] == got["result"]["options"][0]["chip"] and got["result"]["ranking"]
    assert live.run("choose", ["--objective", "serve", "--rate", "1", "--deadline-days", "3"])["error"].startswith(
        "aihw: error: --deadline-days")
