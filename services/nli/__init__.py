"""Paper 003, zero-shot factual-inconsistency detection: paradigms (Summ-NLI, Sent-NLI, QG-QA, and the entry point
the app, batches and the CLI call), replies (the schemas asked for and the strict parsers of Figures 4-7), retrieval
(Appendix B: windows and the context retrieved for long documents) and distill (distillation datasets from batches
over labelled data, section 4).
"""
