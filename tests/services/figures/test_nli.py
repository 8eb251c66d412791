"""The NLI frames and figures, through their data and layout."""

from __future__ import annotations

import pandas as pd

from services.figures import nli as nf

SENT = {
    "method": "sent-nli",
    "window": 1,
    "label": "inconsistent",
    "score": 0.5,
    "n_units": 2,
    "n_failed": 0,
    "sentences": [{"index": 0, "verdict": "consistent"}, {"index": 1, "verdict": "inconsistent"}],
    "windows": [
        {"start": 0, "end": 1, "text": "A.", "label": "consistent", "reasoning": "ok", "error": None, "context": None},
        {
            "start": 1,
            "end": 2,
            "text": "B.",
            "label": "inconsistent",
            "reasoning": "no",
            "error": None,
            "context": {"indices": [0, 4], "sentences": ["d1", "d5"]},
        },
    ],
}
SUMM = {
    "method": "summ-nli",
    "window": None,
    "label": None,
    "score": None,
    "n_units": 1,
    "n_failed": 1,
    "sentences": [],
    "summary": {"label": None, "reasoning": None, "error": "no Judgement given", "context": None},
}
QA = {
    "method": "qg-qa",
    "window": 2,
    "label": "consistent",
    "n_units": 2,
    "n_failed": 1,
    "sentences": [],
    "pairs": [
        {
            "window": 0,
            "question": "Who?",
            "expected_answer": "Ann",
            "answer": "Ann",
            "reasoning": "r",
            "judgement": "consistent",
            "error": None,
            "context": None,
        },
        {
            "window": 1,
            "question": None,
            "expected_answer": None,
            "answer": None,
            "reasoning": None,
            "judgement": None,
            "error": "no questions generated",
            "context": None,
        },
    ],
}


def test_sentences_frame_puts_methods_side_by_side():
    df = nf.sentences_frame(["A.", "B."], [SENT, SUMM])
    assert list(df.columns) == ["#", "sentence", "Sent-NLI (w=1)", "Summ-NLI"]
    assert list(df["Sent-NLI (w=1)"]) == ["✓ consistent", "✗ inconsistent"]
    assert list(df["Summ-NLI"]) == ["? no verdict (whole)"] * 2


def test_overview_and_detail_frames_show_failures_and_context():
    over = nf.overview_frame([SENT, SUMM], [{"calls": 2, "prompt_tokens": 10, "completion_tokens": 5}, {"calls": 2}])
    assert list(over["verdict"]) == ["✗ inconsistent", "? no verdict"]
    assert list(over["parse failures"]) == [0, 1] and list(over["tokens"]) == [15, 0]
    win = nf.windows_frame(SENT)
    assert list(win["context"]) == ["whole document", "document sentences 1, 5"]
    qa = nf.qa_frame(QA)
    assert list(qa["question"]) == ["Who?", "— (no question generated)"]
    assert list(qa["parse failure"]) == ["", "no questions generated"]
    assert nf.used_context(SENT) == [("window 2", [0, 4], ["d1", "d5"])]


def test_cost_figure_has_calls_and_tokens_on_two_axes():
    fig = nf.make_method_cost_figure(pd.DataFrame({"method": ["A", "B"], "calls": [1, 6], "tokens": [900, 5000]}))
    assert [t.name for t in fig.data] == ["calls", "tokens"]
    assert list(fig.data[1].y) == [900, 5000] and fig.data[1].yaxis == "y2"


def test_length_figure_has_one_line_per_method_in_each_panel():
    df = pd.DataFrame(
        {
            "method": ["M1", "M1", "M1", "M2"],
            "kind": ["document length", "document length", "summary length", "document length"],
            "bucket": ["1–10 words", "11–20 words", "1–5 words", "1–10 words"],
            "n": [3, 2, 5, 3],
            "accuracy": [0.5, 1.0, 0.8, 0.2],
        }
    )
    fig = nf.make_length_accuracy_figure(df)
    assert [(t.name, t.xaxis) for t in fig.data] == [("M1", "x"), ("M1", "x2"), ("M2", "x")]
    assert list(fig.data[0].y) == [0.5, 1.0] and list(fig.data[0].customdata) == [3, 2]
    assert [a.text for a in fig.layout.annotations] == ["Document length", "Summary length"]


def test_methods_figure():
    fig = nf.make_methods_figure(pd.DataFrame({"method": ["A"], "balanced_accuracy": [0.7], "calls_per_doc": [3.0]}))
    assert list(fig.data[0].y) == [0.7] and fig.data[1].yaxis == "y2"


def test_method_cost_labels_stand_upright_on_two_lines():
    fig = nf.make_method_cost_figure(
        pd.DataFrame({"method": ["DCE-AMC", "Sent-NLI (w=1)"], "calls": [3, 6], "tokens": [900, 5000]})
    )
    assert list(fig.data[0].x) == ["DCE-AMC", "Sent-NLI<br>(w=1)"]
    assert fig.layout.xaxis.tickangle == 0 and fig.layout.xaxis.automargin


# The pages keep plotly's toolbar visible (about 30 px at the top right): titles sit below it.
TOOLBAR_PX = 30


def test_the_summary_length_title_sits_below_the_toolbar():
    df = pd.DataFrame(
        {"method": ["M"], "kind": ["summary length"], "bucket": ["1–5 words"], "n": [3], "accuracy": [0.5]}
    )
    fig = nf.make_length_accuracy_figure(df)
    # Subplot titles stand on the plot area's top edge, inside the top margin, about 20 px tall.
    assert fig.layout.margin.t >= TOOLBAR_PX + 25


def test_the_right_axes_tick_at_nice_numbers_not_at_the_left_axes_grid():
    """An overlaying axis syncs to the left one's grid by default: calls / document read 0.344 / 0.687 / 1.031."""
    methods = nf.make_methods_figure(
        pd.DataFrame({"method": ["A", "B"], "balanced_accuracy": [0.7, 0.6], "calls_per_doc": [1.375, 1.0]})
    )
    cost = nf.make_method_cost_figure(pd.DataFrame({"method": ["A"], "calls": [3], "tokens": [900]}))
    for fig in (methods, cost):
        assert fig.layout.yaxis2.overlaying == "y" and fig.layout.yaxis2.tickmode == "auto"
