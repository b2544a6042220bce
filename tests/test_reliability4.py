"""Reliability, round 4: report pages that run no script from data, files written as ``open`` would
write them, no hang on a FIFO, refusals before any work (each case named as the round names it)."""
from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from experiments import paths
from reports import html as page

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_reliability import one_line_error, run_cli  # noqa: E402


# ---------------------------------------------------------------- h01, h02: only http(s), relative and fragment links

@pytest.mark.parametrize("target", ["javascript:alert(1)", "JavaScript:alert(1)", "java\tscript:alert(1)",
                                    "\x01javascript:alert(1)", "data:text/html,<b>x</b>", "vbscript:x", "file:///etc/passwd"])
def test_h01_a_link_with_another_scheme_is_text(target: str) -> None:
    out = page.markdown_html(f"see [x]({target}) here")
    assert "<a " not in out and "x" in out
    assert page.safe_href(target) is None


@pytest.mark.parametrize("target", ["https://example.org/a", "http://x.org", "other/README.md", "#sb-games", "../x/index.html"])
def test_h01_http_relative_and_fragment_links_stay_links(target: str) -> None:
    assert "<a href=" in page.markdown_html(f"see [x]({target}) here")


def test_h02_a_report_folder_named_like_a_scheme_links_as_a_path(tmp_path: Path) -> None:
    d = tmp_path / "javascript:alert(1)"
    d.mkdir()
    (d / "ablation.md").write_text("# t\n\n[y](javascript:alert(2))\n")
    out = page.index_page(tmp_path).read_text()
    assert 'href="./javascript:alert(1)/ablation.md"' in out  # a path, not a scheme
    assert '<a href="javascript' not in out  # the finding's link is text


# ---------------------------------------------------------------- h03: nothing from outside the report folder

def test_h03_a_report_markdown_that_is_a_link_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("# secret\n")
    d = tmp_path / "r"
    d.mkdir()
    (d / "ablation.md").symlink_to(secret)
    with pytest.raises(ValueError, match="not a regular file"):
        page.folder_page(d)
    assert "secret" not in page.index_page(tmp_path).read_text().split("<tbody>")[1]


def test_h03_images_outside_the_folder_are_not_inlined(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"0" * 20
    (tmp_path / "outside.png").write_bytes(png)
    d = tmp_path / "r"
    d.mkdir()
    (d / "inside.png").write_bytes(png)
    (d / "link.png").symlink_to(tmp_path / "outside.png")
    md = f"![a](../outside.png)\n\n![b]({tmp_path / 'outside.png'})\n\n![c](link.png)\n\n![d](inside.png)\n"
    out = page.markdown_html(md, d)
    assert out.count("data:image/png;base64") == 1 and "[a: ../outside.png]" in out and "[c: link.png]" in out


# ---------------------------------------------------------------- h05: data cannot stop the page's script

def test_h05_comment_openers_and_script_tags_in_data_stay_inside_the_json() -> None:
    data = {"title": "<!--<script>", "games": [{"w": "</script><script>window.x=1</script>", "b": "<!--"}]}
    text = page.script_json(data)
    assert "<" not in text and json.loads(text) == data


def test_h05_non_finite_numbers_become_null() -> None:
    assert json.loads(page.script_json({"a": float("inf"), "b": [float("nan"), 1.5]})) == {"a": None, "b": [None, 1.5]}
    assert page._num("inf") is None and page._num("nan") is None and page._num("2.5") == 2.5


# ---------------------------------------------------------------- h10: the umask, as open honours it

@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_h10_atomic_writes_honour_the_umask(tmp_path: Path, mask: int, mode: int) -> None:
    old = os.umask(mask)
    try:
        paths.write_atomic(tmp_path / "f.json", "{}")
        paths.save_atomic(tmp_path / "g.bin", lambda tmp: Path(tmp).write_bytes(b"x"))
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "f.json").stat().st_mode) == mode
    assert stat.S_IMODE((tmp_path / "g.bin").stat().st_mode) == mode


# ---------------------------------------------------------------- h06, h07: int8 verdicts that cannot lie

def _int8_config(tmp_path: Path, baseline: str, options: str) -> str:
    from test_selfplay import tiny_weights

    w = tiny_weights(str(tmp_path / "tiny.pt"))
    text = f'''name = "int8-tiny"
variant = "crazyhouse"
baseline = "{baseline.format(w=w)}"
games = 4
nodes = [8]
report_dir = "{tmp_path / 'rep'}"
sprt = {{ elo0 = -30, elo1 = 0, alpha = 0.05, beta = 0.05 }}

[[variants]]
name = "int8"
options = {{ {options} }}
'''
    (tmp_path / "int8.toml").write_text(text)
    return str(tmp_path / "int8.toml")


@pytest.mark.parametrize("baseline, options, match", [
    ("rise-mcts:weights={w}", 'inference = "onnxruntime-int8"', "must name inference=onnxruntime"),
    ("rise-mcts:weights={w},inference=auto", 'inference = "onnxruntime-int8"', "not auto"),
    ("rise-mcts:weights={w},inference=onnxruntime", 'inference = "onnxruntime-int8", batch_size = 2',
     "differs from the baseline in search settings"),
    ("rise-mcts:weights={w},inference=onnxruntime", 'inference = "onnxruntime-int8", threads = 2',
     "differs from the baseline in threads"),
])
def test_h06_a_verdict_only_from_int8_against_float32_of_the_same_engine(tmp_path: Path, baseline: str, options: str,
                                                                         match: str) -> None:
    from experiments.harness import ablate, accept
    from experiments.harness.tomlconfig import ConfigError

    ab = ablate.load(_int8_config(tmp_path, baseline, options))
    with pytest.raises(ConfigError, match=match):
        accept.int8_variant(ab)


def test_h06_a_weaker_verdict_never_replaces_a_stronger_one() -> None:
    from experiments.harness.accept import stronger

    shipped = {"verdict": "accepted", "games": 649}
    assert stronger(shipped, {"verdict": "undecided", "games": 2})
    assert stronger(shipped, {"verdict": "accepted", "games": 40})
    assert not stronger(shipped, {"verdict": "rejected", "games": 800})
    assert not stronger({"verdict": "undecided", "games": 400}, {"verdict": "accepted", "games": 100})


def test_h07_a_verdicts_file_that_does_not_parse_is_refused_not_replaced(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from evaluators import onnx_runtime

    bad = tmp_path / "int8-verdicts.json"
    text = '{\n "a": {"verdict": "accepted", "games": 649},\n}\n'  # one stray comma
    bad.write_text(text)
    monkeypatch.setattr(onnx_runtime, "SHIPPED_VERDICTS", bad)
    with pytest.raises(ValueError, match="is not a verdicts file .*nothing written"):
        onnx_runtime.record_int8_verdict("b", {"verdict": "accepted"}, shipped=True)
    assert bad.read_text() == text
    # and the command refuses it before any game, with one line
    rc, _, err = run_cli(capsys, "accept-int8", _int8_config(tmp_path, "rise-mcts:weights={w},inference=onnxruntime",
                                                            'inference = "onnxruntime-int8"'), "--quiet")
    assert rc == 2 and "is not a verdicts file" in one_line_error(err) and not (tmp_path / "rep").exists()
    assert bad.read_text() == text
