"""Stakeholder reports: the typed report from a run and a batch, one self-contained HTML file with user text
escaped and no secret in it, and read-only share tokens that can be revoked."""

from __future__ import annotations

import re

import plotly.graph_objects as go
import pytest
from markupsafe import escape
from plotly.offline import get_plotlyjs
from sqlmodel import Session

from db.engine import get_session
from db.models import Dataset, ReportShareCreate
from db.redact import REDACTED
from services import reports, runs
from services.config import BackendConfig
from services.dcr import DCRConfig
from services.reports import build, render
from services.reports import model as m
from services.text import InputError
from tests.app.helpers import CAND, REF
from tests.fakes import toy_judge
from tests.metaeval_seed import Item, seed
from tests.support.waiting import HEALTHY_TIMEOUT

C, X = "consistent", "inconsistent"
SECRET = "sk-live-Do-Not-Leak-7f3a9c1e2b"
PASSWORD = "hunter2-database-pw"
ITEMS = [
    Item([[C, X], [C, C]], human_score=0.5, human_label=0),
    Item([[C, C]], human_score=1.0, human_label=1),
    Item([[X]], human_score=0.0, human_label=0),
    Item([[C, X, C], [C, C, C]], human_score=0.6, human_label=0),
    Item([[C, C, C]], human_score=1.0, human_label=1),
]


@pytest.fixture
def improved_run(engine, fake):
    """A run judged and improved by the toy judge: 1999 is flagged, then rewritten to 1889."""
    fake.responder = toy_judge(bad="1999", fix="1889")
    backend = BackendConfig(
        kind="openai", base_url=fake.base_url, model="fake-model", max_retries=0, timeout=HEALTHY_TIMEOUT
    )
    rid = runs.start_run(engine, backend, REF, CAND, DCRConfig(max_rounds=2))
    runs.improve_run(engine, backend, rid)
    return rid


def test_run_report_has_the_document_its_verdicts_and_the_rewrites_highlighted(engine, improved_run):
    rep = build(engine, "run", improved_run)
    assert rep.kind == "run" and rep.ref_id == improved_run
    (ex,) = rep.examples
    assert dict(ex.fields)["Article"] == REF
    first, second = ex.rounds[0], ex.rounds[1]
    assert [s.verdict for s in first.sentences] == [C, X, C]
    assert first.rewrites and first.rewrites[0].after.endswith("1889.")
    assert all(s.verdict == C for s in second.sentences) and second.score == pytest.approx(1.0)
    assert {p["id"] for p in rep.configuration["prompts"]} >= {"dce-summarization@1"}
    html = reports.to_html(rep, secrets=[])
    assert '<del class="cs-del">1999.</del>' in html and '<ins class="cs-ins">1889.</ins>' in html
    assert html.count("Plotly.newPlot(") == len(rep.figures) == 1


def test_batch_report_has_intervals_charts_tables_and_the_dataset_hash(engine):
    ds_id, bid = seed(engine, ITEMS)
    rep = build(engine, "batch", bid, n_boot=200, seed=1)
    heads = {h.label: h for h in rep.headlines}
    pearson = heads["Pearson r with the human score"]
    assert pearson.n == len(ITEMS) and pearson.ci_low is not None and pearson.ci_low <= pearson.value <= pearson.ci_high
    assert re.fullmatch(r"-?\d\.\d{3} \[-?\d\.\d{3}, -?\d\.\d{3}\]", pearson.text())
    with Session(engine) as s:
        sha = s.get(Dataset, ds_id).sha256
    assert rep.configuration["dataset"]["sha256"] == sha
    assert rep.configuration["prompts"] and rep.configuration["seeds"]["bootstrap_seed"] == 1
    assert {f.title for f in rep.figures} >= {"Score vs human score", "Figure 3", "Fully consistent after each round"}
    assert "RAI (Table 4)" in {t.title for t in rep.tables}
    assert len(rep.examples) == 3 and rep.examples[0].rounds[0].sentences
    html = reports.to_html(rep, secrets=[])
    assert html.count("Plotly.newPlot(") == len(rep.figures)
    assert html.count('<script type="text/javascript">') == 1  # plotly.js inlined once
    # Nothing is loaded from outside (plotly.js itself names its CDN for geo maps, which no report draws).
    page = html.replace(get_plotlyjs(), "")
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=|<img[^>]+src=|<iframe|@import|url\(", page)
    with pytest.raises(InputError, match="does not exist"):
        build(engine, "batch", 999)
    with pytest.raises(InputError, match="No report"):
        build(engine, "nonsense", 1)


def test_user_text_is_escaped_everywhere_in_the_page(engine):
    evil = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    ex = m.Example(
        title=evil,
        fields=[(evil, evil)],
        rounds=[
            m.ExampleRound(
                label=evil,
                sentences=[m.ExampleSentence(text=evil, verdict=evil, reason=evil)],
                rewrites=[m.ExampleRewrite(index=0, before=evil, after=evil, reason=evil)],
            )
        ],
    )
    fig = m.FigureSpec.of(evil, go.Figure(go.Bar(x=[1], y=[1])), caption=evil)
    rep = m.Report(
        title=evil,
        kind="batch",
        ref_id=1,
        summary=evil,
        configuration={"dataset": {"name": evil}},
        headlines=[m.Headline(label=evil, value=0.5, note=evil)],
        figures=[fig],
        tables=[m.Table(title=evil, columns=[evil], rows=[[evil]], note=evil)],
        examples=[ex],
        notes=[evil],
    )
    html = reports.to_html(rep, secrets=[])
    assert "<script>alert" not in html and "<img src=x" not in html
    # title, summary, headline label and note, note, figure title and caption, table title, header, cell and
    # note, example title, field name and text, round label, sentence, reason, rewrite and its reason, config
    assert html.count(str(escape(evil))) >= 18
    assert reports.example_html(ex).count(str(escape(evil))) >= 6


def test_the_templates_escape_by_default():
    """Escaping is the templates' default (autoescape), not something each value must remember."""
    env = render.environment()
    assert env.from_string("{{ x }}").render(x="<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;"
    for name in ("report.html.j2", "example.html.j2", "message.html.j2"):
        assert env.get_template(name).environment.autoescape is True
    page = reports.message_html("<script>", "<script>x</script>")
    assert "<script>" not in page and page.count("&lt;script&gt;") == 2


def test_the_report_holds_no_secret(engine, monkeypatch):
    monkeypatch.setenv("LLM_API_KEY", SECRET)
    monkeypatch.setenv("DATABASE_URL", f"postgresql://app:{PASSWORD}@db.example/app")
    assert SECRET in reports.known_secrets() and PASSWORD in reports.known_secrets()
    # Secrets where they could slip in: the model URL and parameters, a dataset name, a model's reason.
    items = [Item([[C, X]], human_score=0.5, human_label=0), Item([[C]], human_score=1.0, human_label=1)]
    ds_id, bid = seed(engine, items, params={"temperature": 0.0, "api_key": SECRET, "headers": f"Bearer {SECRET}"})
    with get_session(engine) as s:
        s.get(Dataset, ds_id).name = f"leaked {SECRET} and {PASSWORD}"
        from db.models import Batch

        s.get(Batch, bid).base_url = f"https://user:{PASSWORD}@llm.example/v1?key={SECRET}"
    rep = build(engine, "batch", bid, n_boot=0)
    html = reports.to_html(rep)
    assert SECRET not in html and PASSWORD not in html
    assert REDACTED in html  # the dataset name was scrubbed, not dropped
    assert "llm.example" in html  # the rest of the configuration is still there


def test_scrub_replaces_escaped_forms_and_ignores_short_values():
    text = f'a {SECRET} b {SECRET.replace("-", "-")} "{SECRET}"'
    assert SECRET not in reports.scrub(text, [SECRET])
    assert reports.scrub("value 0 and true", ["0", "true"]) == "value 0 and true"


def test_share_tokens_are_unguessable_revocable_and_explained(engine):
    a = reports.new_share(engine, "batch", 1, title="Batch #1")
    b = reports.new_share(engine, "run", 2)
    assert a.token != b.token and len(a.token) >= 32
    assert reports.find_share(engine, a.token).id == a.id
    assert reports.share_problem(reports.find_share(engine, a.token)) is None
    assert reports.revoke(engine, a.id) and reports.revoke(engine, a.id)  # idempotent
    revoked = reports.find_share(engine, a.token)
    assert revoked.revoked_at is not None and "revoked" in reports.share_problem(revoked)
    assert reports.find_share(engine, b.token).revoked_at is None  # the other link stays open
    assert "not valid" in reports.share_problem(reports.find_share(engine, "guess"))

    assert not reports.revoke(engine, 999)
    assert [s.id for s in reports.shares(engine, include_revoked=False)] == [b.id]
    with get_session(engine) as s, pytest.raises(InputError, match="Unknown report kind"):
        reports.create_share(session=s, data=ReportShareCreate(kind="bogus", ref_id=1))


def test_a_reports_share_link_is_the_one_already_made_until_it_is_revoked(engine):
    first = reports.share_link(engine, "batch", 1, title="Batch #1")
    assert reports.share_link(engine, "batch", 1, title="Batch #1").token == first.token
    assert len(reports.shares(engine)) == 1, "pressing again makes no duplicate"
    other = reports.share_link(engine, "batch", 2, title="Batch #2")
    assert other.token != first.token, "another report has its own link"
    reports.revoke(engine, first.id)
    fresh = reports.share_link(engine, "batch", 1, title="Batch #1")
    assert fresh.token != first.token and fresh.revoked_at is None, "a revoked link is never offered again"


def test_run_report_with_a_rejected_rewrite_states_the_delivered_text_and_no_undelivered_score(engine, improved_run):
    assert runs.set_rewrite(engine, improved_run, 0, 1, False)
    rep = build(engine, "run", improved_run)
    labels = [h.label for h in rep.headlines]
    assert not any("last round" in h for h in labels)
    delivered = next(h for h in rep.headlines if "delivered text" in h.label)
    # the last round scored 1.000 with the rewrite applied; the delivered text (the rewrite rejected) is the
    # candidate as given, which round 0 judged
    assert delivered.value == pytest.approx(2 / 3) and "round 0" in delivered.note
    fields = dict(rep.examples[0].fields)
    (text,) = [v for k, v in fields.items() if k.startswith("Delivered text")]
    assert text == CAND and "1889" not in text
    rw = rep.examples[0].rounds[0].rewrites[0]
    assert not rw.accepted and rw.left_out.startswith("Rejected")
    assert any(t.title == "Rewrites left out of the delivered text" for t in rep.tables)
    html = reports.to_html(rep, secrets=[])
    assert "rejected" in html and "Not in the delivered text" in html
    assert runs.load(engine, improved_run).run.final_score == pytest.approx(2 / 3)  # History's final Ẑ follows

    assert runs.set_rewrite(engine, improved_run, 0, 1, True)
    again = build(engine, "run", improved_run)
    assert next(h for h in again.headlines if "delivered text" in h.label).value == pytest.approx(1.0)
