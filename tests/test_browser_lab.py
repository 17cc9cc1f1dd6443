"""Run the roofline/systolic lab in a real JupyterLab, driven by headless Chromium, and play with a widget.

JupyterLab runs as a subprocess on a free local port with a random token and a scratch copy of the notebook;
the server and its kernels are always shut down afterwards.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_support import REPO, block_external, chromium_browser, free_port, require_browser

pytestmark = pytest.mark.browser

NOTEBOOK = REPO / "labs" / "gpus_vs_tpus_lab.ipynb"
START_TIMEOUT_S = 60
RUN_TIMEOUT_S = 180

# Cell state from JupyterLab's own model (window.jupyterapp is exposed by --LabApp.expose_app_in_browser).
CELLS_JS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const cells = panel.content.widgets.filter(c => c.model.type === "code");
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  return {
    kernel: kernel ? kernel.status : "none",
    pending: cells.filter(c => c.promptNode && c.promptNode.textContent.includes("*")).length,
    run: cells.filter(c => c.model.executionCount !== null).length,
    code: cells.length,
    errors: cells.flatMap(c => Array.from({length: c.model.outputs.length}, (_, i) => c.model.outputs.get(i))
                      .filter(o => o.type === "error").map(o => o.toJSON().ename + ": " + o.toJSON().evalue)),
  };
}"""


# The systolic stepper's counters line and the source of the figure drawn below it.
STEPPER_JS = """() => {
  const html = [...document.querySelectorAll(".widget-html")].find(e => e.textContent.includes("MACs so far"));
  const box = html && html.closest(".widget-vbox");
  const img = box && box.querySelector(".jp-OutputArea-output img");
  return {counters: html ? html.textContent.replace(/\\s+/g, " ") : "", image: img ? img.src : ""};
}"""


def _get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return resp.status


def _start_lab(root: Path, token: str, env: dict) -> tuple[subprocess.Popen, str]:
    """Start JupyterLab on a free port (retrying if the port is taken meanwhile); return (process, base URL)."""
    for _attempt in range(3):
        port = free_port()
        cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
               f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True",
               "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
        if os.geteuid() == 0:  # containers often run as root; Jupyter refuses that unless told
            cmd.append("--ServerApp.allow_root=True")
        with open(root.parent / "lab.log", "ab") as log:  # the child keeps its own copy of the handle
            proc = subprocess.Popen(cmd, env=env, cwd=root, stdout=subprocess.DEVNULL, stderr=log,
                                    start_new_session=True)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if _get(f"{base}/api/status?token={token}") == 200:
                    return proc, base
            except OSError:
                time.sleep(0.3)
        _stop_lab(proc, base, token)
    log = (root.parent / "lab.log").read_text(errors="replace")[-3000:]
    raise RuntimeError(f"JupyterLab did not start:\n{log}")


def _stop_lab(proc: subprocess.Popen, base: str, token: str) -> None:
    """Shut the server down through its API (which shuts down its kernels); else kill its process group.

    Kernels run in sessions of their own, but they also exit by themselves once their server is gone
    (ipykernel watches its parent process).
    """
    if proc.poll() is None:
        try:
            req = urllib.request.Request(f"{base}/api/shutdown?token={token}", method="POST")
            urllib.request.urlopen(req, timeout=5).close()
            proc.wait(timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            continue


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Iterator[str]:
    """URL of the lab notebook, opened in a freshly started JupyterLab (torn down afterwards)."""
    require_browser()  # before spending seconds on a server nobody can look at
    tmp = tmp_path_factory.mktemp("aihw-lab")  # tests write only into pytest's temporary directories
    root = Path(tmp) / "work"
    root.mkdir()
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)
    env = dict(os.environ)
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                     ("JUPYTERLAB_SETTINGS_DIR", "settings"), ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
                     ("IPYTHONDIR", "ipython")):
        env[var] = str(Path(tmp) / sub)
    news = Path(env["JUPYTERLAB_SETTINGS_DIR"]) / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    token = secrets.token_hex(16)
    proc, base = _start_lab(root, token, env)
    try:
        yield f"{base}/lab/tree/{NOTEBOOK.name}?token={token}"
    finally:
        _stop_lab(proc, base, token)


def _run_all(page) -> dict:
    """Wait for the kernel, run every cell, wait until nothing is pending; return the final cell state."""
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget &&"
                           " window.jupyterapp.shell.currentWidget.content", timeout=60_000)
    page.wait_for_function(f"() => ({CELLS_JS})().kernel === 'idle'", timeout=60_000)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(f"""() => {{ const s = ({CELLS_JS})();
        return s.kernel === 'idle' && s.pending === 0 && (s.run === s.code || s.errors.length > 0); }}""",
                           timeout=RUN_TIMEOUT_S * 1000, polling=500)
    return page.evaluate(CELLS_JS)


def test_lab_runs_and_its_widgets_respond(lab, tmp_path):
    with chromium_browser() as browser:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        blocked: list[str] = []
        block_external(context, blocked)
        page = context.new_page()
        try:
            page.goto(lab, wait_until="domcontentloaded")
            state = _run_all(page)
            assert state["errors"] == [], f"cells raised: {state['errors']}"
            assert state["run"] == state["code"] > 0, state
            stderr = page.locator('.jp-RenderedText[data-mime-type="application/vnd.jupyter.stderr"]')
            tracebacks = [t for t in stderr.all_text_contents() if "Traceback" in t]
            assert not tracebacks, tracebacks
            assert page.locator(".jp-OutputArea-output.jp-mod-error, .jp-OutputArea-output[data-mime-type="
                                '"application/vnd.jupyter.error"]').count() == 0
            assert page.get_by_text("Error displaying widget").count() == 0

            # The widgets rendered: the roofline explorer's chip list and the stepper's cycle slider.
            assert page.locator(".widget-select-multiple").count() >= 1
            slider = page.locator(".widget-slider", has_text="cycle").first
            slider.scroll_into_view_if_needed()
            before = page.evaluate(STEPPER_JS)
            assert before["counters"].startswith("cycle: 0 ") and before["image"], before

            # Step the array three cycles with the keyboard, as a reader would.
            slider.locator(".noUi-handle").first.focus()
            for _ in range(3):
                page.keyboard.press("ArrowRight")
            page.wait_for_function(f"() => ({STEPPER_JS})().counters.startsWith('cycle: 3 ')", timeout=20_000)
            page.wait_for_function(f"""src => {{ const s = ({STEPPER_JS})();
                return s.image && s.image !== src && ({CELLS_JS})().kernel === "idle"; }}""",
                                   arg=before["image"], timeout=20_000)
            after = page.evaluate(STEPPER_JS)
            assert after["counters"] != before["counters"]
            assert "MACs so far: 0 " in before["counters"] and "MACs so far: 0 " not in after["counters"], after
            page.screenshot(path=str(tmp_path / "aihw_lab_browser.png"), full_page=False)
        finally:
            context.close()
