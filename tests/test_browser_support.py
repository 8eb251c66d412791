"""The browser tests' log check: a traceback while the app serves fails a test, and so does one while it stops,
except a page's model load cut off by the interpreter's exit."""

from __future__ import annotations

import pytest

from tests.support.browser import STOPPED_AT, assert_clean_log

SERVING = "  You can now view your Streamlit app in your browser.\n"
CUT_OFF = (
    'Traceback (most recent call last):\n  File "transformers/core_model_loading.py", line 1490\n'
    "RuntimeError: cannot schedule new futures after interpreter shutdown\n"
)
OTHER = 'Traceback (most recent call last):\n  File "db/engine.py", line 1\nOperationalError: database is locked\n'


def write_log(tmp_path, serving: str, stopping: str) -> None:
    (tmp_path / "streamlit.log").write_text(serving + stopping)
    (tmp_path / STOPPED_AT).write_text(str(len(serving.encode())))


def test_a_clean_log_and_a_model_load_cut_off_by_the_stop_pass(tmp_path):
    write_log(tmp_path, SERVING, "")
    assert_clean_log(tmp_path)
    write_log(tmp_path, SERVING, "  Stopping...\n" + CUT_OFF)
    assert_clean_log(tmp_path)


@pytest.mark.parametrize(
    ("serving", "stopping"),
    [(SERVING + CUT_OFF, ""), (SERVING + OTHER, ""), (SERVING, OTHER), (SERVING, CUT_OFF + OTHER)],
    ids=["cut-off-while-serving", "error-while-serving", "error-while-stopping", "error-after-the-cut-off"],
)
def test_any_other_traceback_fails(tmp_path, serving, stopping):
    write_log(tmp_path, serving, stopping)
    with pytest.raises(AssertionError):
        assert_clean_log(tmp_path)


def test_the_named_words_fail_while_serving_or_stopping(tmp_path):
    write_log(tmp_path, SERVING, "MediaFileStorageError: gone\n")
    assert_clean_log(tmp_path)
    with pytest.raises(AssertionError):
        assert_clean_log(tmp_path, "MediaFileStorageError")
