"""Report builders of the studies that plug in beside DCR: each gives a Report that writes as one HTML file."""

from __future__ import annotations

import pytest

from components.report_builders import BUILDERS, build
from services import conseval as ce
from services import reports
from services.text import InputError
from tests.services.test_conseval import config, items, scorer


def test_conseval_study_report_has_alphas_with_intervals_figures_and_ratings(engine, fake, backend):
    fake.responder = scorer(noisy=True)
    cfg = config(backend)
    sid = ce.create_study(engine, cfg, items(4))
    assert ce.run_study(engine, sid, backends={"judge": backend}).status == "done"
    rep = build(engine, "conseval", sid)
    assert rep.kind == "conseval" and rep.ref_id == sid
    sc = next(h for h in rep.headlines if h.label == "Best Self-consistency α")
    assert sc.value is not None and sc.n == 4
    titles = {f.title for f in rep.figures}
    assert {"Self-consistency (Figure 2)", "Inter-consistency (Figure 3)", "Figure 4"} <= titles
    assert any(t.title == "Every α and accuracy" and t.rows for t in rep.tables)
    assert len(rep.examples) == 3 and "question 0" in dict(rep.examples[0].fields)["Query"]
    assert rep.configuration["models"][0]["model"] == "fake-model"
    html = reports.to_html(rep, secrets=[])
    assert html.count("Plotly.newPlot(") == len(rep.figures)
    with pytest.raises(InputError, match="does not exist"):
        build(engine, "conseval", 999)


def test_every_kind_the_app_offers_has_a_builder():
    assert {"run", "batch", "conseval"} <= set(BUILDERS)
