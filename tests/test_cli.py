import json
import subprocess
import sys

import pytest

from aihw.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_hardware_list_shows_every_chip(capsys):
    from aihw.catalogue.hardware import list_chips

    code, out, _ = run(capsys, "hardware", "list")
    assert code == 0
    for chip in list_chips():
        assert chip.name in out
    assert "dense" in out


def test_hardware_list_json_and_kind_filter(capsys):
    code, out, _ = run(capsys, "hardware", "list", "--kind", "tpu", "--json")
    data = json.loads(out)
    assert code == 0 and data and all(c["kind"] == "tpu" for c in data)


def test_hardware_show_text_and_json(capsys):
    code, out, _ = run(capsys, "hardware", "show", "h100 sxm")
    assert code == 0 and "NVIDIA H100 SXM" in out and "http" in out and "bf16 (dense)" in out
    code, out, _ = run(capsys, "hardware", "show", "H100 SXM", "--json")
    data = json.loads(out)
    assert data["flops"]["bf16"]["value"] == pytest.approx(989.4e12, rel=1e-3)
    assert data["flops"]["bf16"]["source"].startswith("http")


def test_roofline_matmul(capsys):
    code, out, _ = run(capsys, "roofline", "--chip", "h100", "--dtype", "bf16", "--matmul", "1", "8192", "8192",
                       "--json")
    data = json.loads(out)
    assert code == 0 and data["estimate"]["bound"] == "memory"
    assert data["estimate"]["flops"] == 2 * 8192 * 8192
    code, out, _ = run(capsys, "roofline", "--chip", "v5e", "--elementwise", "1e6")
    assert code == 0 and "memory-bound" in out


@pytest.mark.parametrize("argv, needle", [
    (["hardware", "show", "H1000"], "closest"),
    (["roofline", "--chip", "h100", "--dtype", "fp9"], "fp9"),
    (["roofline", "--chip", "h100", "--matmul", "0", "1", "1"], "M must be a positive integer"),
    (["roofline", "--chip", "h100", "--matmul", "1.5", "1", "1"], "M must be a positive integer"),
    (["roofline", "--chip", "h100", "--elementwise", "-4"], "N must be a positive integer"),
    (["hardware"], "required"),
    (["nonsense"], "invalid choice"),
])
def test_bad_input_is_one_line_and_status_2(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("aihw: error:"), err
    assert needle in err
    assert "Traceback" not in err


def test_console_script_runs_as_a_process():
    proc = subprocess.run([sys.executable, "-m", "aihw.cli", "hardware", "show", "nope-chip"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_program_name_printed_once_in_errors(capsys):
    for argv in (["memory", "--model", "x"], ["memory"], ["memory", "--params", "7X"], ["plan", "--nodes", "zero"]):
        code, _, err = run(capsys, *argv)
        assert code == 2 and err.startswith("aihw: error: ") and err.count("aihw") <= 2, err
        assert "aihw: error: aihw" not in err and "aihw memory: error" not in err and "aihw plan:" not in err


@pytest.mark.parametrize("argv", [
    ["collectives", "--params", "7e9", "--ranks", "0"],
    ["collectives", "--params", "7e9", "--gpus-per-node", "0"],
    ["collectives", "--params", "7e9", "--nodes", "0"],
    ["plan", "--nodes", "0"],
    ["memory", "--model", "llama-2-7b", "--dp", "0"],
])
def test_no_internal_names_in_messages(capsys, argv):
    code, _, err = run(capsys, *argv)
    assert code == 2 and "world_size" not in err and "argument --" in err, err


def test_sizes_suffixes_and_precision_names(capsys):
    from aihw.cli.args import parse_bytes, parse_count

    assert parse_count("7B") == 7e9 and parse_count("1.5e9") == 1.5e9 and parse_count("70m") == 7e7
    assert parse_count("4K") == 4e3 and parse_count("1T") == 1e12 and parse_count("7_000") == 7000
    assert parse_bytes("80GB") == 80e9 and parse_bytes("16GiB") == 16 * 2**30 and parse_bytes("512mib") == 2**29
    assert parse_bytes("1.5e9") == 1.5e9 and parse_bytes("2TB") == 2e12
    for bad in ("7X", "GB", "1e999", "nan", ""):
        with pytest.raises(ValueError):
            parse_count(bad)
    with pytest.raises(ValueError, match="KiB"):
        parse_bytes("80 gigs")
    _, a, _ = run(capsys, "memory", "--params", "7B", "--precision", "BF16", "--json")
    _, b, _ = run(capsys, "memory", "--params", "7e9", "--precision", "bf16", "--json")
    assert a == b and json.loads(a)["total_bytes"] > 0
    _, a, _ = run(capsys, "collectives", "--bytes", "80GB", "--json")
    assert json.loads(a)["n_bytes"] == 80e9
    code, out, _ = run(capsys, "roofline", "--chip", "h100", "--dtype", "BF16", "--matmul", "4K", "4K", "4K",
                       "--json")
    assert code == 0 and json.loads(out)["estimate"]["flops"] == 2 * 4000**3


def test_defaults_in_help():
    from aihw.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices
    def text(name):
        return " ".join(sub[name].format_help().split())

    memory_help = text("memory")
    assert "(default: bf16)" in memory_help and "(default: adamw)" in memory_help
    assert "(default: None)" not in memory_help and "(default: False)" not in memory_help
    assert "(default: 8)" in text("collectives") and "(default: 5)" in text("plan")


def test_hardware_show_fits_100_columns(capsys):
    from aihw.catalogue.hardware import list_chips

    for chip in list_chips():
        code, out, _ = run(capsys, "hardware", "show", chip.key)
        # a URL is never broken: one longer than a line stands alone on its own line
        too_wide = [line for line in out.splitlines() if len(line) > 100 and not line.startswith("http")]
        assert code == 0 and not too_wide, (chip.key, too_wide)
        assert "http" in out and "read 20" in out or "(20" in out


def test_tpu_answers_do_not_mention_infiniband_unless_asked(capsys):
    _, out, _ = run(capsys, "collectives", "--params", "7B", "--chip", "TPU v5p")
    assert "InfiniBand" not in out and "ICI" in out
    _, out, _ = run(capsys, "collectives", "--params", "7B", "--chip", "TPU v5p", "--network", "InfiniBand NDR")
    assert "InfiniBand" in out
    _, out, _ = run(capsys, "collectives", "--params", "7B", "--chip", "H100 SXM")
    assert "InfiniBand" in out  # GPU answers keep their inter-node network
