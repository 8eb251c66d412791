"""Rendering of DCR results: colour-coded text, sentence cards, scores, rewrites, round charts."""

from __future__ import annotations

import html
from collections.abc import Callable

import streamlit as st

from services.dcr import REFERENCE_NOUN, Delivered, Evaluation, Round, evidence
from services.dcr.evidence import SentenceEvidence, Span
from services.disagreement import Disagreement, disagreements
from services.estimates import Spent, calls_text
from services.figures.dcr import make_rounds_figure, rounds_frame  # noqa: F401 - the views' public names
from services.text import diff_html

VERDICT_ICON = {"consistent": "✓", "inconsistent": "✗", "unknown": "?"}
NOVEL_TITLE = {"number": "number or date", "name": "name", "word": "word"}


@st.cache_data(max_entries=256, ttl=3600, show_spinner="Finding evidence in the reference…")
def cached_evidence(reference: str, sentences: tuple[str, ...], task: str, with_embeddings: bool) -> list:
    """Evidence for each sentence, cached per (reference, sentences, task, mode): reruns and rounds cost nothing.

    Computed on view rather than stored with the run: it is fast (the MiniLM model loads once per process,
    then a document takes well under a second), it stays available for every run ever saved, and a better
    checker later improves old runs too.
    """
    embedder = None if with_embeddings else evidence.lexical_only
    return evidence.analyse(reference, list(sentences), embedder=embedder, noun=REFERENCE_NOUN.get(task, "reference"))


def evidence_for(reference: str, ev: Evaluation, task: str) -> list[SentenceEvidence]:
    """The (cached) evidence for an evaluation's sentences."""
    if not ev.sentences:
        return []
    return cached_evidence(reference, tuple(s.text for s in ev.sentences), task, evidence.embeddings_available())


def novel_html(text: str, spans: tuple[Span, ...] | list[Span]) -> str:
    """The sentence, escaped, with its spans found nowhere in the reference marked."""
    out, pos = [], 0
    for sp in sorted(spans, key=lambda x: x.start):
        if sp.start < pos:
            continue
        out.append(html.escape(text[pos : sp.start]))
        title = f"{NOVEL_TITLE[sp.kind]} not in the reference"
        out.append(
            f'<mark class="cs-novel cs-novel-{sp.kind}" title="{title}">{html.escape(text[sp.start : sp.end])}</mark>'
        )
        pos = sp.end
    out.append(html.escape(text[pos:]))
    return "".join(out)


def _evidence_line(e: evidence.Evidence, noun: str) -> str:
    sim = f"similarity {e.similarity:.2f} · " if e.similarity is not None else ""
    label = "contradicts" if e.role == "contradict" else "closest"
    conflict = f" ({html.escape(e.conflict)})" if e.conflict else ""
    return (
        f'<div class="cs-ev cs-ev-{e.role}"><span class="cs-ev-role">{label}</span> {noun} #{e.ref_index + 1} · '
        f"{sim}overlap {e.lexical:.2f}{conflict}: “{html.escape(e.ref_text)}”</div>"
    )


def evidence_html(se: SentenceEvidence, noun: str = "reference") -> str:
    """The best reference sentence, and a contradicting one among the top ones if it is not the best."""
    if not se.alignments:
        return f'<div class="cs-ev">No {noun} sentence to compare with.</div>'
    shown = [se.alignments[0]]
    shown += [e for e in se.alignments[1:] if e.role == "contradict"][:1]
    return "".join(_evidence_line(e, noun) for e in shown)


def checker_html(se: SentenceEvidence) -> str:
    """The offline checker's verdict, labelled as such, to read beside a model's."""
    return (
        f'<div class="cs-checker {se.verdict}" title="{html.escape(se.reason, quote=True)}">'
        f"<b>Offline evidence checker</b> (no model): {VERDICT_ICON[se.verdict]} {se.verdict} — "
        f"{html.escape(se.finding)}</div>"
    )


def colored_text_html(ev: Evaluation) -> str:
    """The candidate with each sentence highlighted by its verdict; the reason shows on hover."""
    parts = []
    for s in ev.sentences:
        tip = s.reason or s.error or "no reason"
        parts.append(
            f'<span class="cs-s cs-{s.verdict}" title="{html.escape(tip, quote=True)}">{html.escape(s.text)}</span>'
        )
    return '<div class="cs-text">' + " ".join(parts) + "</div>"


def sentence_cards_html(
    ev: Evaluation,
    found: list[SentenceEvidence] | None = None,
    *,
    checker: bool = False,
    noun: str = "reference",
    flags: dict[int, Disagreement] | None = None,
    only_flagged: bool = False,
) -> str:
    """One card per sentence: verdict, mark z_i, the sentence, the reason or the error; with `found`, its
    evidence (novel spans highlighted, the closest reference sentence) and, with `checker`, the offline
    checker's verdict beside the evaluator's. `flags` marks the sentences where the judge and the evidence
    disagree; `only_flagged` shows those alone."""
    by_index = {se.index: se for se in found or []}
    flags = flags or {}
    cards = []
    for s in ev.sentences:
        flag = flags.get(s.index)
        if only_flagged and flag is None:
            continue
        mark = "—" if s.mark is None else f"{s.mark:+d}"
        se = by_index.get(s.index)
        se = se if se is not None and se.text == s.text else None
        # The evidence checker's own reason ends with the closest sentence, which the evidence line shows.
        shown = se.finding if se is not None and s.reason == se.reason else s.reason
        reason = f'<div class="cs-reason">{html.escape(shown)}</div>' if shown else ""
        err = f'<div class="cs-err">⚠ {html.escape(s.error)}</div>' if s.error else ""
        text = novel_html(s.text, se.novel) if se else html.escape(s.text)
        extra = (evidence_html(se, noun) + (checker_html(se) if checker else "")) if se else ""
        # The evidence checker's own verdict: its calibrated probability, and why it abstains (what would decide).
        own = se if se is not None and s.reason == se.reason else None
        probability = s.probability if s.probability is not None else own.probability if own else None
        why = s.abstain_reason or (own.abstain_reason if own else None)
        if why:
            extra += f'<div class="cs-reason"><b>Why undecided:</b> {html.escape(why)}</div>'
        if probability is not None:
            mark += f" · probability supported {probability:.2f}"
        if flag is not None:
            extra += f'<div class="cs-flag">⚠ <b>Judge and evidence disagree</b>: {html.escape(flag.why)}</div>'
        cards.append(
            f'<div class="cs-card cs-{s.verdict}">'
            f'<span class="cs-chip {s.verdict}">{VERDICT_ICON[s.verdict]} {s.verdict}</span>'
            f"<b>#{s.index + 1}</b> · z = {mark}<div>{text}</div>{reason}{err}{extra}</div>"
        )
    for x in [] if only_flagged else ev.extras:
        mark = "—" if x.mark is None else f"{x.mark:+d}"
        cards.append(
            f'<div class="cs-card cs-unknown"><span class="cs-chip unknown">paragraph-level</span> z = {mark} '
            f'(offset by α, β)<div class="cs-reason">{html.escape(x.text)}</div></div>'
        )
    return "".join(cards)


def render_score(
    ev: Evaluation,
    usage: dict | None = None,
    *,
    compact: bool = False,
    checker: bool = False,
    spent: Spent | None = None,
) -> None:
    """Z^ with k, alpha, beta and how many sentences were judged; `compact` for a half-width column; `checker`:
    the run is the offline evidence checker's, whose unjudged sentences are ones it abstained on."""
    undecided = "left undecided by the evidence" if checker else "could not be judged"
    s = ev.score
    cols = st.columns(3 if compact else 5)
    if s is not None and s.z_hat is not None:
        cols[0].metric("Score Ẑ", f"{s.z_hat:.3f}", help="Eq. 3: Z = (Σ z_i + α)/(k + β), Ẑ = (Z + 1)/2")
    elif s is not None and s.partial_z_hat is not None:
        cols[0].metric(
            "Score Ẑ",
            "n/a",
            delta=f"partial {s.partial_z_hat:.3f} on {ev.n_judged} of {len(ev.sentences)}",
            delta_color="off",
            help=f"A sentence that was {'left undecided' if checker else 'not judged'} is never counted as consistent, "
            "so the document has no score. "
            f"The partial score is Eq. 3 over the {ev.n_judged} sentence(s) that were judged.",
        )
    else:
        none = "The evidence decides no sentence" if checker else "No sentence could be judged"
        cols[0].metric("Score Ẑ", "n/a", help=f"{none}, so there is no score.")
    cols[1].metric("Judged", f"{ev.n_judged} / {len(ev.sentences)}", help="Sentences with a mark z_i")
    kab = f"{s.k if s else 0} · {s.alpha if s else 0:g} · {s.beta if s else 0:g}"
    kab_help = (
        f"Eq. 3 as used: your α = {s.set_alpha if s else 0:g}, β = {s.set_beta if s else 0:g} (Appendix C.1 sets "
        "both to 0), plus Appendix E.4's offsets for reasons that judge no single sentence."
    )
    tokens = f"{usage.get('prompt_tokens', 0) + usage.get('completion_tokens', 0):,}" if usage is not None else ""
    answered, retries = calls_text(usage.get("calls", 0), usage.get("answered")) if usage is not None else ("—", "—")
    calls_help = (
        f"Requests the model answered, all rounds ({usage.get('calls', 0):,} sent; retries, sent again after a "
        f"refused connection, a timeout or an error status: {retries}; cache hits: {usage.get('cache_hits', 0)})"
        if usage is not None
        else "Model calls, all rounds"
    )
    if compact:  # five tiles in half a page cut their numbers short: the rest goes in a line below
        cols[2].metric("Answered calls", answered, help=calls_help)
        extra = f" · {retries} retries" if usage is not None and retries not in ("0", "—") else ""
        st.caption(f"k · α · β = {kab}" + (f" · {tokens} tokens" if tokens else "") + extra, help=kab_help)
    else:
        cols[2].metric("k · α · β", kab, help=kab_help)
    if usage is not None and not compact:
        cols[3].metric("Answered calls (run)", answered, help=calls_help)
        cols[4].metric("Tokens (run)", tokens)
        if retries not in ("0", "—"):
            st.caption(f"Retries: {retries} request(s) sent again or failed, beside the {answered} answered.")
    if spent is not None:
        st.caption(spent.summary())
    if ev.n_unknown and ev.n_judged:  # none judged at all: render_no_verdict says why and what to do
        st.caption(
            f":orange[{ev.n_unknown} sentence(s) {undecided}, so there is no score; the partial score rests "
            f"on the {ev.n_judged} of {len(ev.sentences)} sentence(s) {'it decided' if checker else 'that were'}.]"
        )


def judge_flags(ev: Evaluation, found: list[SentenceEvidence] | None, *, method: str) -> dict[int, Disagreement]:
    """The sentences where a model's verdict and the evidence disagree (none for the evidence checker itself)."""
    if method == "evidence" or not found:
        return {}
    return disagreements([(s.index, s.text, s.verdict) for s in ev.sentences], found)


def render_flag_filter(flags: dict[int, Disagreement], *, key: str) -> bool:
    """A toggle to show only the flagged sentences, with their count; False when none is flagged."""
    if not flags:
        return False
    return st.toggle(
        f"Only the {len(flags)} sentence(s) where the judge and the evidence disagree",
        key=key,
        help="The judge (the model's verdict) says one thing and the evidence (the offline checker's alignment "
        "with the reference) another: a contradiction or no support for a sentence judged consistent, or support "
        "for one judged inconsistent. Check these first.",
    )


def render_evaluation(
    ev: Evaluation,
    found: list[SentenceEvidence] | None = None,
    *,
    checker: bool = False,
    noun: str = "reference",
    flags: dict[int, Disagreement] | None = None,
    only_flagged: bool = False,
    undecided_said: bool = False,
) -> None:
    """Errors and notes, the colour-coded candidate, and a card per sentence (with its evidence, if given);
    `undecided_said`: render_no_verdict has said the checker left every sentence undecided, so the summary's
    own "Undecided" note would say it a second time."""
    if ev.error:
        st.error(f"The evaluator failed: {ev.error}", icon=":material/error:")
    for note in ev.notes:
        if undecided_said and note.startswith("Summary: Undecided"):
            continue
        st.info(note, icon=":material/info:")
    if ev.amc_agreement and ev.amc_agreement[1]:
        agree, n = ev.amc_agreement
        st.caption(f"LLM converter and rule converter agree on {agree} of {n} reasons that state a verdict.")
    st.markdown(colored_text_html(ev), unsafe_allow_html=True)
    if found:
        st.caption(
            f"Evidence: the closest {noun} sentence to each sentence ({evidence.mode_of(found)}); "
            '<mark class="cs-novel cs-novel-word">marked</mark> words, numbers and names appear nowhere '
            f"in the {noun}.",
            unsafe_allow_html=True,
        )
    st.markdown(
        sentence_cards_html(ev, found, checker=checker, noun=noun, flags=flags, only_flagged=only_flagged),
        unsafe_allow_html=True,
    )


REWRITE_DEFAULT_NOTE = (
    "Every rewrite starts **accepted**: Algorithm 1 applies it to build the next round, and the scores shown are for "
    "that text. Reject one to keep its original sentence in the final text. Under each rewrite: the verdict its new "
    "text got in the next round."
)


def _next_verdict(nxt: Round | None, index: int) -> str:
    """How the next round judged the sentence a rewrite produced."""
    if nxt is None:
        return ""
    s = next((v for v in nxt.evaluation.sentences if v.index == index), None)
    if s is None:
        return ""
    color = {"consistent": "green", "inconsistent": "red"}.get(s.verdict, "orange")
    return f":{color}[{VERDICT_ICON[s.verdict]} {s.verdict}] in round {nxt.index}"


def render_rewrites(
    rnd: Round,
    on_toggle: Callable[[int, bool], None] | None,
    key_prefix: str,
    nxt: Round | None = None,
) -> None:
    """Before and after of each rewrite with the change highlighted, why, its next-round verdict, accept/reject."""
    if rnd.improve_error:
        st.error(f"The improver failed: {rnd.improve_error}", icon=":material/error:")
    if not rnd.rewrites:
        return
    for rw in rnd.rewrites:
        with st.container(border=True):
            st.markdown(f"**Sentence #{rw.index + 1}**")
            if rw.changed:
                st.markdown(diff_html(rw.before, rw.after), unsafe_allow_html=True)
            else:
                st.markdown(f"_No change proposed._ {html.escape(rw.before)}", unsafe_allow_html=True)
            if rw.reason:
                st.caption(f"Why: {rw.reason}")
            judged = _next_verdict(nxt, rw.index) if rw.changed else ""
            if judged:
                st.caption(f"Judged {judged}")
            if rw.changed and on_toggle is not None:
                key = f"{key_prefix}_{rnd.index}_{rw.index}"
                choice = st.segmented_control(
                    "Keep this rewrite?",
                    ["Accept", "Reject"],
                    default="Accept" if rw.accepted else "Reject",
                    key=key,
                    label_visibility="collapsed",
                )
                if choice and (choice == "Accept") != rw.accepted:
                    on_toggle(rw.index, choice == "Accept")


def render_rewrite_review(
    rounds: list[Round], on_toggle: Callable[[int, int, bool], None] | None, key_prefix: str
) -> None:
    """Every round's rewrites in one place, newest round first, each with accept/reject."""
    proposed = [r for r in rounds if r.rewrites or r.improve_error]
    if not proposed:
        return
    n_changed = sum(rw.changed for r in proposed for rw in r.rewrites)
    n_rejected = sum(rw.changed and not rw.accepted for r in proposed for rw in r.rewrites)
    st.markdown(f"**Review the rewrites** · {n_changed} proposed" + (f", {n_rejected} rejected" if n_rejected else ""))
    st.caption(REWRITE_DEFAULT_NOTE)
    by_index = {r.index: r for r in rounds}
    for rnd in reversed(proposed):
        st.markdown(f"Round {rnd.index} → round {rnd.index + 1}" if rnd.index + 1 in by_index else f"Round {rnd.index}")
        toggle = None if on_toggle is None else (lambda idx, ok, i=rnd.index: on_toggle(i, idx, ok))
        render_rewrites(rnd, toggle, key_prefix, nxt=by_index.get(rnd.index + 1))


def render_no_verdict(ev: Evaluation, *, embedded: bool, checker_shown: bool = False, checker: bool = False) -> bool:
    """Why a run has no score and no Improve when the model judged no sentence, and what to do instead
    (`checker_shown`: the offline checker's verdicts are already on the page; `checker`: the run is the
    offline checker's, which abstained). True when it said that the offline checker left every sentence undecided."""
    if ev.fatal or not ev.sentences or ev.n_judged:
        return False
    if checker:
        st.info(
            f"**The offline checker leaves every sentence undecided** ({len(ev.sentences)} of "
            f"{len(ev.sentences)}): its word-level evidence cannot decide them, and each card says why. To decide "
            "them, connect a model endpoint in **Settings** and evaluate with DCE or an NLI method.",
            icon=":material/help:",
        )
        return True
    why = (
        "The embedded demo model is small, meant for trying the workflow: it often answers outside the format "
        "the evaluator needs. "
        if embedded
        else "The model's answers could not be read as verdicts (each sentence's card says why). "
    )
    st.warning(
        f"**No sentence was judged** ({len(ev.sentences)} of {len(ev.sentences)} without a verdict), so there is no "
        f"score and nothing for Improve to rewrite. {why}"
        + (
            "The offline **evidence checker**'s verdicts are above; for a model's verdicts and Improve, connect a "
            "stronger model in **Settings** and evaluate again."
            if checker_shown
            else "To get verdicts: run the offline **evidence checker**, which calls no model (the button below, "
            "or Options → Evaluator), or connect a stronger model in **Settings** and evaluate again."
        ),
        icon=":material/help:",
    )


def render_delivered(out: Delivered) -> None:
    """The text a run delivers, the score that belongs to it (or that it was not judged), and the rewrites
    left out of it with why."""
    st.markdown("**Delivered text**")
    if out.judged and out.z_hat is not None:
        st.metric("Score Ẑ of the delivered text", f"{out.z_hat:.3f}", help=out.score_note())
        st.caption(out.score_note())
    else:
        st.metric("Score Ẑ of the delivered text", "not judged" if not out.judged else "n/a", help=out.score_note())
        st.caption(f":orange[{out.score_note()}]")
    st.code(out.text, language=None, wrap_lines=True)
    if out.left_out:
        with st.expander(f"Rewrites left out ({len(out.left_out)})", icon=":material/block:", expanded=True):
            for x in out.left_out:
                st.markdown(
                    f"Round {x.round} · sentence #{x.index + 1}: {diff_html(x.before, x.after)}",
                    unsafe_allow_html=True,
                )
                st.caption(f"{x.why}." + (f" Improver's reason: {x.reason}" if x.reason else ""))
