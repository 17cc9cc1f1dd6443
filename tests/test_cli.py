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
