"""The sentence labeller: an annotator marks each sentence consistent or inconsistent, with a note.

Drop it into any page that shows sentences with the model's verdicts: the annotation queue (a dataset
item), or the Evaluate and History pages (a run's round, `Target.run(run_id, round_idx)`). Every widget key
starts with `key_prefix` and names the target, so several labellers can share a page.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Protocol

import streamlit as st
from sqlalchemy.engine import Engine

from services import annotations
from services.annotations import SentenceLabelPublic, Target
from services.errors import InputError

# Streamlit's own button shortcuts (`st.button(shortcut=...)`): they ignore keys typed into a text field,
# and show the key on the button. "C" and "R" are reserved by Streamlit (clear cache, rerun).
KEY_CONSISTENT, KEY_INCONSISTENT, KEY_NEXT, KEY_PREVIOUS = "1", "2", "N", "P"
KEYS_HELP = (
    f"Keyboard: **{KEY_CONSISTENT}** consistent · **{KEY_INCONSISTENT}** inconsistent (the sentence marked "
    f"⌨, the first you have not labelled) · **{KEY_NEXT}** next item · **{KEY_PREVIOUS}** previous item. "
    "Keys do nothing while you type in a note."
)
CSS = """
<style>
.cs-an-sent {font-size: 1.02rem; line-height: 1.6;}
.cs-an-num {display: inline-block; min-width: 1.6rem; font-weight: 600; color: #4a5363;}
.cs-an-current {background: #fff6d6; border-radius: 4px; padding: 1px 4px;}
.cs-an-model {font-size: 0.9rem; color: #4a5363; margin-top: 2px;}
.cs-an-agree {font-size: 0.8rem; font-weight: 600; margin-left: 6px;}
.cs-an-agree.yes {color: #2e7d4f;} .cs-an-agree.no {color: #b35c00;}
</style>
"""


class HasVerdict(Protocol):
    """A model's verdict on one sentence: services.annotations.ModelVerdict, or dcr.SentenceVerdict."""

    verdict: str
    reason: str | None


def _text_html(text: str) -> str:
    # "$" would start LaTeX in Streamlit markdown.
    return html.escape(text).replace("$", "&#36;")


def _flash_key(key_prefix: str, target: Target) -> str:
    return f"{key_prefix}_{target.key}_flash"


def _set_label(
    engine: Engine,
    annotator_id: int,
    target: Target,
    idx: int,
    label: int,
    note_key: str,
    key_prefix: str,
    token: str | None = None,
) -> None:
    try:
        annotations.label_sentence(
            engine,
            annotator_id=annotator_id,
            target=target,
            sentence_idx=idx,
            label=label,
            note=st.session_state.get(note_key),
            token=token,
        )
    except InputError as exc:
        st.session_state[_flash_key(key_prefix, target)] = str(exc)


def _save_note(
    engine: Engine, annotator_id: int, target: Target, idx: int, note_key: str, key_prefix: str, token: str | None
) -> None:
    """A note typed after the label is saved at once; one typed before waits for the label."""
    mine = annotations.my_labels(engine, annotator_id, target).get(idx)
    if mine is not None:
        _set_label(engine, annotator_id, target, idx, mine.label, note_key, key_prefix, token)


def _verdict_html(v: HasVerdict, mine: SentenceLabelPublic | None) -> str:
    verdict = v.verdict if v.verdict in ("consistent", "inconsistent") else "unknown"
    reason = f" — {_text_html(v.reason)}" if v.reason else ""
    agree = ""
    if mine is not None and verdict != "unknown":
        same = annotations.LABELS[mine.label] == verdict
        agree = (
            '<span class="cs-an-agree yes">you agree</span>'
            if same
            else '<span class="cs-an-agree no">you corrected the model</span>'
        )
    return (
        f'<div class="cs-an-model"><span class="cs-chip {verdict}">model: {verdict}</span>{agree}'
        f'<span class="cs-an-reason">{reason}</span></div>'
    )


def release_focus() -> None:
    """Take the focus off the field that holds it (the name picker, once a name is picked): the label shortcuts
    ignore keys typed into a field, so until the page was clicked 1, 2 and N did nothing."""
    st.html(
        '<span class="cs-script" hidden></span><script>'
        "const el = document.activeElement; if (el && el !== document.body) { el.blur(); }</script>",
        unsafe_allow_javascript=True,
    )


def render_sentence_labeller(
    engine: Engine,
    *,
    annotator_id: int,
    target: Target,
    sentences: Sequence[str],
    verdicts: Sequence[HasVerdict | None] | None = None,
    show_verdicts: bool | None = None,
    blind: bool = True,
    key_prefix: str = "lab",
    shortcuts: bool = False,
    token: str | None = None,
) -> dict[int, SentenceLabelPublic]:
    """Two buttons (Consistent / Inconsistent) and a note per sentence; returns this annotator's labels.

    `verdicts[i]` is the model's verdict on sentence i (None: no verdict). In blind mode a verdict is not
    sent to the browser at all until this annotator has labelled that sentence. `show_verdicts` (default:
    whether `verdicts` was given) says whether to mention verdicts at all. With `shortcuts`, the keys
    KEY_CONSISTENT / KEY_INCONSISTENT label the first sentence not labelled yet; use it for one labeller per page.
    `token`: the personal link the annotator labels through (None for the owner); every write checks it again.
    """
    st.html(CSS)
    show = (verdicts is not None) if show_verdicts is None else show_verdicts
    flash = st.session_state.pop(_flash_key(key_prefix, target), None)
    if flash:
        st.error(flash)
    mine = annotations.my_labels(engine, annotator_id, target)
    current = next((i for i in range(len(sentences)) if i not in mine), None) if shortcuts else None
    for i, text in enumerate(sentences):
        base = f"{key_prefix}_{target.key}_{i}"
        note_key = f"{base}_note"
        label = mine.get(i)
        if note_key not in st.session_state:
            st.session_state[note_key] = label.note if label else ""
        with st.container(border=True, key=f"{base}_box"):
            left, right = st.columns([3, 2], vertical_alignment="center")
            marker = (
                ' <span class="cs-an-current" title="The keyboard labels this sentence">⌨</span>'
                if i == current
                else ""
            )
            left.markdown(
                f'<div class="cs-an-sent"><span class="cs-an-num">{i + 1}.</span>{_text_html(text)}{marker}</div>',
                unsafe_allow_html=True,
            )
            left.text_input(
                "Note",
                key=note_key,
                placeholder="Note (optional): why, what is wrong…",
                label_visibility="collapsed",
                on_change=_save_note,
                args=(engine, annotator_id, target, i, note_key, key_prefix, token),
            )
            buttons = right.container(horizontal=True, horizontal_alignment="right")
            for value, name, icon, key in (
                (1, "Consistent", ":material/check:", KEY_CONSISTENT),
                (0, "Inconsistent", ":material/close:", KEY_INCONSISTENT),
            ):
                buttons.button(
                    name,
                    key=f"{base}_{value}",
                    icon=icon,
                    type="primary" if label is not None and label.label == value else "secondary",
                    on_click=_set_label,
                    args=(engine, annotator_id, target, i, value, note_key, key_prefix, token),
                    shortcut=key if i == current else None,
                    help=f"Mark sentence {i + 1} {name.lower()}",
                )
            if show:
                v = verdicts[i] if verdicts is not None and i < len(verdicts) else None
                if blind and label is None:
                    st.caption(":material/visibility_off: Model verdict hidden until you answer.")
                elif v is None:
                    st.caption("No model verdict for this sentence.")
                else:
                    st.markdown(_verdict_html(v, label), unsafe_allow_html=True)
    return mine


ANNOTATOR_KEY = "annotator_name"  # who is labelling, shared by the Evaluate, History and Annotate pages


def render_run_annotation(engine: Engine, *, run_id: int, rnd, key_prefix: str) -> None:
    """Human labels for the sentences of one round of a run, beside the model's verdicts.

    Labels are stored per annotator; the model's verdicts are never changed.
    """
    name = st.text_input(
        "Annotator",
        key=ANNOTATOR_KEY,
        placeholder="Your name, to label these sentences",
        help="Labels are stored under this name. The model's verdicts are never changed.",
    )
    if not (name or "").strip():
        st.caption("Type your name to mark each sentence consistent or inconsistent and add notes.")
        return
    try:
        annotator = annotations.get_or_create_annotator(engine, name.strip())
    except InputError as exc:
        st.error(str(exc))
        return
    render_sentence_labeller(
        engine,
        annotator_id=annotator.id,
        target=Target.run(run_id, rnd.index),
        sentences=[s.text for s in rnd.evaluation.sentences],
        verdicts=rnd.evaluation.sentences,
        blind=False,
        key_prefix=f"{key_prefix}_{run_id}_{rnd.index}",
    )
