"""Dataset import: every reader on small files with malformed rows, the real QAGS file, storing and deleting."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sqlmodel import select

from db.engine import get_session
from db.models import Batch, DatasetItem, Document
from services import datasets as ds
from services.config import PROJECT_ROOT
from services.datasets import ColumnMapping, ImportedItem, ImportResult, RejectedRow
from services.errors import InputError
from services.text import split_sentences

QAGS_FILE = PROJECT_ROOT.parent / "shared" / "data" / "qags_cnndm_mturk.jsonl"

ARTICLE = "The Eiffel Tower stands in Paris. It was completed in 1889. The tower is made of wrought iron."


def jsonl(*rows: object) -> bytes:
    """Rows as JSONL; a str row is written as is (to make a malformed line)."""
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows).encode()


def votes(*answers: str, start: int = 0) -> list[dict]:
    return [{"worker_id": start + i, "response": a} for i, a in enumerate(answers)]


def reasons(result: ImportResult) -> dict[int, str]:
    return {r.row: r.reason for r in result.rejected}


# -- parsing helpers ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1, 1),
        (0, 0),
        (True, 1),
        (False, 0),
        (1.0, 1),
        ("1", 1),
        ("0", 0),
        ("TRUE", 1),
        ("false", 0),
        ("Yes", 1),
        ("no", 0),
        (" Consistent ", 1),
        ("INCONSISTENT", 0),
        ("", None),
        (None, None),
    ],
)
def test_parse_label_accepts_the_usual_spellings(value, expected):
    assert ds.parse_label(value) == expected


@pytest.mark.parametrize("value", ["maybe", 2, "0.5", -1, "y e s"])
def test_parse_label_refuses_the_rest(value):
    with pytest.raises(ValueError, match="is not 0/1"):
        ds.parse_label(value)


def test_parse_score():
    assert ds.parse_score("0.25") == 0.25 and ds.parse_score(3) == 3.0 and ds.parse_score("") is None
    for bad in ("high", "nan", "inf", True, [1]):
        with pytest.raises(ValueError):
            ds.parse_score(bad)


def test_sentence_labels_are_normalised_to_rater_dicts():
    assert ds.parse_sentence_labels("[1, 0]") == [{"0": 1}, {"0": 0}]
    assert ds.parse_sentence_labels([[1, 1, 0], ["no", "yes"]]) == [{"0": 1, "1": 1, "2": 0}, {"0": 0, "1": 1}]
    assert ds.parse_sentence_labels([{"w7": "yes", "w9": 0}]) == [{"w7": 1, "w9": 0}]
    assert ds.parse_sentence_labels(None) is None and ds.parse_sentence_labels("") is None
    with pytest.raises(ValueError, match="not a JSON list"):
        ds.parse_sentence_labels("[1, 0")
    with pytest.raises(ValueError, match="sentence 2"):
        ds.parse_sentence_labels([1, "perhaps"])
    with pytest.raises(ValueError, match="sentence 1 has no label"):
        ds.parse_sentence_labels([[]])


def test_majority_vote_counts_a_tie_as_not_consistent():
    assert ds.majority_vote({"a": 1, "b": 1, "c": 0}) == 1
    assert ds.majority_vote({"a": 1, "b": 0, "c": 0}) == 0
    assert ds.majority_vote({"a": 1, "b": 0}) == 0


# -- files every reader refuses -----------------------------------------------------------------
READERS = [
    ds.read_qags,
    ds.read_summeval,
    ds.read_paws,
    lambda data: ds.read_table(data, "jsonl", ColumnMapping(reference="ref", candidate="cand")),
    lambda data: ds.read_table(data, "csv", ColumnMapping(reference="ref", candidate="cand")),
]


@pytest.mark.parametrize("read", READERS)
def test_empty_file_is_refused(read):
    for data in (b"", b"  \n\n "):
        with pytest.raises(InputError, match="empty"):
            read(data)


@pytest.mark.parametrize("read", READERS)
def test_non_utf8_file_is_refused(read):
    data = "ref\tcand\nCafé\tgood\n".encode("latin-1")
    with pytest.raises(InputError, match="not UTF-8.*line 2"):
        read(data)


def test_a_file_with_no_valid_row_says_why():
    with pytest.raises(InputError, match=r"No valid row.*2 rejected.*row 1: not valid JSON"):
        ds.read_qags(b'{"article": \n{"summary_sentences": []}')


# -- QAGS ---------------------------------------------------------------------------------------
def qags_row(*sentences: tuple[str, list[dict]], article: str = ARTICLE) -> dict:
    return {"article": article, "summary_sentences": [{"sentence": s, "responses": r} for s, r in sentences]}


def test_read_qags_scores_by_majority_and_keeps_rows_going_after_bad_ones():
    data = jsonl(
        qags_row(
            ("The tower is in Paris.", votes("yes", "yes", "no")),
            ("It is made of wood.", votes("no", "no", "yes")),
        ),
        '{"article": "broken',
        {"summary_sentences": []},
        "",  # a blank line is skipped, not rejected
        qags_row(("It was completed in 1889.", votes("yes", "yes", "yes", start=5))),
        qags_row(("Fine.", votes("yes", "maybe", "no"))),
        qags_row(("No votes here.", [])),
        qags_row(("Done.", votes("yes")), article="   "),
    )
    r = ds.read_qags(data)
    assert (r.format, r.task, r.label_kinds) == ("qags", "summarization", ["score", "binary", "sentence"])
    assert [it.external_id for it in r.items] == ["1", "5"]
    first, second = r.items
    assert first.sentences == ["The tower is in Paris.", "It is made of wood."]
    assert first.candidate == "The tower is in Paris. It is made of wood."
    assert first.sentence_labels == [{"0": 1, "1": 1, "2": 0}, {"0": 0, "1": 0, "2": 1}]
    assert (first.human_score, first.human_label) == (0.5, 0)
    assert second.sentence_labels == [{"5": 1, "6": 1, "7": 1}]
    assert (second.human_score, second.human_label) == (1.0, 1)
    why = reasons(r)
    assert sorted(why) == [2, 3, 6, 7, 8]
    assert why[2].startswith("not valid JSON")
    assert why[3] == "missing field 'article'"
    assert "'maybe' is not yes or no" in why[6]
    assert "no worker responses" in why[7]
    assert why[8] == "empty article ('article')"


def test_read_qags_keeps_the_given_sentences_instead_of_resplitting():
    # pysbd would split "Dr. Who" differently; QAGS judged these two sentences, so they stay two.
    row = qags_row(
        ("It was built by Mr. Eiffel. Really.", votes("yes", "yes", "yes")), ("Yes.", votes("no", "no", "no"))
    )
    item = ds.read_qags(jsonl(row)).items[0]
    assert item.sentences == ["It was built by Mr. Eiffel. Really.", "Yes."]


@pytest.mark.skipif(not QAGS_FILE.is_file(), reason="the QAGS file in ../shared/data is absent")
def test_the_real_qags_file():
    r = ds.read_qags(QAGS_FILE.read_bytes())
    assert not r.rejected
    assert len(r.items) == 235
    assert sum(len(it.sentences) for it in r.items) == 714
    assert all(len(votes) == 3 for it in r.items for votes in it.sentence_labels)
    assert all(0 <= it.human_score <= 1 for it in r.items)
    assert all(it.human_label == int(it.human_score == 1) for it in r.items)
    assert ds.guess_format("qags_cnndm_mturk.jsonl", QAGS_FILE.read_bytes()) == "qags"


# -- SummEval ------------------------------------------------------------------------------------
def summeval_row(**over) -> dict:
    row = {
        "id": "dm-test-1",
        "model_id": "M11",
        "filepath": "cnndm/dailymail/stories/1.story",
        "decoded": "the eiffel tower is in paris . it was completed in 1889 .",
        "references": ["The tower is in Paris."],
        "expert_annotations": [
            {"coherence": 4, "consistency": 5, "fluency": 5, "relevance": 3},
            {"coherence": 2, "consistency": 5, "fluency": 4, "relevance": 3},
            {"coherence": 3, "consistency": 5, "fluency": 5, "relevance": 4},
        ],
        "turker_annotations": [{"coherence": 1, "consistency": 2, "fluency": 3, "relevance": 4}] * 5,
        "text": ARTICLE,
    }
    row.update(over)
    return row


def test_read_summeval():
    half = [{"coherence": 3, "consistency": c, "fluency": 3, "relevance": 3} for c in (3, 3, 3)]
    data = jsonl(
        summeval_row(),
        summeval_row(text=None),  # the aligned file without sources
        summeval_row(model_id="M8", expert_annotations=half),
        summeval_row(model_id="M9", expert_annotations=[{"consistency": "five"}]),
        summeval_row(model_id="M10", decoded="  "),
        "not json at all",
        summeval_row(model_id="M12", text=None, src=ARTICLE, expert_annotations=[{"consistency": 4}]),
    )
    r = ds.read_summeval(data)
    assert (r.format, r.task, r.label_kinds) == ("summeval", "summarization", ["score", "binary"])
    assert r.meta["score_range"] == [1, 5]  # the experts' scale, which Summ-NLI's score mode asks on
    assert [it.external_id for it in r.items] == ["dm-test-1/M11", "dm-test-1/M8", "dm-test-1/M12"]
    first, mid, last = r.items
    assert (first.human_score, first.human_label) == (1.0, 1)
    assert (mid.human_score, mid.human_label) == (0.5, 0)
    assert (last.human_score, last.human_label) == (0.75, 0)
    assert first.reference == ARTICLE and first.sentences == split_sentences(first.candidate)
    assert first.extra["expert"] == pytest.approx(
        {"coherence": 3.0, "consistency": 5.0, "fluency": 14 / 3, "relevance": 10 / 3}
    )
    assert first.extra["turker"] == {"coherence": 1.0, "consistency": 2.0, "fluency": 3.0, "relevance": 4.0}
    assert (first.extra["n_experts"], first.extra["n_turkers"], first.extra["model_id"]) == (3, 5, "M11")
    why = reasons(r)
    assert sorted(why) == [2, 4, 5, 6]
    assert "paired" in why[2]
    assert "consistency score 'five' is not a number" in why[4]
    assert why[5] == "empty summary ('decoded')"
    assert why[6].startswith("not valid JSON")


def test_summeval_aligned_file_without_sources_is_refused_with_the_fix():
    with pytest.raises(InputError, match="paired"):
        ds.read_summeval(jsonl(summeval_row(text=None), summeval_row(text=None)))


# -- PAWS / QQP ---------------------------------------------------------------------------------
def test_read_paws():
    data = (
        b"id\tsentence1\tsentence2\tlabel\n"
        b'1\tThe "Cat" sat on the mat .\tOn the mat sat the "Cat" .\t1\n'
        b"2\tA dog barked .\tA cat barked .\t0\n"
        b"3\tOnly two fields\t1\n"
        b"4\tSome sentence .\t\t1\n"
        b"5\tOne .\tTwo .\tmaybe\n"
        b"\n"
        b"6\tThree .\tFour .\t\n"
    )
    r = ds.read_paws(data)
    assert (r.format, r.task, r.label_kinds, r.meta) == ("paws", "semantic", ["binary"], {"variant": "paws"})
    assert [(it.external_id, it.human_label) for it in r.items] == [("1", 1), ("2", 0)]
    assert r.items[0].reference == 'The "Cat" sat on the mat .'  # quotes are text in PAWS, not CSV quoting
    assert r.items[0].candidate == 'On the mat sat the "Cat" .'
    why = reasons(r)
    assert sorted(why) == [4, 5, 6, 8]
    assert why[4] == "has 3 fields but the header has 4"
    assert why[5] == "empty second sentence ('sentence2')"
    assert "'maybe' is not 0/1" in why[6]
    assert why[8] == "empty label ('label')"


def test_read_qqp():
    data = (
        b"id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
        b"7\t11\t12\tHow do I learn Python?\tWhat is the best way to learn Python?\t1\n"
    )
    r = ds.read_paws(data)
    assert r.meta == {"variant": "qqp"}
    item = r.items[0]
    assert (item.external_id, item.human_label, item.extra) == ("7", 1, {"qid1": "11", "qid2": "12"})
    assert item.reference == "How do I learn Python?"


def test_paws_with_another_header_is_refused():
    with pytest.raises(InputError, match="PAWS needs the columns"):
        ds.read_paws(b"a\tb\n1\t2\n")


# -- generic JSONL / CSV ------------------------------------------------------------------------
MAPPING = ColumnMapping(
    reference="article",
    candidate="summary",
    id="key",
    human_score="score",
    human_label="label",
    sentence_labels="sent_labels",
)


def test_read_table_jsonl_with_every_kind_of_bad_row():
    good = {
        "key": "a",
        "article": ARTICLE,
        "summary": "The tower is in Paris. It is iron.",
        "score": "0.5",
        "label": "inconsistent",
        "sent_labels": [1, [0, 0, 1]],
    }
    data = jsonl(
        good,
        "{bad json",
        {"key": "b", "summary": "No article."},
        {"key": "c", "article": ARTICLE, "summary": "   "},
        {"key": "d", "article": ARTICLE, "summary": "Fine.", "score": "high"},
        {"key": "e", "article": ARTICLE, "summary": "Fine.", "label": "perhaps"},
        {"key": "f", "article": ARTICLE, "summary": "One. Two.", "sent_labels": [1]},
        {"article": ARTICLE, "summary": ["It is in Paris", "built by Mr. Eiffel. Yes"], "sent_labels": "[1, 0]"},
        {"key": "h", "article": ARTICLE, "summary": "Fine.", "label": True, "score": None},
        [1, 2],
    )
    r = ds.read_table(data, "jsonl", MAPPING)
    assert (r.format, r.task, r.label_kinds) == ("jsonl", "summarization", ["score", "binary", "sentence"])
    assert r.meta["columns"]["candidate"] == "summary"
    a, g, h = r.items
    assert (a.external_id, a.human_score, a.human_label) == ("a", 0.5, 0)
    assert a.sentences == ["The tower is in Paris.", "It is iron."]
    assert a.sentence_labels == [{"0": 1}, {"0": 0, "1": 0, "2": 1}]
    assert g.external_id == "8"  # no id: the line number
    assert g.sentences == ["It is in Paris", "built by Mr. Eiffel. Yes"]  # given as a list: not re-split
    assert g.candidate == "It is in Paris built by Mr. Eiffel. Yes"
    assert (h.human_label, h.human_score, h.sentence_labels) == (1, None, None)
    why = reasons(r)
    assert sorted(why) == [2, 3, 4, 5, 6, 7, 10]
    assert why[2].startswith("not valid JSON")
    assert why[3] == "missing field 'article'"
    assert why[4] == "empty candidate ('summary')"
    assert why[5] == "score 'high' is not a number"
    assert "'perhaps' is not 0/1" in why[6]
    assert "1 sentence label(s) but the candidate has 2" in why[7]
    assert why[10] == "not a JSON object"


def test_read_table_accepts_a_json_array():
    data = json.dumps([{"ref": ARTICLE, "cand": "It is in Paris."}, {"ref": "", "cand": "x"}]).encode()
    r = ds.read_table(data, "jsonl", ColumnMapping(reference="ref", candidate="cand"), task="semantic")
    assert r.task == "semantic" and len(r.items) == 1 and r.label_kinds == []
    assert r.rejected == [RejectedRow(2, "empty reference ('ref')")]


def test_read_table_csv_with_quoted_fields_and_line_numbers():
    data = (
        "key,article,summary,score,label,sent_labels\n"
        f'1,"{ARTICLE}","It is in Paris, France.",0.9,yes,"[1]"\n'
        '2,"An article\nover two lines.",It has two lines.,1,TRUE,\n'
        "3,An article.,,0.5,no,\n"
        "4,An article.,A summary.,abc,no,\n"
        "5,An article.,A summary.,0.1,nope,\n"
        "6,An article.,A summary.,0.1,0,[1\n"
        "7,too,many,fields,0,1,extra\n"
        "8,An article.,A summary.,,consistent,\n"
    ).encode()
    r = ds.read_table(data, "csv", MAPPING)
    assert [(it.external_id, it.human_score, it.human_label) for it in r.items] == [
        ("1", 0.9, 1),
        ("2", 1.0, 1),
        ("8", None, 1),
    ]
    assert r.items[1].reference == "An article\nover two lines."
    assert r.items[0].sentence_labels == [{"0": 1}]
    why = reasons(r)
    # The second record spans lines 3-4, so the rows after it start one line later.
    assert sorted(why) == [5, 6, 7, 8, 9]
    assert why[5] == "empty candidate ('summary')"
    assert why[6] == "score 'abc' is not a number"
    assert "'nope' is not 0/1" in why[7]
    assert why[8] == "sentence labels are not a JSON list"
    assert why[9] == "has 7 fields but the header has 6"


def test_read_table_checks_the_mapping_against_the_header():
    with pytest.raises(InputError, match="not in the header"):
        ds.read_table(b"a,b\nx,y\n", "csv", ColumnMapping(reference="a", candidate="c"))
    with pytest.raises(InputError, match="different columns"):
        ds.read_table(b"a,b\nx,y\n", "csv", ColumnMapping(reference="a", candidate="a"))


def test_sniff_columns_and_default_mapping():
    assert ds.sniff_columns(b"id,Article,Summary,Label\n1,a,b,1\n", "csv") == ["id", "Article", "Summary", "Label"]
    cols = ds.sniff_columns(jsonl({"doc": "a", "claim": "b"}, "bad", {"doc": "c", "claim": "d", "label": 1}), "jsonl")
    assert cols == ["doc", "claim", "label"]
    assert ds.default_mapping(["id", "Article", "Summary", "Label"]) == {
        "reference": "Article",
        "candidate": "Summary",
        "id": "id",
        "human_score": None,
        "human_label": "Label",
        "sentence_labels": None,
        "system": None,
    }
    guessed = ds.default_mapping(cols)
    assert (guessed["reference"], guessed["candidate"], guessed["human_label"]) == ("doc", "claim", "label")
    with pytest.raises(InputError, match="No JSON object"):
        ds.sniff_columns(b"[1, 2]\n", "jsonl")


def test_guess_format_and_preview():
    assert ds.guess_format("x.jsonl", jsonl(qags_row(("A.", votes("yes"))))) == "qags"
    assert ds.guess_format("x.jsonl", jsonl(summeval_row())) == "summeval"
    assert ds.guess_format("x.json", json.dumps([{"a": 1}]).encode()) == "jsonl"
    assert ds.guess_format("x.tsv", b"id\tsentence1\tsentence2\tlabel\n") == "paws"
    assert ds.guess_format("x.tsv", b"a\tb\n") == "tsv"
    assert ds.guess_format("x.csv", b"a,b\n") == "csv"
    rows = ds.preview_rows(jsonl({"a": "x" * 500, "b": [1]}, "oops"), "jsonl", width=20)
    assert rows[0] == {"row": "1", "a": "x" * 19 + "…", "b": "[1]"}
    assert rows[1]["problem"].startswith("not valid JSON")


# -- storing ---------------------------------------------------------------------------------------
def generic_file() -> bytes:
    return jsonl(
        {"id": "a", "article": ARTICLE, "summary": "The tower is in Paris. It is iron.", "label": 1, "score": 1.0},
        {"id": "b", "article": ARTICLE, "summary": "The tower is in Rome.", "label": 0, "score": 0.0},
        {"id": "c", "article": "Another article.", "summary": "Another summary.", "label": 1},
        {"id": "d", "article": "", "summary": "Rejected."},
    )


GENERIC = ColumnMapping(reference="article", candidate="summary", id="id", human_score="score", human_label="label")


def test_save_round_trip_and_dedup(engine):
    data = generic_file()
    result = ds.read_table(data, "jsonl", GENERIC)
    saved = ds.save_dataset(engine, name="tiny", data=data, result=result)
    assert saved.created and saved.id > 0

    d = ds.get_dataset(engine, saved.id)
    assert (d.name, d.format, d.task, d.n_items, d.n_rejected) == ("tiny", "jsonl", "summarization", 3, 1)
    assert d.label_kinds == ["score", "binary"] and len(d.sha256) == 64
    assert d.meta["label_counts"] == {"score": 2, "binary": 3, "sentence": 0}
    assert d.meta["n_sentences"] == 4 and d.meta["n_references"] == 2
    assert d.meta["columns"]["reference"] == "article"
    assert ds.rejected_rows(engine, saved.id) == [RejectedRow(4, "empty reference ('article')")]

    with get_session(engine) as session:
        items = session.exec(select(DatasetItem).order_by(DatasetItem.idx)).all()
        docs = session.exec(select(Document)).all()
    assert [i.external_id for i in items] == ["a", "b", "c"]
    assert items[0].sentences == ["The tower is in Paris.", "It is iron."]
    assert items[0].reference_id == items[1].reference_id != items[2].reference_id
    assert sorted(doc.text for doc in docs) == sorted([ARTICLE, "Another article."])

    frame = ds.dataset_items_frame(engine, saved.id)
    assert list(frame.columns) == ["id", "external_id", "candidate", "n_sentences", "human_score", "human_label"]
    assert frame["n_sentences"].tolist() == [2, 1, 1]
    assert frame["human_label"].tolist() == [1, 0, 1]
    assert frame["human_score"].isna().tolist() == [False, False, True]
    assert len(ds.dataset_items_frame(engine, saved.id, limit=2)) == 2

    stats = ds.dataset_stats(engine, saved.id)
    assert stats["items"] == 3 and stats["sentences"] == 4 and stats["references"] == 2 and stats["rejected"] == 1
    assert stats["score_mean"] == 0.5 and stats["share_consistent"] == pytest.approx(2 / 3)
    assert stats["label_kinds"] == ["score", "binary"] and stats["sentence_share_consistent"] is None

    again = ds.save_dataset(engine, name="tiny again", data=data, result=result)
    assert again == ds.SavedDataset(saved.id, False)
    assert [x.id for x in ds.list_datasets(engine)] == [saved.id]
    assert ds.find_existing(engine, data, "jsonl").id == saved.id
    assert ds.find_existing(engine, data, "csv") is None

    # A second dataset reuses the stored reference documents.
    other = generic_file() + b"\n"
    saved2, result2 = ds.import_file(engine, name="tiny 2", data=other, fmt="jsonl", mapping=GENERIC)
    assert saved2.created and result2 is not None and result2.n_items == 3
    with get_session(engine) as session:
        assert len(session.exec(select(Document)).all()) == 2
    assert [x.name for x in ds.list_datasets(engine)] == ["tiny 2", "tiny"]
    again2 = ds.import_file(engine, name="x", data=other, fmt="jsonl", mapping=GENERIC)
    assert again2 == (ds.SavedDataset(saved2.id, False), None)


def test_save_keeps_sentence_labels_and_caps_the_rejected_list(engine):
    items = [
        ImportedItem(
            external_id=str(i),
            reference=ARTICLE,
            candidate="It is tall. It is old.",
            sentence_labels=[{"w": 1}, {"w": i % 2}],
        )
        for i in range(4)
    ]
    rejected = [RejectedRow(i, "bad") for i in range(1500)]
    result = ImportResult(
        format="jsonl", task="summarization", items=items, rejected=rejected, label_kinds=["sentence"]
    )
    saved = ds.save_dataset(engine, name="n" * 300, data=b"whatever", result=result)
    d = ds.get_dataset(engine, saved.id)
    assert len(d.name) == 200 and d.n_rejected == 1500
    assert len(ds.rejected_rows(engine, saved.id)) == ds.MAX_STORED_REJECTED
    stats = ds.dataset_stats(engine, saved.id)
    assert stats["sentences"] == 8  # split at save time when the reader did not
    assert stats["sentences_labelled"] == 8 and stats["sentence_share_consistent"] == 6 / 8


@pytest.mark.skipif(not QAGS_FILE.is_file(), reason="the QAGS file in ../shared/data is absent")
def test_the_real_qags_file_round_trip(engine):
    data = QAGS_FILE.read_bytes()
    saved, _ = ds.import_file(engine, name="QAGS-CNN", data=data, fmt="qags")
    stats = ds.dataset_stats(engine, saved.id)
    assert (stats["items"], stats["sentences"], stats["sentences_labelled"]) == (235, 714, 714)
    assert stats["label_kinds"] == ["score", "binary", "sentence"]
    assert 0 < stats["share_consistent"] < 1 and 0 < stats["score_mean"] < 1


def test_delete_dataset_and_refusal_while_a_batch_uses_it(engine):
    data = generic_file()
    saved = ds.save_dataset(engine, name="tiny", data=data, result=ds.read_table(data, "jsonl", GENERIC))
    with get_session(engine) as session:
        batch = Batch(name="b", dataset_id=saved.id)
        session.add(batch)
        session.flush()
        batch_id = batch.id
    with pytest.raises(InputError, match="used by 1 batch"):
        ds.delete_dataset(engine, saved.id)
    assert ds.get_dataset(engine, saved.id) is not None

    with get_session(engine) as session:
        session.delete(session.get(Batch, batch_id))
    assert ds.delete_dataset(engine, saved.id) is True
    assert ds.get_dataset(engine, saved.id) is None and ds.list_datasets(engine) == []
    with get_session(engine) as session:
        assert session.exec(select(DatasetItem)).all() == []
        assert len(session.exec(select(Document)).all()) == 2  # documents stay: runs may share them
    assert ds.delete_dataset(engine, saved.id) is False
    with pytest.raises(InputError, match="does not exist"):
        ds.dataset_stats(engine, saved.id)


def test_an_import_over_the_upload_limit_is_refused_by_the_service_with_the_reason(tmp_path, monkeypatch):
    from db.engine import make_engine

    MAX_UPLOAD_MB = 20
    monkeypatch.setenv("MAX_UPLOAD_MB", str(MAX_UPLOAD_MB))  # the setting, small enough for a test file

    engine = make_engine(f"sqlite:///{tmp_path}/big.db")
    row = json.dumps({"reference": "The council met.", "candidate": "The council met.", "score": 1}) + "\n"
    big = (row * (MAX_UPLOAD_MB * 1024 * 1024 // len(row) + 2)).encode()
    mapping = ColumnMapping(reference="reference", candidate="candidate", human_score="score")
    with pytest.raises(
        InputError,
        match=rf"big\.jsonl is 20\.0 MB; the limit is {MAX_UPLOAD_MB} MB \(raise the MAX_UPLOAD_MB setting, in MB, "
        r"to allow larger files\)\. Split it",
    ):
        ds.import_file(engine, name="big.jsonl", data=big, fmt="jsonl", mapping=mapping)
    for read in (lambda: ds.read_dataset(big, "jsonl", mapping), lambda: ds.read_qags(big)):
        with pytest.raises(InputError, match=f"the limit is {MAX_UPLOAD_MB} MB"):
            read()
    assert ds.list_datasets(engine) == []
    saved, _ = ds.import_file(engine, name="small.jsonl", data=row.encode() * 3, fmt="jsonl", mapping=mapping)
    assert saved.created
    engine.dispose()


def test_a_system_column_chosen_at_import_is_stored_and_counted(engine):
    data = jsonl(
        {"id": "a1", "doc": "The cat sat.", "out": "A cat sat.", "model": "old"},
        {"id": "b1", "doc": "The cat sat.", "out": "A dog sat.", "model": "new"},
        {"id": "b2", "doc": "Rain fell.", "out": "It rained.", "model": 7},
        {"id": "c1", "doc": "Rain fell.", "out": "It snowed.", "model": ""},
        {"id": "d1", "doc": "Rain fell.", "out": "Hail.", "model": {"x": 1}},
    )
    mapping = ColumnMapping(reference="doc", candidate="out", id="id", system="model")
    saved, result = ds.import_file(engine, name="systems", data=data, fmt="jsonl", mapping=mapping)
    assert result.n_items == 4
    assert [r.row for r in result.rejected] == [5] and "is not a name" in result.rejected[0].reason
    assert ds.system_counts(engine, saved.id) == {"7": 1, "new": 1, "old": 1}
    with get_session(engine) as session:
        rows = session.exec(select(DatasetItem.external_id, DatasetItem.system).order_by(DatasetItem.idx)).all()
    assert [tuple(r) for r in rows] == [("a1", "old"), ("b1", "new"), ("b2", "7"), ("c1", None)]


def test_summeval_items_carry_their_model_as_system():
    r = ds.read_summeval(jsonl(summeval_row(), summeval_row(model_id="M8")))
    assert [it.system for it in r.items] == ["M11", "M8"]


def test_the_databases_sentence_label_totals_equal_the_majority_vote_counted_in_python(engine):
    """Labelled sentences and consistent majorities, counted by SQLite's or PostgreSQL's JSON functions, equal
    services.datasets.items.majority_vote over every list (ties, one rater, empty votes, items without labels)."""
    from db import datasets as db_datasets
    from services.datasets import store
    from tests.metaeval_seed import Item, make_dataset

    rng = np.random.default_rng(11)
    items = []
    for i in range(120):
        k = int(rng.integers(1, 5))
        labels = None
        if i % 6:
            labels = [{f"w{r}": int(rng.integers(0, 2)) for r in range(int(rng.integers(0, 4)))} for _ in range(k)]
        items.append(Item([["consistent"] * k], sentence_labels=labels))
    ds_id = make_dataset(engine, items)
    make_dataset(engine, [Item([["consistent"]], sentence_labels=[{"a": 1}])], name="other")  # not counted
    expected = (
        sum(len(it.sentence_labels or []) for it in items),
        sum(ds.majority_vote(v) for it in items for v in it.sentence_labels or []),
    )
    assert expected[1] < expected[0]
    with get_session(engine) as session:
        assert db_datasets.sentence_label_totals(session=session, dataset_id=ds_id) == expected
        assert store._label_totals(session, ds_id) == expected
    stats = ds.dataset_stats(engine, ds_id)
    assert (stats["sentences_labelled"], stats["sentence_share_consistent"]) == (expected[0], expected[1] / expected[0])
