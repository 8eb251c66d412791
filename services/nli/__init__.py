"""Paper 003, zero-shot factual-inconsistency detection: paradigms (Summ-NLI, Sent-NLI, QG-QA) and distill
(distillation datasets from batches over labelled data, section 4).
"""
